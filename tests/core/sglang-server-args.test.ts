import assert from "node:assert/strict";
import { SGLANG_RELEASES, sglangRelease } from "../../core/sglang/releases";
import { judgeServerArgs, mambaRadixSupport, ServerArgsInput } from "../../core/sglang/server-args";

const release = (v: string) => SGLANG_RELEASES.find((r) => r.version === v)!;
const nextn = { algorithm: "NEXTN", numSteps: 1, eagleTopk: 1, numDraftTokens: 2 };
const input = (over: Partial<ServerArgsInput>): ServerArgsInput => ({
    architecture: "Qwen3_5ForConditionalGeneration",
    disableRadixCache: false,
    environment: {},
    ...over,
});

// The branches the differential test (tests/lab/releases/differential.ts) cannot reach with a
// re-labelled Qwen config.json, and the release table's own fallbacks.
describe("SGLang's ServerArgs, transcribed: the branches outside the differential test", () => {
    for (const architecture of ["KimiLinearForCausalLM", "BailingMoeV2_5ForCausalLM"]) {
        it(`serves ${architecture} without a radix cache, whatever the strategy (2138-2142)`, () => {
            const verdict = judgeServerArgs(release("0.5.11"), input({ architecture, speculative: nextn, mambaSchedulerStrategy: "no_buffer" }));
            assert.deepEqual(verdict.refusals, []);
            assert.equal(verdict.runs.disableRadixCache, true);
            assert.ok(verdict.warnings.includes(`Disabling Radix Cache for ${architecture} as it is not yet supported.`));
        });
    }

    it("treats GraniteMoeHybrid as hybrid only with mamba layers", () => {
        assert.equal(mambaRadixSupport("GraniteMoeHybridForCausalLM", ["attention", "mamba"]), "no-extra-buffer");
        assert.equal(mambaRadixSupport("GraniteMoeHybridForCausalLM", ["attention", "attention"]), "not-hybrid");
        assert.deepEqual(
            judgeServerArgs(release("0.5.11"), input({ architecture: "GraniteMoeHybridForCausalLM", layerTypes: ["attention"], speculative: nextn })).refusals,
            [],
        );
    });

    it("reports the argparse refusal and the radix refusal together, as SGLang would one after the other", () => {
        const keys = judgeServerArgs(release("0.5.11"), input({ speculative: { algorithm: "MTP" }, mambaSchedulerStrategy: "no_buffer" })).refusals.map(
            (r) => r.key,
        );
        assert.deepEqual(keys, ["service.speculative.algorithm", "service.mambaSchedulerStrategy"]);
    });

    it("applies the nearest older release's facts to a release not in the table, and says so", () => {
        const r = sglangRelease("0.5.12");
        assert.equal(r.verified, false);
        assert.equal(r.specV2Default, true);
        assert.ok(r.speculativeAlgorithms.includes("DFLASH"));
        assert.equal(sglangRelease("0.5.11").verified, true);
    });
});
