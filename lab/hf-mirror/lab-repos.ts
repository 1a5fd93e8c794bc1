// What the lab's Hugging Face mirror holds: a small model and a DFlash drafter
// for it, each a git repository with two commits (the first tagged v1), in the
// shape of a real Hub repository (.gitattributes sending *.safetensors to git
// LFS, a model card, config.json, tokenizer files, safetensors weights). The
// content is deterministic (seeded bytes, fixed commit dates), so the tests
// can compute every byte a download must have, and the commit ids are the
// same on every machine. Pure: lab/hf-mirror/git-repo.ts writes it.
import { createCipheriv, createHash } from "crypto";
import { safetensorsFile, TensorSpec, tensorBytes } from "./safetensors";

/** The Hub organisation of the lab's repositories. */
export const LAB_ORG = "sglang-lab";
export const LAB_MODEL = `${LAB_ORG}/Tiny-Qwen3`;
export const LAB_DRAFTER = `${LAB_ORG}/Tiny-Qwen3-DFlash`;

/** The patterns .gitattributes sends to git LFS (a subset of the Hub's default .gitattributes). */
export const LFS_PATTERNS = ["*.bin", "*.ckpt", "*.pt", "*.pth", "*.safetensors"];

export const GITATTRIBUTES = LFS_PATTERNS.map((p) => `${p} filter=lfs diff=lfs merge=lfs -text\n`).join("");

/** Whether .gitattributes stores the file in git LFS (each pattern is `*.ext`, matched against the base name). */
export function isLfsPath(path: string): boolean {
    const base = path.slice(path.lastIndexOf("/") + 1);
    return LFS_PATTERNS.some((p) => base.endsWith(p.slice(1)));
}

export interface LabCommit {
    message: string;
    /** Author and committer date (ISO 8601). */
    date: string;
    /** A lightweight tag on this commit. */
    tag?: string;
    /** Files this commit adds or replaces (nothing is deleted). */
    files: Record<string, Buffer>;
}

export interface LabRepo {
    /** `org/name`, as the Hub and huggingface_hub name it. */
    id: string;
    commits: LabCommit[];
}

/** `length` bytes that depend only on `seed` (AES-256-CTR's keystream under the seed's sha256). */
export function seededBytes(seed: string, length: number): Buffer {
    const key = createHash("sha256").update(seed).digest();
    return createCipheriv("aes-256-ctr", key, Buffer.alloc(16)).update(Buffer.alloc(length));
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value, null, 2) + "\n");

const HIDDEN = 384;
const INTERMEDIATE = 1024;
const HEADS = 6;
const KV_HEADS = 2;
const HEAD_DIM = 64;
const VOCAB = 12288;

function modelConfig(maxPositions: number): Record<string, unknown> {
    return {
        architectures: ["Qwen3ForCausalLM"],
        model_type: "qwen3",
        hidden_size: HIDDEN,
        intermediate_size: INTERMEDIATE,
        num_hidden_layers: 2,
        num_attention_heads: HEADS,
        num_key_value_heads: KV_HEADS,
        head_dim: HEAD_DIM,
        hidden_act: "silu",
        attention_bias: false,
        max_position_embeddings: maxPositions,
        rms_norm_eps: 1e-6,
        rope_theta: 1000000,
        vocab_size: VOCAB,
        tie_word_embeddings: true,
        bos_token_id: 1,
        eos_token_id: 2,
        torch_dtype: "bfloat16",
        transformers_version: "4.57.1",
    };
}

function drafterConfig(): Record<string, unknown> {
    return {
        architectures: ["DFlashDraftModel"],
        model_type: "qwen3",
        hidden_size: HIDDEN,
        intermediate_size: INTERMEDIATE,
        num_hidden_layers: 1,
        num_attention_heads: HEADS,
        num_key_value_heads: KV_HEADS,
        head_dim: HEAD_DIM,
        max_position_embeddings: 8192,
        rms_norm_eps: 1e-6,
        rope_theta: 1000000,
        vocab_size: VOCAB,
        tie_word_embeddings: false,
        torch_dtype: "bfloat16",
        block_size: 16,
        num_target_layers: 2,
        dflash_config: { block_size: 16, target_layer_ids: [0, 1], mask_token_id: VOCAB - 1 },
        transformers_version: "4.57.1",
    };
}

