import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { acceptLengthFor, BASE_TOKENS_PER_SECOND, bucketOf, decodeTokensPerSecond, draftingOf, requestFigures, timingDraw } from "../../lab/sglang/speculation";

// The lab's speculative decoding (lab/sglang/speculation.ts): what its
// /generate, /server_info and decode line report, by bucket, algorithm,
// steps and drafter. Pure: no lab comes up.

describe("lab speculation model", () => {
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-drafter-"))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const MTP = {
        speculative_algorithm: "EAGLE",
        speculative_num_steps: 3,
        speculative_eagle_topk: 1,
        speculative_num_draft_tokens: 4,
        model_path: "/models/m",
    };
    const dflash = (drafter: string) => ({
        ...MTP,
        speculative_algorithm: "DFLASH",
        speculative_num_steps: 1,
        speculative_num_draft_tokens: 16,
        speculative_draft_model_path: drafter,
    });

    it("guesses the bucket: long context by length, code by what the prompt shows or asks, else prose", () => {
        assert.equal(bucketOf("x".repeat(6_000)), "long-context");
        assert.equal(bucketOf("Write a function that sorts"), "code");
        assert.equal(bucketOf("```python\nprint(1)\n```"), "code");
        assert.equal(bucketOf("Write a poem about the sea"), "prose");
    });

    it("accepts 1 + p + ... + p^k along a chain of k draft tokens, per bucket, and k + 1 when pinned at the maximum", () => {
        const d = draftingOf(MTP)!;
        assert.equal(d.chain, 3);
        assert.equal(acceptLengthFor(d, "prose", {}), 2.533, "1 + 0.7 + 0.49 + 0.343");
        assert.ok(acceptLengthFor(d, "code", {}) > acceptLengthFor(d, "prose", {}));
        assert.ok(acceptLengthFor(d, "prose", {}) > acceptLengthFor(d, "long-context", {}));
        assert.equal(acceptLengthFor(d, "code", { acceptPinnedAtMax: true }), 4);
        assert.equal(acceptLengthFor(d, "code", { collapsedTo: 1.05 }), 1.05);
        assert.equal(draftingOf({ model_path: "/models/m" }), null, "no speculation");
    });

    it("takes the drafter folder's sglang-lab.json: one accept rate or per bucket, and its step cost", () => {
        fs.writeFileSync(path.join(dir, "sglang-lab.json"), JSON.stringify({ acceptRate: { code: 0.9 }, stepCost: 0.5 }));
        const d = draftingOf(dflash(dir))!;
        assert.equal(d.chain, 15, "DFLASH's block of 16 with topk 1");
        assert.equal(d.draftPasses, 1, "DFLASH drafts its block in one pass");
        assert.equal(d.acceptRates.code, 0.9);
        assert.equal(d.acceptRates.prose, 0.7, "buckets it does not name keep the defaults");
        assert.equal(decodeTokensPerSecond(d, 3, {}), (BASE_TOKENS_PER_SECOND * 3) / 1.5);
        fs.writeFileSync(path.join(dir, "sglang-lab.json"), JSON.stringify({ acceptRate: 0.3 }));
        assert.equal(acceptLengthFor(draftingOf(dflash(dir))!, "code", {}), 1.429);
    });

    it("reports a request as SGLang does: whole verify steps, accept length = tokens / steps, latency = prefill + decode, and slows with the throughput fault", () => {
        const d = draftingOf(MTP)!;
        const f = requestFigures(d, "Write a poem", 4, 128, {});
        assert.equal(f.spec!.verifyCount, Math.round(128 / 2.533));
        assert.equal(f.spec!.acceptLength, 128 / f.spec!.verifyCount);
        assert.equal(f.spec!.proposedDrafts, f.spec!.verifyCount * 3);
        assert.equal(f.spec!.acceptedDrafts, 128 - f.spec!.verifyCount);
        const slower = requestFigures(d, "Write a poem", 4, 128, { throughputFactor: 0.8 });
        assert.ok(Math.abs(slower.decodeTokensPerSecond - f.decodeTokensPerSecond * 0.8) < 1e-9);
        assert.ok(slower.e2eLatency > f.e2eLatency);
        assert.equal(requestFigures(null, "Write a poem", 4, 120, {}).e2eLatency, 0.001 + 120 / BASE_TOKENS_PER_SECOND);
        assert.equal(requestFigures(null, "Write a poem", 4, 120, {}).spec, undefined);
    });
    it("times a fresh server's first request of a bucket with its kernels' compilation, and jitters each request, only when the faults ask", () => {
        const d = draftingOf(MTP)!;
        const plain = requestFigures(d, "Write a poem", 4, 128, {});
        assert.deepEqual(
            timingDraw({}, true, () => 0.5),
            { coldSeconds: 0, jitterFactor: 1 },
            "off unless set",
        );
        const faults = { coldKernelSeconds: 2, latencyJitter: 0.1 };
        assert.deepEqual(
            timingDraw(faults, true, () => 0.5),
            { coldSeconds: 1, jitterFactor: 1 },
        );
        assert.deepEqual(
            timingDraw(faults, false, () => 0.75),
            { coldSeconds: 0, jitterFactor: 1.05 },
        );
        const cold = requestFigures(d, "Write a poem", 4, 128, faults, { coldSeconds: 1, jitterFactor: 1.05 });
        assert.equal(cold.e2eLatency, Math.round((plain.e2eLatency * 1.05 + 1) * 1000) / 1000);
        assert.deepEqual(cold.spec, plain.spec, "the timing moves the latency, not the accept length");
    });
});
