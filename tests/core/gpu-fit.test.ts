import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { cudaVisibleCount, moeExperts, weightsPerGpuGiB, weightsPlacement } from "../../core/box/gpu-fit";
import { resolvedFitFailures, ResolvedFitInput } from "../../core/box/resolved-fit";
import { fixtureModelPath } from "../../lab/sglang/fixtures";

// The fit rule's arithmetic (core/box/gpu-fit.ts) and the fit with what the release resolves (core/box/resolved-fit.ts), issue 37.

const QWEN3_30B_A3B = fs.readFileSync(path.join(fixtureModelPath("qwen3-30b-a3b"), "config.json"), "utf8");
const QWEN36_27B = fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8");
const RTX_4090 = 24564;

describe("the fit rule's arithmetic (core/box/gpu-fit.ts)", () => {
    it("reads CUDA_VISIBLE_DEVICES as the CUDA runtime does: up to the first entry that names no GPU, or one named twice", () => {
        assert.equal(cudaVisibleCount(undefined, 2), 2);
        assert.equal(cudaVisibleCount("0", 2), 1);
        assert.equal(cudaVisibleCount("1,0", 2), 2);
        assert.equal(cudaVisibleCount("0,2,1", 2), 1);
        assert.equal(cudaVisibleCount("1,1", 2), 1);
        assert.equal(cudaVisibleCount("", 2), 0);
        assert.equal(cudaVisibleCount("-1", 2), 0);
        assert.equal(cudaVisibleCount("GPU-1a6b,GPU-2b7c", 4), 2);
    });

    it("reads a MoE model's routed experts from config.json: Qwen3-30B-A3B's are 95% of its 30.5 B parameters; a dense model has none", () => {
        const moe = moeExperts(QWEN3_30B_A3B)!;
        assert.equal(moe.layers, 48);
        assert.equal(moe.experts, 128);
        // 48 layers x 128 experts x 3 x 2048 x 768 = 28.99 B of about 30.5 B (Qwen's model card: 30.5 B in total).
        assert.ok(moe.share > 0.94 && moe.share < 0.96, String(moe.share));
        assert.equal(moeExperts(QWEN36_27B), undefined);
        assert.equal(moeExperts("not json"), undefined);
        // A vision model's text config, and DeepSeek's names (n_routed_experts, first_k_dense_replace).
        const deepseek = {
            text_config: { hidden_size: 7168, num_hidden_layers: 61, n_routed_experts: 256, moe_intermediate_size: 2048, first_k_dense_replace: 3 },
        };
        assert.equal(moeExperts(JSON.stringify(deepseek))!.layers, 58);
    });

    it("takes KTransformers' CPU experts off each GPU's weights only with both --kt-weight-path and --kt-num-gpu-experts", () => {
        const moe = moeExperts(QWEN3_30B_A3B);
        const placement = (extraArgs: string[]) => weightsPlacement({ tensorParallelSize: 1, extraArgs });
        const full = weightsPerGpuGiB(61, placement([]), moe);
        assert.equal(full.toFixed(1), "56.8");
        const kt = placement(["--kt-weight-path", "/models/q3-amx", "--kt-num-gpu-experts", "8"]);
        // 61 GB x (1 - 0.95 x 120/128) = 61 x 0.11: about 6.6 GB on the GPU.
        assert.ok(weightsPerGpuGiB(61, kt, moe) < 7, String(weightsPerGpuGiB(61, kt, moe)));
        assert.equal(weightsPerGpuGiB(61, kt, undefined), full, "without config.json nothing is taken off");
        assert.equal(weightsPerGpuGiB(61, placement(["--kt-num-gpu-experts", "8"]), moe), full, "no KTransformers weights: every expert on the GPU");
        assert.equal(weightsPerGpuGiB(61, placement(["--cpu-offload-gb", "40"]), moe).toFixed(1), "16.8");
    });
});

