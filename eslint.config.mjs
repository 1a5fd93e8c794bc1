// `npm run lint` (part of `npm test`): eslint's recommended rules and
// typescript-eslint's, over every TypeScript file the project runs.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Node's modules that reach outside the process: files, processes, the network.
const IO_MODULES = ["fs", "fs/promises", "child_process", "net", "tls", "http", "https", "dgram", "dns", "os"].flatMap((m) => [m, `node:${m}`]);

/** An import of a project folder a layer must not reach, by relative path (`../providers/x`, `../../components/y`). */
function layerPattern(folders, why) {
    return { regex: `^(\\.\\.?/)+(${folders.join("|")})(/|$)`, message: `${why}: it imports none of ${folders.join(", ")}/.` };
}

export default tseslint.config(
    { ignores: ["node_modules/", "dist/", ".lab/", ".pulumi-state/", "bench-results/", "tools/", "**/*.js", "**/*.mjs"] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        rules: {
            // `const { a: _a, ...rest } = x` drops a field on purpose.
            "@typescript-eslint/no-unused-vars": ["error", { ignoreRestSiblings: true, argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
        },
    },
    // The layers (docs/design.md): core/ is pure logic (no I/O, nothing above
    // it), remote/ does the I/O under the providers, providers/ sit under the
    // components. An import running back up, or I/O in core/, fails the lint.
    {
        files: ["core/**/*.ts"],
        rules: {
            "no-restricted-imports": [
                "error",
                {
                    paths: IO_MODULES.map((name) => ({ name, message: "core/ is pure logic: do the I/O in remote/ (or the caller) and pass the result in." })),
                    patterns: [layerPattern(["providers", "components", "remote", "lab", "scripts", "bench", "gate"], "core/ is the bottom layer")],
                },
            ],
        },
    },
    {
        files: ["remote/**/*.ts"],
        rules: { "no-restricted-imports": ["error", { patterns: [layerPattern(["providers", "components"], "remote/ is under the providers")] }] },
    },
    {
        files: ["providers/**/*.ts"],
        rules: { "no-restricted-imports": ["error", { patterns: [layerPattern(["components"], "providers/ are under the components")] }] },
    },
    {
        // ts-hook.cjs and providers/plugin-bundle.cjs: plain CommonJS, loaded by node before any TypeScript.
        files: ["**/*.cjs"],
        languageOptions: {
            sourceType: "commonjs",
            globals: { require: "readonly", module: "readonly", process: "readonly", __dirname: "readonly", __filename: "readonly" },
        },
        rules: { "@typescript-eslint/no-require-imports": "off" },
    },
);
