import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ENVIRONMENT_DIFFERS, parseUnitReadOutput, renderUnitReadScript, UnitReadRequest } from "../../core/unit/unit-read";

const M = "sglang-serve-0123456789abcdef";
const qwen: UnitReadRequest = {
    unitName: "sglang-qwen.service",
    unitPath: "/etc/systemd/system/sglang-qwen.service",
    environmentFilePath: "/etc/sglang/qwen.env",
    expectedEnvironmentHash: "9f2c" + "0".repeat(60),
};
const gone: UnitReadRequest = {
    unitName: "sglang-old.service",
    unitPath: "/etc/systemd/system/sglang-old.service",
    environmentFilePath: "/etc/sglang/old.env",
    expectedEnvironmentHash: "",
};

describe("reading several units in one command", () => {
    it("renders one systemctl show for all units, quoting every path and name", () => {
        const script = renderUnitReadScript([qwen, { ...gone, unitPath: "/tmp/it's here" }], M);
        assert.equal(script.match(/systemctl show/g)?.length, 1);
        assert.match(script, /systemctl show -p Id -p ActiveState -p UnitFileState sglang-qwen.service sglang-old.service /);
        assert.match(script, /cat '\/tmp\/it'\\''s here'/);
    });

    it("splits the output per unit: file text exactly, env hash, state from the unit's own show block", () => {
        const output = [
            `${M} unit 0`,
            "[Unit]\nDescription=x\n", // the file's own final newline, then the echo's
            `${M} env 0`,
            "9f2c" + "0".repeat(60),
            `${M} unit 1`,
            "__absent__",
            `${M} env 1`,
            "none",
            `${M} show`,
            "Id=sglang-qwen.service\nActiveState=active\nUnitFileState=enabled\n\nId=sglang-old.service\nActiveState=inactive\nUnitFileState=\n",
        ].join("\n");
        const [a, b] = parseUnitReadOutput(output, [qwen, gone], M);
        assert.deepEqual(a, { unitText: "[Unit]\nDescription=x\n", environmentFileHash: "9f2c" + "0".repeat(60), activeState: "active", enabled: true });
        assert.deepEqual(b, { unitText: null, environmentFileHash: "", activeState: "inactive", enabled: false });
    });

    it("keeps a unit file without a final newline apart from the next section", () => {
        const output = `${M} unit 0\n[Unit]\n${M} env 0\nnone\n${M} show\n`;
        const [a] = parseUnitReadOutput(output, [qwen], M);
        assert.equal(a!.unitText, "[Unit]");
        assert.equal(a!.activeState, "unknown", "no systemctl block: unknown, not a guess");
    });

    it("gives no digest of an EnvironmentFile: the box says the declared one is there (its expected hash again), another one, or none", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "unit-read-"));
        try {
            const env = path.join(dir, "qwen.env");
            const declared = "# sglang-serve: secrets\nSGLANG_API_KEY=weak-but-16-chars\n";
            const hash = (text: string) => createHash("sha256").update(text).digest("hex");
            const read = (expectedEnvironmentHash: string) => {
                const unit = { ...qwen, unitPath: path.join(dir, "qwen.service"), environmentFilePath: env, expectedEnvironmentHash };
                const r = spawnSync("sh", ["-c", renderUnitReadScript([unit], M)], { encoding: "utf8" });
                assert.equal(r.status, 0, r.stderr);
                return { stdout: r.stdout, result: parseUnitReadOutput(r.stdout, [unit], M)[0]!.environmentFileHash };
            };
            assert.equal(read(hash(declared)).result, "", "no file");
            fs.writeFileSync(env, declared, { mode: 0o600 });
            assert.equal(read(hash(declared)).result, hash(declared));
            const other = read(hash("# sglang-serve: secrets\nSGLANG_API_KEY=another-key-of-16\n"));
            assert.equal(other.result, ENVIRONMENT_DIFFERS);
            assert.doesNotMatch(other.stdout, new RegExp(hash(declared)), "the file's own digest");
            const none = read("");
            assert.equal(none.result, ENVIRONMENT_DIFFERS, "a file where the stack declares none");
            assert.doesNotMatch(none.stdout, new RegExp(hash(declared)));
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("refuses an expected hash that is not sha256 hex (it goes into the script)", () => {
        assert.throws(
            () => renderUnitReadScript([{ ...qwen, expectedEnvironmentHash: "$(id)" }], M),
            /expected EnvironmentFile hash of sglang-qwen\.service is not sha256 hex/,
        );
    });

    it("fails when the script did not run to its end", () => {
        assert.throws(() => parseUnitReadOutput(`${M} unit 0\n[Unit]\n`, [qwen], M), /no systemctl section/);
    });
});