/** One Qwen3 decoder layer's tensors. */
function layerTensors(prefix: string): TensorSpec[] {
    const t = (name: string, shape: number[]): TensorSpec => ({ name: `${prefix}.${name}`, dtype: "BF16", shape });
    return [
        t("input_layernorm.weight", [HIDDEN]),
        t("self_attn.q_proj.weight", [HEADS * HEAD_DIM, HIDDEN]),
        t("self_attn.k_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
        t("self_attn.v_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
        t("self_attn.o_proj.weight", [HIDDEN, HEADS * HEAD_DIM]),
        t("self_attn.q_norm.weight", [HEAD_DIM]),
        t("self_attn.k_norm.weight", [HEAD_DIM]),
        t("post_attention_layernorm.weight", [HIDDEN]),
        t("mlp.gate_proj.weight", [INTERMEDIATE, HIDDEN]),
        t("mlp.up_proj.weight", [INTERMEDIATE, HIDDEN]),
        t("mlp.down_proj.weight", [HIDDEN, INTERMEDIATE]),
    ];
}

/** A safetensors file whose tensors' bytes are seeded by `seed` and the tensor's name. */
const weights = (tensors: TensorSpec[], seed: string) => safetensorsFile(tensors, (name, length) => seededBytes(`${seed}/${name}`, length));

/** The model's two shards: the embedding and layer 0 (about 12 MiB: more than huggingface_hub's 10 MiB download chunk), then layer 1 and the norm. */
const MODEL_SHARDS: TensorSpec[][] = [
    [{ name: "model.embed_tokens.weight", dtype: "BF16", shape: [VOCAB, HIDDEN] }, ...layerTensors("model.layers.0")],
    [...layerTensors("model.layers.1"), { name: "model.norm.weight", dtype: "BF16", shape: [HIDDEN] }],
];

const shardName = (i: number) => `model-${String(i + 1).padStart(5, "0")}-of-${String(MODEL_SHARDS.length).padStart(5, "0")}.safetensors`;

function modelIndex(): Buffer {
    const weightMap: Record<string, string> = {};
    let total = 0;
    MODEL_SHARDS.forEach((tensors, i) => {
        for (const t of tensors) {
            weightMap[t.name] = shardName(i);
            total += tensorBytes(t);
        }
    });
    const sorted = Object.fromEntries(Object.entries(weightMap).sort(([a], [b]) => (a < b ? -1 : 1)));
    return json({ metadata: { total_size: total }, weight_map: sorted });
}

/** A word-level tokenizer in the tokenizers library's tokenizer.json format, with Qwen's special tokens. */
function tokenizerFiles(): Record<string, Buffer> {
    const special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[UNK]"];
    const words = ["hello", "world", "the", "lab", "serves", "a", "tiny", "model", "2", "+", "=", "4", "."];
    const vocab = Object.fromEntries([...special, ...words].map((w, i) => [w, i]));
    return {
        "tokenizer.json": json({
            version: "1.0",
            truncation: null,
            padding: null,
            added_tokens: special.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
            normalizer: null,
            pre_tokenizer: { type: "Whitespace" },
            post_processor: null,
            decoder: null,
            model: { type: "WordLevel", vocab, unk_token: "[UNK]" },
        }),
        "tokenizer_config.json": json({
            tokenizer_class: "PreTrainedTokenizerFast",
            bos_token: null,
            eos_token: "<|im_end|>",
            pad_token: "<|endoftext|>",
            unk_token: "[UNK]",
            model_max_length: 4096,
        }),
    };
}

const card = (front: string, body: string) => Buffer.from(`---\n${front}---\n\n${body}\n`);

/** The lab's repositories: the model, then its drafter. */
export function labRepos(): LabRepo[] {
    const model: LabRepo = {
        id: LAB_MODEL,
        commits: [
            {
                message: "Tiny-Qwen3: first weights",
                date: "2026-01-05T10:00:00Z",
                tag: "v1",
                files: {
                    ".gitattributes": Buffer.from(GITATTRIBUTES),
                    "README.md": card(
                        "license: apache-2.0\nlibrary_name: transformers\n",
                        "# Tiny-Qwen3\n\nThe sglang-serve lab's model: seeded bytes in safetensors framing, not trained weights.",
                    ),
                    "config.json": json(modelConfig(4096)),
                    "generation_config.json": json({ bos_token_id: 1, eos_token_id: 2, do_sample: true, temperature: 0.6, top_p: 0.95, top_k: 20 }),
                    ...tokenizerFiles(),
                    "model.safetensors.index.json": modelIndex(),
                    [shardName(0)]: weights(MODEL_SHARDS[0]!, `${LAB_MODEL}@1`),
                    [shardName(1)]: weights(MODEL_SHARDS[1]!, `${LAB_MODEL}@1`),
                },
            },
            {
                // The first shard is unchanged: both revisions share its blob.
                message: "Tiny-Qwen3: 8k context, layer 1 retrained",
                date: "2026-02-10T10:00:00Z",
                files: {
                    "config.json": json(modelConfig(8192)),
                    [shardName(1)]: weights(MODEL_SHARDS[1]!, `${LAB_MODEL}@2`),
                },
            },
        ],
    };
    const drafterTensors: TensorSpec[] = [
        { name: "fc.weight", dtype: "BF16", shape: [HIDDEN, 2 * HIDDEN] },
        { name: "hidden_norm.weight", dtype: "BF16", shape: [HIDDEN] },
        ...layerTensors("layers.0"),
        { name: "norm.weight", dtype: "BF16", shape: [HIDDEN] },
    ];
    const drafter: LabRepo = {
        id: LAB_DRAFTER,
        commits: [
            {
                message: "Tiny-Qwen3-DFlash: first drafter",
                date: "2026-01-06T10:00:00Z",
                tag: "v1",
                files: {
                    ".gitattributes": Buffer.from(GITATTRIBUTES),
                    "README.md": card(
                        `license: apache-2.0\nbase_model: ${LAB_MODEL}\n`,
                        "# Tiny-Qwen3-DFlash\n\nA DFlash drafter for Tiny-Qwen3 (lab stand-in).",
                    ),
                    "config.json": json(drafterConfig()),
                    ...tokenizerFiles(),
                    "model.safetensors": weights(drafterTensors, `${LAB_DRAFTER}@1`),
                },
            },
            {
                message: "Tiny-Qwen3-DFlash: retrained on longer drafts",
                date: "2026-02-11T10:00:00Z",
                files: {
                    "README.md": card(
                        `license: apache-2.0\nbase_model: ${LAB_MODEL}\n`,
                        "# Tiny-Qwen3-DFlash\n\nA DFlash drafter for Tiny-Qwen3 (lab stand-in), retrained.",
                    ),
                    "model.safetensors": weights(drafterTensors, `${LAB_DRAFTER}@2`),
                },
            },
        ],
    };
    return [model, drafter];
}

/** Every file of `repo` as of commit `index` (0 = the first), path -> bytes. */
export function filesAt(repo: LabRepo, index: number): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (const c of repo.commits.slice(0, index + 1)) for (const [p, b] of Object.entries(c.files)) out.set(p, b);
    return new Map([...out].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The git LFS pointer a file is committed as (git-lfs spec v1). */
export function lfsPointer(bytes: Buffer): Buffer {
    const oid = createHash("sha256").update(bytes).digest("hex");
    return Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${oid}\nsize ${bytes.length}\n`);
}

/** git's blob id of these bytes (sha1 of `blob <size>\0` and the bytes): what the Hub reports as a file's oid / blobId. */
export function gitBlobId(bytes: Buffer): string {
    return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}
