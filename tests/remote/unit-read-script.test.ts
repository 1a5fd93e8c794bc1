import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseUnitReadOutput, renderUnitReadScript } from "../../core/unit/unit-read";
import { Coalescer } from "../../remote/coalesce";

describe("the unit read script under a real sh", () => {
    let dir: string;
    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-unit-read-"));
        fs.writeFileSync(path.join(dir, "a.service"), "[Service]\nExecStart=/bin/true\n");
        fs.writeFileSync(path.join(dir, "b.service"), "[Service]"); // no final newline
        fs.writeFileSync(path.join(dir, "a.env"), "SGLANG_API_KEY=k\n");
        // A systemctl that answers `show` for several units as systemd does: blocks separated by a blank line.
        fs.writeFileSync(
            path.join(dir, "systemctl"),
            `#!/bin/sh\nshift 7\nfirst=1\nfor u in "$@"; do [ $first = 1 ] || echo; first=0; echo "Id=$u"; case $u in a.service) echo ActiveState=active; echo UnitFileState=enabled;; *) echo ActiveState=failed; echo UnitFileState=disabled;; esac; done\n`,
            { mode: 0o755 },
        );
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("reads every unit's file, env hash and state in one run", () => {
        const hash = createHash("sha256").update("SGLANG_API_KEY=k\n").digest("hex");
        const units = ["a", "b", "c"].map((n) => ({
            unitName: `${n}.service`,
            unitPath: path.join(dir, `${n}.service`),
            environmentFilePath: path.join(dir, `${n}.env`),
            expectedEnvironmentHash: n === "a" ? hash : "",
        }));
        const marker = "sglang-serve-feedfacefeedface";
        const out = execFileSync("sh", ["-c", renderUnitReadScript(units, marker)], {
            encoding: "utf8",
            env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
        });
        const [a, b, c] = parseUnitReadOutput(out, units, marker);
        assert.deepEqual(a, { unitText: "[Service]\nExecStart=/bin/true\n", environmentFileHash: hash, activeState: "active", enabled: true });
        assert.deepEqual(b, { unitText: "[Service]", environmentFileHash: "", activeState: "failed", enabled: false });
        assert.equal(c!.unitText, null);
    });
});

describe("Coalescer", () => {
    it("serves requests that arrive together for one key with one call, in order, and keeps keys apart", async () => {
        const calls: Array<[string, number[]]> = [];
        const c = new Coalescer<number, number>(5, async (key, reqs) => {
            calls.push([key, reqs]);
            return reqs.map((r) => r * 10);
        });
        const results = await Promise.all([c.request("box1", 1), c.request("box1", 2), c.request("box2", 3), c.request("box1", 4)]);
        assert.deepEqual(results, [10, 20, 30, 40]);
        assert.deepEqual(calls.sort(), [
            ["box1", [1, 2, 4]],
            ["box2", [3]],
        ]);
    });

    it("fails every request of a call that fails, with its error", async () => {
        const c = new Coalescer<number, number>(5, async () => {
            throw new Error("pct exec 129: container is not running");
        });
        const results = await Promise.allSettled([c.request("box", 1), c.request("box", 2)]);
        assert.deepEqual(
            results.map((r) => r.status),
            ["rejected", "rejected"],
        );
        for (const r of results) assert.match(String((r as PromiseRejectedResult).reason), /container is not running/);
    });
});
