/**
 * How a server spreads over GPUs and how much of its weights each GPU holds,
 * from the typed config and the SGLang flags in extraArgs that change it
 * (pure). After SGLang's own placement (0.5.11,
 * managers/data_parallel_controller.py): without DP attention every data
 * parallel rank is a tensor x pipeline group of its own (`base_gpu_id +=
 * tp_size * pp_size`), so a server takes tp x pp x dp GPUs; with
 * `--enable-dp-attention` the ranks share the tp x pp GPUs. The weights are
 * split over tp x pp GPUs; online quantization of a 16-bit checkpoint
 * shrinks them, and `--cpu-offload-gb` (GiB per GPU, utils/offloader.py)
 * and KTransformers' expert offload (`--kt-*`) keep part of them in host
 * memory.
 */
import type { ServiceConfig } from "../config/schema";
import { ExtraFlag, extraFlagInteger, extraFlagValues, shownExtraFlag } from "../sglang/extra-args";

/**
 * How many of `gpus` GPUs (numbered 0..gpus-1, as the server sees them) a
 * CUDA_VISIBLE_DEVICES value leaves a process, as the CUDA runtime reads it
 * (the CUDA C Programming Guide, "CUDA Environment Variables"): entries are
 * comma-separated; an index names one GPU if it is below `gpus`; a UUID
 * (`GPU-...`) or MIG instance (`MIG-...`) is taken as one GPU (which one the
 * config cannot say); the first entry that names no GPU, or names one a
 * second time, ends the list (the GPUs before it stay visible). Unset: all.
 */
export function cudaVisibleCount(visible: string | undefined, gpus: number): number {
    if (visible === undefined) return gpus;
    const seen = new Set<string>();
    for (const raw of visible.split(",")) {
        const entry = raw.trim();
        const index = /^\d+$/.test(entry) ? Number(entry) : undefined;
        const names = index !== undefined ? index < gpus : /^(GPU|MIG)-[0-9A-Za-z-]+/.test(entry);
        const key = index !== undefined ? String(index) : entry;
        if (!names || seen.has(key)) break;
        seen.add(key);
    }
    return Math.min(seen.size, gpus);
}

/** A parallel size and where extraArgs gives it (absent: SGLang's default 1). */
export interface GivenSize {
    value: number;
    given?: ExtraFlag;
}

export interface ParallelLayout {
    tp: number;
    pp: GivenSize;
    dp: GivenSize;
    /** `--enable-dp-attention`: the data parallel ranks share the tensor parallel GPUs. */
    dpAttention: boolean;
    /** The GPUs the server takes. */
    gpus: number;
}

/** The last of a flag's spellings that extraArgs gives (argparse keeps the last occurrence). */
function sizeFlag(extraArgs: readonly string[], spellings: readonly string[]): GivenSize {
    const given = spellings
        .map((flag) => extraFlagInteger(extraArgs, flag))
        .filter((g) => g !== undefined)
        .sort((a, b) => a.given.index - b.given.index)
        .pop();
    return given ? { value: given.value, given: given.given } : { value: 1 };
}

export function parallelLayout(service: Pick<ServiceConfig, "tensorParallelSize" | "extraArgs">): ParallelLayout {
    const tp = service.tensorParallelSize;
    const pp = sizeFlag(service.extraArgs, ["--pp-size", "--pipeline-parallel-size"]);
    const dp = sizeFlag(service.extraArgs, ["--dp-size", "--data-parallel-size"]);
    const dpAttention = extraFlagValues(service.extraArgs, "--enable-dp-attention") !== undefined;
    return { tp, pp, dp, dpAttention, gpus: tp * pp.value * (dpAttention ? 1 : dp.value) };
}

