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

describe("scripts/sdk-lazy-requires.cjs (what the dynamic-provider plugin loads)", () => {
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
});
