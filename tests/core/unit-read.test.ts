import * as assert from "node:assert/strict";
import { parseUnitReadOutput, renderUnitReadScript, UnitReadRequest } from "../../core/unit-read";

const M = "sglang-serve-0123456789abcdef";
const qwen: UnitReadRequest = {
    unitName: "sglang-qwen.service",
    unitPath: "/etc/systemd/system/sglang-qwen.service",
    environmentFilePath: "/etc/sglang/qwen.env",
};
const gone: UnitReadRequest = {
    unitName: "sglang-old.service",
    unitPath: "/etc/systemd/system/sglang-old.service",
    environmentFilePath: "/etc/sglang/old.env",
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

    it("fails when the script did not run to its end", () => {
        assert.throws(() => parseUnitReadOutput(`${M} unit 0\n[Unit]\n`, [qwen], M), /no systemctl section/);
    });
});
