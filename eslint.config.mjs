// `npm run lint` (part of `npm test`): eslint's recommended rules and
// typescript-eslint's, over every TypeScript file the project runs.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

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
    {
        // ts-hook.cjs: plain CommonJS, loaded by node before any TypeScript.
        files: ["**/*.cjs"],
        languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "readonly" } },
        rules: { "@typescript-eslint/no-require-imports": "off" },
    },
);
