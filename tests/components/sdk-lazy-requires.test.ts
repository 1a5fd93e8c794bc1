import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

const repo = path.resolve(__dirname, "../..");

/** Runs `script` in a fresh node (no mocha, no SDK loaded yet) with scripts/sdk-lazy-requires.cjs preloaded, as scripts/pulumi.sh starts the plugin. */
function runPreloaded(script: string): Record<string, unknown> {
    const r = spawnSync(process.execPath, ["--require", path.join(repo, "scripts", "sdk-lazy-requires.cjs"), "-e", script], {
        cwd: repo,
        encoding: "utf8",
        timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

const LOADED = `const loaded = (name) => Object.keys(require.cache).some((f) => f.includes("/node_modules/" + name + "/"));`;

describe("scripts/sdk-lazy-requires.cjs (what the engine's node processes load)", () => {
    it("loads the SDK's runtime without the TypeScript compiler", () => {
        const r = runPreloaded(`${LOADED}
            require("@pulumi/pulumi/runtime");
            console.log(JSON.stringify({ typescript: loaded("typescript") }));`);
        assert.deepEqual(r, { typescript: false });
    });

    it("gives a caller that uses them the real modules on first use", () => {
        const r = runPreloaded(`${LOADED}
            const pulumi = require("@pulumi/pulumi");
            const ts = require("@pulumi/pulumi/typescript-shim");
            const before = loaded("typescript");
            pulumi.runtime.serializeFunction(() => 40 + 2).then((f) => {
                console.log(JSON.stringify({
                    before,
                    after: loaded("typescript"),
                    version: ts.version === require("typescript").version,
                    serialized: f.text.includes("40 + 2"),
                }));
            });`);
        assert.deepEqual(r, { before: false, after: true, version: true, serialized: true });
    });

    it("loads the plugin's SDK, the program's `cmd/run` and zod without the Automation API, the package reader, the tracing exporter or zod's translations", () => {
        const r = runPreloaded(`${LOADED}
            const inFolder = (f) => Object.keys(require.cache).some((k) => k.includes("/node_modules/" + f));
            require("@pulumi/pulumi");
            require("@pulumi/pulumi/runtime");
            require("@pulumi/pulumi/cmd/run/tracing");
            require("zod");
            console.log(JSON.stringify({
                automation: inFolder("@pulumi/pulumi/automation/"),
                packageReader: loaded("normalize-package-data"),
                tracing: ["resources", "sdk-trace-base", "exporter-zipkin", "instrumentation-grpc", "sdk-trace-node", "instrumentation"].some((p) => loaded("@opentelemetry/" + p)),
                zodLocales: Object.keys(require.cache).filter((k) => k.includes("/node_modules/zod/v4/locales/")).map((k) => k.split("/").pop()),
            }));`);
        assert.deepEqual(r, { automation: false, packageReader: false, tracing: false, zodLocales: ["en.cjs"] });
    });

    it("gives `--tracing`, the Automation API, the package reader and z.locales the real modules when they are used", () => {
        const r = runPreloaded(`${LOADED}
            const pulumi = require("@pulumi/pulumi");
            const z = require("zod");
            const tracing = require("@pulumi/pulumi/cmd/run/tracing");
            tracing.start("http://127.0.0.1:9/api/v2/spans");
            const span = tracing.newSpan("x");
            const recording = span.isRecording();
            span.end();
            // The closure serializer reads each package's package.json through normalize-package-data: js-yaml's lists argparse.
            require("@pulumi/pulumi/runtime/closure/codePaths").computeCodePaths({ extraIncludePackages: ["js-yaml"] }).then((paths) => {
            console.log(JSON.stringify({
                recording,
                sdkTraceNode: loaded("@opentelemetry/sdk-trace-node"),
                workspace: typeof pulumi.automation.LocalWorkspace.create,
                french: z.string().safeParse(1, { error: z.locales.fr().localeError }).error.issues[0].message.startsWith("Entrée invalide"),
                english: z.string().safeParse(1).error.issues[0].message,
                packageReader: loaded("normalize-package-data"),
                jsYamlDependency: [...paths.keys()].some((p) => p.endsWith("/argparse")),
            }));
            });`);
        assert.deepEqual(r, {
            recording: true,
            sdkTraceNode: true,
            workspace: "function",
            french: true,
            english: "Invalid input: expected string, received number",
            packageReader: true,
            jsYamlDependency: true,
        });
    });
});
