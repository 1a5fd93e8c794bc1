// The model folder the container has at /models/Qwen3.6-27B: a config.json
// with the facts the stack and the simulator read (architecture, layers, MTP
// head) and a safetensors index whose metadata.total_size gives the weight
// size (no weights: the lab never loads them).
import * as fs from "fs";
import * as path from "path";

export function writeModelDir(dir: string, weightBytes: number): void {
  fs.mkdirSync(dir, { recursive: true });
  const layerTypes = Array.from({ length: 64 }, (_, i) => ((i + 1) % 4 === 0 ? "full_attention" : "linear_attention"));
  const text = {
    model_type: "qwen3_5_text",
    hidden_size: 5120,
    intermediate_size: 17408,
    num_hidden_layers: 64,
    num_attention_heads: 24,
    num_key_value_heads: 4,
    head_dim: 256,
    layer_types: layerTypes,
    full_attention_interval: 4,
    linear_num_key_heads: 16,
    linear_num_value_heads: 48,
    linear_key_head_dim: 128,
    linear_value_head_dim: 128,
    linear_conv_kernel_dim: 4,
    attn_output_gate: true,
    mtp_num_hidden_layers: 1,
    max_position_embeddings: 262144,
    rope_theta: 10000000,
    vocab_size: 248320,
    torch_dtype: "bfloat16",
  };
  const config = {
    architectures: ["Qwen3_5ForConditionalGeneration"],
    model_type: "qwen3_5",
    text_config: text,
    vision_config: { model_type: "qwen3_5_vision", depth: 27, hidden_size: 1152 },
    num_hidden_layers: 64,
    mtp_num_hidden_layers: 1,
    max_position_embeddings: 262144,
    torch_dtype: "bfloat16",
    tie_word_embeddings: false,
    transformers_version: "4.57.0",
  };
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config, null, 2) + "\n");
  const shards = 11;
  const weightMap: Record<string, string> = {};
  for (let l = 0; l < 64; l++) weightMap[`model.language_model.layers.${l}.mlp.down_proj.weight`] = `model-${String(Math.floor((l * shards) / 64) + 1).padStart(5, "0")}-of-${String(shards).padStart(5, "0")}.safetensors`;
  fs.writeFileSync(path.join(dir, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: weightBytes }, weight_map: weightMap }, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "generation_config.json"), JSON.stringify({ do_sample: true, temperature: 0.6, top_p: 0.95, top_k: 20 }, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "LAB-README"), `Lab stand-in for Qwen3.6-27B: config and weight index only (${weightBytes} bytes of weights are simulated).\n`);
}
