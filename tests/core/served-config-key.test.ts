import * as assert from "node:assert/strict";
import fc from "fast-check";
import { launchDigest, servedConfigKey, type ServedConfig } from "../../core/serving/served-config-key";

const NEXTN: ServedConfig = {
    sglangVersion: "0.5.11",
    drafter: null,
    command: ["/opt/sglang/venv/bin/python", "-m", "sglang.launch_server"],
    flags: { "--model-path": "/models/Qwen3.6-27B", "--speculative-algorithm": "NEXTN", "--speculative-num-steps": "1" },
    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
};

describe("the key of a served config (core/serving/served-config-key.ts)", () => {
    it("is the same for the same release, drafter, command, flags and environment, whatever order the maps were written in", () => {
        const reordered: ServedConfig = {
            ...NEXTN,
            flags: { "--speculative-num-steps": "1", "--speculative-algorithm": "NEXTN", "--model-path": "/models/Qwen3.6-27B" },
        };
        assert.equal(servedConfigKey(reordered), servedConfigKey(NEXTN));
        assert.equal(servedConfigKey(structuredClone(NEXTN)), servedConfigKey(NEXTN));
        assert.match(servedConfigKey(NEXTN), /^[0-9a-f]{16}$/);
    });

    it("differs with another SGLang release, another drafter digest, a changed flag or a changed environment variable", () => {
        const key = servedConfigKey(NEXTN);
        const others: ServedConfig[] = [
            { ...NEXTN, sglangVersion: "0.5.23" },
            { ...NEXTN, drafter: "a".repeat(32) },
            { ...NEXTN, flags: { ...NEXTN.flags, "--speculative-num-steps": "3" } },
            { ...NEXTN, flags: { ...NEXTN.flags, "--disable-radix-cache": "true" } },
            { ...NEXTN, command: ["/opt/sglang/venv-0.5.23/bin/python", "-m", "sglang.launch_server"] },
            { ...NEXTN, environment: { ...NEXTN.environment, CUDA_VISIBLE_DEVICES: "0,1" } },
        ];
        for (const other of others) assert.notEqual(servedConfigKey(other), key, JSON.stringify(other));
        assert.notEqual(servedConfigKey({ ...NEXTN, drafter: "b".repeat(32) }), servedConfigKey({ ...NEXTN, drafter: "a".repeat(32) }));
    });

    it("does not mistake a flag's value for an environment variable or the command for a flag", () => {
        const flagsOnly = launchDigest({ command: [], flags: { A: "1" }, environment: {} });
        assert.notEqual(launchDigest({ command: [], flags: {}, environment: { A: "1" } }), flagsOnly);
        assert.notEqual(launchDigest({ command: ["A", "1"], flags: {}, environment: {} }), flagsOnly);
    });

    it("tells any two different flag maps apart", () => {
        const flags = fc.dictionary(fc.constantFrom("--a", "--b", "--c", "--d"), fc.string({ maxLength: 4 }));
        fc.assert(
            fc.property(flags, flags, (a, b) => {
                const same = JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
                return (servedConfigKey({ ...NEXTN, flags: a }) === servedConfigKey({ ...NEXTN, flags: b })) === same;
            }),
        );
    });
});