/** `tp 2 x dp 2 = 4 GPUs`: the product, naming only the sizes that are not 1. */
export function describeLayout(layout: ParallelLayout): string {
    const parts = [`tp ${layout.tp}`];
    if (layout.pp.value !== 1) parts.push(`pp ${layout.pp.value}`);
    if (layout.dp.value !== 1 && !layout.dpAttention) parts.push(`dp ${layout.dp.value}`);
    return parts.length === 1 ? `tp ${layout.tp} = ${layout.gpus} GPU(s)` : `${parts.join(" x ")} = ${layout.gpus} GPUs`;
}

/**
 * Online quantization methods that turn a 16-bit checkpoint into 8-bit
 * weights at load. The others in SGLang's --quantization choices (awq, gptq,
 * modelopt, ...) read a checkpoint already quantized, whose size on disk is
 * what the GPUs hold.
 */
const ONLINE_8BIT = new Set(["fp8", "w8a8_fp8", "w8a8_int8"]);

/**
 * KTransformers' expert offload (`--kt-weight-path` with
 * `--kt-num-gpu-experts N`, layers/moe/kt_ep_wrapper.py): each MoE layer
 * keeps experts 0..N-1 on the GPU (`num_local_experts = num_gpu_experts`)
 * and runs the others on the CPU from the AMX weights. What share of the
 * weights the experts are comes from the model's config.json (moeExperts).
 */
export interface CpuExperts {
    /** `--kt-num-gpu-experts`: experts per MoE layer on the GPU. */
    onGpu: number;
    given: ExtraFlag;
}

/** How one copy of the weights is held: split over `shards` GPUs, scaled by online quantization, minus what stays in CPU memory. */
export interface WeightsPlacement {
    /** tp x pp. */
    shards: number;
    /** 0.5 with online 8-bit quantization, else 1. A checkpoint already in 8 bits is counted at half its size: an underestimate, never a refusal of what fits. */
    scale: number;
    /** `--cpu-offload-gb`: GiB of each GPU's weights kept in CPU memory (utils/offloader.py: OffloaderV1's max bytes, per rank). */
    offloadGiB: number;
    /** KTransformers' expert offload, when extraArgs gives both its weights and its GPU experts. */
    cpuExperts?: CpuExperts;
}

export function weightsPlacement(service: Pick<ServiceConfig, "tensorParallelSize" | "extraArgs">): WeightsPlacement {
    const layout = parallelLayout(service);
    const quantization = extraFlagValues(service.extraArgs, "--quantization")?.values[0];
    const ktWeights = extraFlagValues(service.extraArgs, "--kt-weight-path");
    const ktGpuExperts = extraFlagInteger(service.extraArgs, "--kt-num-gpu-experts");
    return {
        shards: layout.tp * layout.pp.value,
        scale: quantization !== undefined && ONLINE_8BIT.has(quantization) ? 0.5 : 1,
        offloadGiB: extraFlagInteger(service.extraArgs, "--cpu-offload-gb")?.value ?? 0,
        ...(ktWeights && ktGpuExperts ? { cpuExperts: { onGpu: ktGpuExperts.value, given: ktGpuExperts.given } } : {}),
    };
}

/**
 * A mixture-of-experts model's routed experts, from its config.json (the
 * text model's, `text_config`, for a vision model): how many MoE layers,
 * experts per layer, and what share of the parameters they are. The share
 * is the experts' gate, up and down projections over an estimate of every
 * parameter (embeddings, attention, dense and shared MLPs, routers), the
 * names as Qwen, DeepSeek and Mixtral configs give them; undefined for a
 * dense model or a config without those fields.
 */
export interface MoeExperts {
    layers: number;
    experts: number;
    /** The routed experts' parameters over all the model's (0..1). */
    share: number;
}

