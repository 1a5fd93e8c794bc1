// The model folders the container has under /models: Qwen3.6-27B with the
// real model's config.json (lab/sglang/fixtures: hybrid layer types,
// text_config, mtp_num_hidden_layers 1, the vision tower), which SGLang's own
// ServerArgs and the stack read, and a DFlash drafter for it whose config.json
// SGLang 0.5.11's DFLASH code reads for its block size (16). Safetensors
// indexes give the weights' size (metadata.total_size); there are no weights:
// the lab never loads them.
import * as fs from "fs";
import * as path from "path";
import { fixtureModelPath } from "./sglang/fixtures";

/** The drafter's folder next to the model's: /models/Qwen3.6-27B-DFlash. */
export const DRAFTER_SUFFIX = "-DFlash";

/** Bumped when the folders' content changes, so a kept lab gets the new files. */
const MARKER = "sglang-lab model folders v2";

/** The DFlash drafter's weights (5 layers of the target's width), bytes. */
export const DRAFTER_WEIGHT_BYTES = 3.46e9;

function writeIndex(dir: string, weightBytes: number, tensors: string[], shards: number): void {
    const weightMap: Record<string, string> = {};
    tensors.forEach((t, i) => {
        weightMap[t] = `model-${String(Math.floor((i * shards) / tensors.length) + 1).padStart(5, "0")}-of-${String(shards).padStart(5, "0")}.safetensors`;
    });
    fs.writeFileSync(
        path.join(dir, "model.safetensors.index.json"),
        JSON.stringify({ metadata: { total_size: weightBytes }, weight_map: weightMap }, null, 2) + "\n",
    );
}

/** A DFlash drafter's config.json: Qwen3 layers with the dflash_config SGLang 0.5.11 parses (parse_dflash_draft_config). */
export function drafterConfig(): Record<string, unknown> {
    return {
        architectures: ["DFlashDraftModel"],
        model_type: "qwen3",
        hidden_size: 5120,
        intermediate_size: 17408,
        num_hidden_layers: 5,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        head_dim: 128,
        max_position_embeddings: 262144,
        rms_norm_eps: 1e-6,
        rope_theta: 10000000,
        vocab_size: 248320,
        tie_word_embeddings: false,
        torch_dtype: "bfloat16",
        block_size: 16,
        num_target_layers: 64,
        dflash_config: { block_size: 16, target_layer_ids: [1, 16, 31, 46, 61], mask_token_id: 248070 },
        transformers_version: "4.57.1",
    };
}

/** Writes the model folder (and its drafter beside it) unless a lab kept the current ones. */
export function writeModelDir(dir: string, weightBytes: number): void {
    const readme = path.join(dir, "LAB-README");
    try {
        if (fs.readFileSync(readme, "utf8").includes(`${MARKER}, ${weightBytes} bytes`)) return;
    } catch {
        // not written yet
    }
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), path.join(dir, "config.json"));
    writeIndex(
        dir,
        weightBytes,
        Array.from({ length: 64 }, (_, l) => `model.language_model.layers.${l}.mlp.down_proj.weight`),
        11,
    );
    fs.writeFileSync(path.join(dir, "generation_config.json"), JSON.stringify({ do_sample: true, temperature: 0.6, top_p: 0.95, top_k: 20 }, null, 2) + "\n");

    const drafter = `${dir}${DRAFTER_SUFFIX}`;
    fs.mkdirSync(drafter, { recursive: true });
    fs.writeFileSync(path.join(drafter, "config.json"), JSON.stringify(drafterConfig(), null, 2) + "\n");
    writeIndex(
        drafter,
        DRAFTER_WEIGHT_BYTES,
        Array.from({ length: 5 }, (_, l) => `layers.${l}.mlp.down_proj.weight`),
        1,
    );
    fs.writeFileSync(path.join(drafter, "LAB-README"), `Lab stand-in for a DFlash drafter of Qwen3.6-27B: config and weight index only.\n`);
    fs.writeFileSync(
        readme,
        `Lab stand-in for Qwen3.6-27B: the real config.json and a weight index only (${MARKER}, ${weightBytes} bytes of weights are simulated).\n`,
    );
}