describe("the fit with what the release resolves (core/box/resolved-fit.ts)", () => {
    const input = (edit: Partial<ResolvedFitInput> = {}): ResolvedFitInput => ({
        version: "0.5.23",
        resolved: { memFractionStatic: 0.704, tpSize: 1, ppSize: 1, dpSize: 1, dpAttention: false },
        weights: { gb: 18, declared: true },
        placement: { shards: 1, scale: 1, offloadGiB: 0 },
        gpus: { count: 1, memoryMiB: RTX_4090 },
        ...edit,
    });

    it("refuses an 18 GB model on a 24 GB card at the fraction 0.5.23 picks (0.704), with the arithmetic and a fraction that fits", () => {
        const [failure, ...more] = resolvedFitFailures(input());
        assert.deepEqual(more, []);
        assert.equal(failure!.property, "service.tensorParallelSize");
        assert.equal(
            failure!.reason,
            "service.model.weightsGB 18 GB over tp 1 does not fit the static memory pool SGLang 0.5.23 makes: each GPU needs 18.8 GiB " +
                "(weights plus the 2 GiB reserve for the KV cache and Mamba state) but --mem-fraction-static 0.704 (SGLang 0.5.23's own pick for this GPU, " +
                'memFractionStatic being unset) of one 24.0 GiB GPU is 16.9 GiB: it cannot start ("Not enough memory. Please try to increase --mem-fraction-static."); ' +
                "declare memFractionStatic: 0.79 or more (SGLang leaves the rest for activations and CUDA graphs), or use a smaller or quantized model, or GPUs with more memory.",
        );
        // What 0.5.11 picks on the same card (0.833) holds it.
        assert.deepEqual(resolvedFitFailures(input({ version: "0.5.11", resolved: { ...input().resolved, memFractionStatic: 0.833 } })), []);
    });

    it("leaves a declared fraction to the config rules, which judged it, unless experts are offloaded", () => {
        assert.deepEqual(resolvedFitFailures(input({ declaredFraction: 0.704 })), []);
    });

    it("suggests the tensor parallel size that fits when the box has the GPUs", () => {
        const [failure] = resolvedFitFailures(input({ weights: { gb: 30, declared: false }, gpus: { count: 2, memoryMiB: RTX_4090 } }));
        assert.match(failure!.reason, /^the weights on the box \(30\.0 GB\) over tp 1 does not fit .*; set tensorParallelSize: 2\.$/);
    });

    it("accepts a 61 GB MoE on a 24 GB card with KTransformers keeping its experts on the CPU, and says what it took off", () => {
        const moe = moeExperts(QWEN3_30B_A3B)!;
        const placement = weightsPlacement({ tensorParallelSize: 1, extraArgs: ["--kt-weight-path", "/models/q3-amx", "--kt-num-gpu-experts", "8"] });
        assert.deepEqual(resolvedFitFailures(input({ weights: { gb: 61, declared: true }, placement, moe })), []);
        // With every expert on the GPU it is refused, naming the offload's arithmetic.
        const all = weightsPlacement({ tensorParallelSize: 1, extraArgs: ["--kt-weight-path", "/models/q3-amx", "--kt-num-gpu-experts", "128"] });
        const [failure] = resolvedFitFailures(input({ weights: { gb: 61, declared: true }, placement: all, moe, declaredFraction: 0.9 }));
        assert.match(
            failure!.reason,
            /the routed experts are 95\.\d% of them \(config\.json: 48 MoE layers x 128 experts\) and --kt-num-gpu-experts 128 keeps 128 of each layer's 128 on the GPU, so 0\.0 GB of them stay in CPU memory/,
        );
        assert.match(failure!.reason, /--mem-fraction-static 0\.704 \(memFractionStatic\)/);
    });

    it("refuses the ranks the release resolves past the GPUs CUDA_VISIBLE_DEVICES leaves", () => {
        const resolved = { memFractionStatic: 0.8, tpSize: 2, ppSize: 1, dpSize: 1, dpAttention: false };
        const [failure] = resolvedFitFailures(input({ resolved, declaredFraction: 0.8, gpus: { count: 2, visible: "1", memoryMiB: RTX_4090 } }));
        assert.equal(
            failure!.reason,
            'SGLang 0.5.23 resolves the server to tp 2 = 2 GPU(s), each rank on a GPU of its own, but CUDA_VISIBLE_DEVICES="1" leaves it 1 of the box\'s 2 GPU(s): ' +
                'it cannot start (torch\'s "invalid device ordinal"); lower the parallel sizes or give the server more GPUs.',
        );
        assert.deepEqual(resolvedFitFailures(input({ resolved, declaredFraction: 0.8, gpus: { count: 2, memoryMiB: RTX_4090 } })), []);
    });
});