export function moeExperts(configJson: string | undefined): MoeExperts | undefined {
    let parsed: unknown;
    try {
        parsed = JSON.parse(configJson ?? "");
    } catch {
        return undefined;
    }
    const top = parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
    const c = (top.text_config !== null && typeof top.text_config === "object" ? top.text_config : top) as Record<string, unknown>;
    const num = (...keys: string[]): number | undefined => keys.map((k) => c[k]).find((v): v is number => typeof v === "number" && v >= 0);
    const hidden = num("hidden_size");
    const layers = num("num_hidden_layers");
    const experts = num("num_experts", "n_routed_experts", "num_local_experts");
    const expertInter = num("moe_intermediate_size", "intermediate_size");
    if (!hidden || !layers || !experts || experts < 2 || !expertInter) return undefined;
    const heads = num("num_attention_heads") ?? 1;
    const kvHeads = num("num_key_value_heads") ?? heads;
    const headDim = num("head_dim") ?? hidden / heads;
    const denseInter = num("intermediate_size") ?? expertInter;
    const step = num("decoder_sparse_step") ?? 1;
    const firstDense = num("first_k_dense_replace") ?? 0;
    const mlpOnly = Array.isArray(c.mlp_only_layers) ? (c.mlp_only_layers as unknown[]) : [];
    let moeLayers = 0;
    for (let i = 0; i < layers; i++) if (i >= firstDense && (i + 1) % Math.max(1, step) === 0 && !mlpOnly.includes(i)) moeLayers++;
    if (moeLayers === 0) return undefined;
    const shared = (num("n_shared_experts") ?? 0) * expertInter + (num("shared_expert_intermediate_size") ?? 0);
    const routed = moeLayers * experts * 3 * hidden * expertInter;
    const vocab = num("vocab_size") ?? 0;
    const total =
        vocab * hidden * (c.tie_word_embeddings === true ? 1 : 2) +
        layers * hidden * headDim * (2 * heads + 2 * kvHeads) +
        routed +
        moeLayers * (3 * hidden * shared + hidden * experts) +
        (layers - moeLayers) * 3 * hidden * denseInter;
    return { layers: moeLayers, experts, share: routed / total };
}

/** The share of the weights KTransformers keeps in CPU memory: the experts past the GPU's, of every MoE layer. */
function cpuExpertsShare(placement: WeightsPlacement, moe: MoeExperts | undefined): number {
    if (!placement.cpuExperts || !moe) return 0;
    return moe.share * Math.max(0, 1 - placement.cpuExperts.onGpu / moe.experts);
}

const GIB = 1024 ** 3;

/** The GiB of weights each GPU holds (`moe`: the model's experts, for KTransformers' offload; without it, none is taken off). */
export function weightsPerGpuGiB(weightsGB: number, placement: WeightsPlacement, moe?: MoeExperts): number {
    const onGpu = weightsGB * 1e9 * placement.scale * (1 - cpuExpertsShare(placement, moe));
    return Math.max(0, onGpu / placement.shards / GIB - placement.offloadGiB);
}

/** What the arithmetic assumed beyond `weightsGB / shards`, for messages ("", or " (online 8-bit quantization halves them, 4 GiB per GPU offloaded ...)"). */
export function describePlacement(placement: WeightsPlacement, weightsGB?: number, moe?: MoeExperts): string {
    const notes: string[] = [];
    if (placement.scale !== 1) notes.push("online 8-bit quantization halves them");
    const kt = placement.cpuExperts;
    if (kt && moe && weightsGB !== undefined) {
        const cpu = cpuExpertsShare(placement, moe);
        notes.push(
            `the routed experts are ${(100 * moe.share).toFixed(1)}% of them (config.json: ${moe.layers} MoE layers x ${moe.experts} experts) ` +
                `and ${shownExtraFlag(kt.given)} keeps ${Math.min(kt.onGpu, moe.experts)} of each layer's ${moe.experts} on the GPU, ` +
                `so ${(weightsGB * placement.scale * cpu).toFixed(1)} GB of them stay in CPU memory (KTransformers)`,
        );
    }
    if (placement.offloadGiB > 0) notes.push(`${placement.offloadGiB} GiB per GPU offloaded to CPU memory (--cpu-offload-gb)`);
    return notes.length === 0 ? "" : ` (${notes.join(", ")})`;
}
