/**
 * The fit rule with what the declared release resolves (issue 37): after
 * SGLang's own verdict accepted the server (core/sglang/verdict.ts), its
 * ServerArgs say which `--mem-fraction-static` it runs with (its own pick
 * when none is declared: 0.5.23 takes 0.704 of a 24 GB card, 0.5.11 about
 * 0.83) and how many GPUs its ranks take; the box's config.json says what
 * KTransformers' expert offload keeps in CPU memory. The config rules judge
 * a declared fraction without the box (core/box/config-rules.ts); this
 * judges what only the release and the box can say, with the arithmetic in
 * the message.
 */
import type { ReleaseVerdict, ResolvedServer, VerdictRequest } from "../sglang/verdict";
import type { BoxExpectations } from "./box-facts";
import { describePlacement, cudaVisibleCount, MoeExperts, moeExperts, WeightsPlacement } from "./gpu-fit";
import { fitSuggestion, STATIC_POOL_RESERVE_GIB, staticPoolFit } from "./config-rules";

export interface ResolvedFitInput {
    version: string;
    resolved: ResolvedServer;
    /** service.memFractionStatic, when declared (the config rules judged it already, unless the experts are offloaded). */
    declaredFraction?: number;
    /** The weights' size and where it comes from: the declared service.model.weightsGB, or the box's files. */
    weights: { gb: number; declared: boolean };
    /** How the service places its weights (core/box/gpu-fit.ts weightsPlacement); its shards are replaced by the resolved tp x pp. */
    placement: WeightsPlacement;
    /** The GPUs the unit's process is given (the box's, as the server sees them), CUDA_VISIBLE_DEVICES in the unit's environment, one GPU's memory. */
    gpus: { count: number; visible?: string; memoryMiB?: number };
    /** The model's experts, from the box's config.json. */
    moe?: MoeExperts;
}

export interface FitFailure {
    property: string;
    reason: string;
}

/** The resolved server's GPUs and memory against the box's: the refusals, each with its arithmetic (none when it fits). */
export function resolvedFitFailures(input: ResolvedFitInput): FitFailure[] {
    const { resolved: r, version } = input;
    const failures: FitFailure[] = [];
    const visible = cudaVisibleCount(input.gpus.visible, input.gpus.count);
    const needs = r.tpSize * r.ppSize * (r.dpAttention ? 1 : r.dpSize);
    const sizes = [`tp ${r.tpSize}`, ...(r.ppSize > 1 ? [`pp ${r.ppSize}`] : []), ...(r.dpSize > 1 && !r.dpAttention ? [`dp ${r.dpSize}`] : [])];
    if (needs > visible) {
        const seen =
            input.gpus.visible === undefined
                ? `the box gives the server ${input.gpus.count} GPU(s)`
                : `CUDA_VISIBLE_DEVICES="${input.gpus.visible}" leaves it ${visible} of the box's ${input.gpus.count} GPU(s)`;
        failures.push({
            property: "service.tensorParallelSize",
            reason:
                `SGLang ${version} resolves the server to ${sizes.join(" x ")} = ${needs} GPU(s), each rank on a GPU of its own, but ${seen}: ` +
                `it cannot start (torch's "invalid device ordinal"); lower the parallel sizes or give the server more GPUs.`,
        });
    }
    const judgesMemory = input.declaredFraction === undefined || input.placement.cpuExperts !== undefined;
    const memoryMiB = input.gpus.memoryMiB;
    if (!judgesMemory || memoryMiB === undefined) return failures;
    const pp = r.ppSize;
    const placement = { ...input.placement, shards: r.tpSize * pp };
    const fraction = r.memFractionStatic;
    const fit = staticPoolFit(input.weights.gb, fraction, memoryMiB, placement, input.moe);
    if (fit.fits) return failures;
    const whose = input.declaredFraction === undefined ? `SGLang ${version}'s own pick for this GPU, memFractionStatic being unset` : "memFractionStatic";
    const weights = input.weights.declared ? `service.model.weightsGB ${input.weights.gb} GB` : `the weights on the box (${input.weights.gb.toFixed(1)} GB)`;
    let suggestion = fitSuggestion(
        r.tpSize,
        pp,
        visible,
        (shards) => staticPoolFit(input.weights.gb, fraction, memoryMiB, { ...placement, shards }, input.moe).fits,
    );
    const neededFraction = Math.ceil((100 * fit.needGiB * 1024) / memoryMiB) / 100;
    if (!suggestion.startsWith("set ") && input.declaredFraction === undefined && neededFraction < 0.95) {
        suggestion = `declare memFractionStatic: ${neededFraction} or more (SGLang leaves the rest for activations and CUDA graphs), or ${suggestion}`;
    }
    failures.push({
        property: "service.tensorParallelSize",
        reason:
            `${weights} over ${sizes.slice(0, pp > 1 ? 2 : 1).join(" x ")} does not fit the static memory pool SGLang ${version} makes: each GPU needs ` +
            `${fit.needGiB.toFixed(1)} GiB (weights${describePlacement(placement, input.weights.gb, input.moe)} plus the ${STATIC_POOL_RESERVE_GIB} GiB reserve for the KV cache and Mamba state) ` +
            `but --mem-fraction-static ${fraction} (${whose}) of one ${(memoryMiB / 1024).toFixed(1)} GiB GPU is ${fit.budgetGiB.toFixed(1)} GiB: ` +
            `it cannot start ("Not enough memory. Please try to increase --mem-fraction-static."); ${suggestion}.`,
    });
    return failures;
}

/**
 * The fit of a server the release accepted, as the preview judges it: what it
 * resolved (the verdict), the request's GPUs and environment, the declared
 * weights or the box's (`box`: the refresh's facts), and the experts the
 * box's config.json gives. None when the verdict refused or resolved nothing,
 * or the weights' size is not known.
 */
export function verdictFit(
    verdict: ReleaseVerdict,
    request: VerdictRequest,
    expect: BoxExpectations,
    box: { weightsBytes?: number; configJson?: string },
): FitFailure[] {
    if (verdict.status !== "ok" || !verdict.resolved) return [];
    const gb = expect.weightsGB ?? (box.weightsBytes !== undefined ? box.weightsBytes / 1e9 : undefined);
    if (gb === undefined) return [];
    const moe = moeExperts(box.configJson ?? request.model.configJson);
    return resolvedFitFailures({
        version: request.version,
        resolved: verdict.resolved,
        ...(expect.memory.memFractionStatic !== undefined ? { declaredFraction: expect.memory.memFractionStatic } : {}),
        weights: { gb, declared: expect.weightsGB !== undefined },
        placement: expect.memory.placement ?? { shards: expect.memory.tensorParallelSize, scale: 1, offloadGiB: 0 },
        gpus: {
            count: request.gpus.count,
            ...(request.env.CUDA_VISIBLE_DEVICES !== undefined ? { visible: request.env.CUDA_VISIBLE_DEVICES } : {}),
            ...(request.gpus.memoryMiB !== undefined ? { memoryMiB: request.gpus.memoryMiB } : {}),
        },
        ...(moe ? { moe } : {}),
    });
}
