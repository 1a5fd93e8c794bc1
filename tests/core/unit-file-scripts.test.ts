import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { keepPreviousUnitScript, NO_UNIT_TO_KEEP, restorePreviousUnitScript, UnitFiles } from "../../core/unit/file-scripts";

describe("the scripts that keep and restore the previous unit", () => {
    let dir: string;
    let current: UnitFiles;
    let kept: UnitFiles;
    beforeEach(() => {
        // A space and a quote in the directory: every path must be quoted.
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve unit's files-"));
        current = { unit: path.join(dir, "sglang-qwen.service"), environmentFile: path.join(dir, "qwen.env"), serverConfigFile: path.join(dir, "qwen.yaml") };
        kept = {
            unit: path.join(dir, "qwen.service.previous"),
            environmentFile: path.join(dir, "qwen.env.previous"),
            serverConfigFile: path.join(dir, "qwen.yaml.previous"),
        };
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const sh = (script: string) => spawnSync("sh", ["-c", script], { encoding: "utf8" });
    const read = (p: string) => (fs.existsSync(p) ? fs.readFileSync(p, "utf8") : null);

    it("quotes every path with the one quoting function", () => {
        const odd: UnitFiles = { unit: "/etc/x/it's.service", environmentFile: "/etc/x/$(reboot).env", serverConfigFile: "/etc/x/`id`.yaml" };
        for (const script of [keepPreviousUnitScript(odd, kept), restorePreviousUnitScript(odd, kept)]) {
            assert.match(script, /'\/etc\/x\/it'\\''s\.service'/);
            assert.match(script, /'\/etc\/x\/\$\(reboot\)\.env'/);
            assert.match(script, /'\/etc\/x\/`id`\.yaml'/);
        }
    });

    it("keeps the unit, its EnvironmentFile and SGLang's config file with their modes", () => {
        fs.writeFileSync(current.unit, "[Service]\nExecStart=/bin/old\n", { mode: 0o644 });
        fs.writeFileSync(current.environmentFile, "SGLANG_API_KEY=old\n", { mode: 0o600 });
        fs.writeFileSync(current.serverConfigFile, 'api-key: "old"\n', { mode: 0o600 });
        const r = sh(keepPreviousUnitScript(current, kept));
        assert.equal(r.status, 0, r.stderr);
        assert.equal(read(kept.unit), "[Service]\nExecStart=/bin/old\n");
        assert.equal(read(kept.environmentFile), "SGLANG_API_KEY=old\n");
        assert.equal(fs.statSync(kept.environmentFile).mode & 0o777, 0o600);
        assert.equal(read(kept.serverConfigFile), 'api-key: "old"\n');
        assert.equal(fs.statSync(kept.serverConfigFile).mode & 0o777, 0o600);
    });

    it("a unit without an EnvironmentFile or config file leaves no kept one from an older unit", () => {
        fs.writeFileSync(current.unit, "[Service]\n");
        fs.writeFileSync(kept.environmentFile, "SGLANG_API_KEY=older\n");
        fs.writeFileSync(kept.serverConfigFile, 'api-key: "older"\n');
        assert.equal(sh(keepPreviousUnitScript(current, kept)).status, 0);
        assert.equal(read(kept.environmentFile), null);
        assert.equal(read(kept.serverConfigFile), null);
    });

    it("says there is nothing to keep when the unit is not on the box, and changes nothing", () => {
        fs.writeFileSync(kept.unit, "[Service]\nExecStart=/bin/older\n");
        assert.equal(sh(keepPreviousUnitScript(current, kept)).status, NO_UNIT_TO_KEEP);
        assert.equal(read(kept.unit), "[Service]\nExecStart=/bin/older\n");
    });

    it("puts the kept unit and EnvironmentFile back over the new ones", () => {
        fs.writeFileSync(kept.unit, "[Service]\nExecStart=/bin/old\n");
        fs.writeFileSync(kept.environmentFile, "SGLANG_API_KEY=old\n", { mode: 0o600 });
        fs.writeFileSync(current.unit, "[Service]\nExecStart=/bin/new\n");
        fs.writeFileSync(current.environmentFile, "SGLANG_API_KEY=new\n");
        const r = sh(restorePreviousUnitScript(current, kept));
        assert.equal(r.status, 0, r.stderr);
        assert.equal(read(current.unit), "[Service]\nExecStart=/bin/old\n");
        assert.equal(read(current.environmentFile), "SGLANG_API_KEY=old\n");
        assert.equal(fs.statSync(current.environmentFile).mode & 0o777, 0o600);
    });

    it("removes the new EnvironmentFile and config file when the kept unit had none", () => {
        fs.writeFileSync(kept.unit, "[Service]\n");
        fs.writeFileSync(current.unit, "[Service]\nEnvironmentFile=/etc/sglang/qwen.env\n");
        fs.writeFileSync(current.environmentFile, "SGLANG_API_KEY=new\n");
        fs.writeFileSync(current.serverConfigFile, 'api-key: "new"\n');
        assert.equal(sh(restorePreviousUnitScript(current, kept)).status, 0);
        assert.equal(read(current.unit), "[Service]\n");
        assert.equal(read(current.environmentFile), null);
        assert.equal(read(current.serverConfigFile), null);
    });
});
