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
 * keeps part of them in host memory.
 */
import type { ServiceConfig } from "../config/schema";
import { ExtraFlag, extraFlagInteger, extraFlagValues } from "../sglang/extra-args";

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

/** How one copy of the weights is held: split over `shards` GPUs, scaled by online quantization, minus what stays in CPU memory. */
export interface WeightsPlacement {
    /** tp x pp. */
    shards: number;
    /** 0.5 with online 8-bit quantization, else 1. A checkpoint already in 8 bits is counted at half its size: an underestimate, never a refusal of what fits. */
    scale: number;
    /** `--cpu-offload-gb`: GiB of each GPU's weights kept in CPU memory. */
    offloadGiB: number;
}

export function weightsPlacement(service: Pick<ServiceConfig, "tensorParallelSize" | "extraArgs">): WeightsPlacement {
    const layout = parallelLayout(service);
    const quantization = extraFlagValues(service.extraArgs, "--quantization")?.values[0];
    return {
        shards: layout.tp * layout.pp.value,
        scale: quantization !== undefined && ONLINE_8BIT.has(quantization) ? 0.5 : 1,
        offloadGiB: extraFlagInteger(service.extraArgs, "--cpu-offload-gb")?.value ?? 0,
    };
}

const GIB = 1024 ** 3;

/** The GiB of weights each GPU holds. */
export function weightsPerGpuGiB(weightsGB: number, placement: WeightsPlacement): number {
    return Math.max(0, (weightsGB * 1e9 * placement.scale) / placement.shards / GIB - placement.offloadGiB);
}

/** What the arithmetic assumed beyond `weightsGB / shards`, for messages ("", or "; fp8 at load halves them; 4 GiB offloaded"). */
export function describePlacement(placement: WeightsPlacement): string {
    const notes: string[] = [];
    if (placement.scale !== 1) notes.push("online 8-bit quantization halves them");
    if (placement.offloadGiB > 0) notes.push(`${placement.offloadGiB} GiB per GPU offloaded to CPU memory`);
    return notes.length === 0 ? "" : ` (${notes.join(", ")})`;
}
