/**
 * The config rules about a box and what a server needs of it: the topology
 * (direct or `pct exec`), the container's GPUs, each server's GPU count and
 * whether its weights fit the static memory pool (core/box/gpu-fit.ts).
 */
import { HostConfig, ServiceConfig } from "../config/schema";
import { shownExtraFlag } from "../sglang/extra-args";
import {
    cudaVisibleCount,
    describeLayout,
    describePlacement,
    MoeExperts,
    parallelLayout,
    WeightsPlacement,
    weightsPerGpuGiB,
    weightsPlacement,
} from "./gpu-fit";
import { Findings } from "../config/findings";
import { BoxInput } from "../config/rule-input";

export const GIB = 1024 ** 3;

const MIB = 1024 ** 2;

/**
 * Room the static pool (`--mem-fraction-static` of each GPU) must keep after
 * the weights, for the KV cache and the Mamba/GDN state pools SGLang carves
 * out of the same budget. SGLang aborts at startup ("Not enough memory ...
 * increase --mem-fraction-static") when too little is left; 2 GiB is a floor
 * that lets a server start with a small cache, not a performance target.
 * Activations and CUDA graphs live outside the static pool (the remaining
 * 1 - fraction), so they are not counted here.
 */
export const STATIC_POOL_RESERVE_GIB = 2;

export function topologyRule(box: BoxInput, f: Findings): void {
    const { host } = box;
    if (!host) return;
    if (host.topology === "pct-exec" && !box.containerGiven) {
        f.issue(
            "container",
            undefined,
            "container is required when host.topology is pct-exec: declare the LXC container (vmid, hostname, gpus) that `pct exec` runs the server in.",
        );
    }
    if (host.topology === "direct" && box.containerGiven) {
        f.issue(
            "container",
            "(set)",
            "container must be absent when host.topology is direct (commands go straight to host.address): remove sglang-serve:container, or set host.topology: pct-exec.",
        );
    }
}

/** container.gpus name existing host GPUs, once each; the GPUs the box's servers can use (undefined when not known). */
export function containerGpusRule(box: BoxInput, f: Findings): number | undefined {
    const { host, container } = box;
    if (!host) return undefined;
    if (container) {
        const seen = new Set<number>();
        container.gpus.forEach((index, i) => {
            const path = `container.gpus[${i}]`;
            if (index >= host.gpus.count) {
                f.issue(
                    path,
                    index,
                    `${path} is GPU ${index} but host.gpus.count is ${host.gpus.count} (indices 0..${host.gpus.count - 1}): pass through an existing GPU.`,
                );
            }
            if (seen.has(index)) f.issue(path, index, `${path} lists GPU ${index} twice: remove the duplicate.`);
            seen.add(index);
        });
    }
    return host.topology === "pct-exec" ? container?.gpus.length : host.gpus.count;
}

/** What the box gives its servers, in words, for the GPU rules' messages. */
function boxGpusText(host: HostConfig, usable: number): string {
    return host.topology === "pct-exec"
        ? `container.gpus passes ${usable} GPU(s) to the container (numbered 0..${usable - 1} inside)`
        : `host.gpus.count is ${usable}`;
}

/**
 * The GPUs the server's process sees: service.gpus, else the box's narrowed
 * by a CUDA_VISIBLE_DEVICES in service.environment (core/box/gpu-fit.ts
 * cudaVisibleCount; the config rules refuse the variable beside
 * service.gpus), else the box's. `where` says so for messages, `fix` how to
 * give it more.
 */
export function serverGpus(box: BoxInput, service: ServiceConfig, usable: number): { count: number; where: string; fix: string; keys: string[] } {
    const boxGpus = boxGpusText(box.host!, usable);
    if (service.gpus) {
        return {
            count: service.gpus.length,
            where: `service.gpus gives the server ${service.gpus.length} GPU(s)`,
            fix: "list more GPUs in service.gpus",
            keys: [],
        };
    }
    const visible = service.environment[VISIBLE_ENV];
    if (visible !== undefined) {
        const count = cudaVisibleCount(visible, usable);
        return {
            count,
            where: `service.environment.${VISIBLE_ENV} is "${visible}", which leaves the server ${count} GPU(s) (${boxGpus})`,
            fix: `list more GPUs in service.environment.${VISIBLE_ENV} (or give the server its GPUs with service.gpus instead)`,
            keys: [`service.environment.${VISIBLE_ENV}`],
        };
    }
    return { count: usable, where: boxGpus, fix: "pass more GPUs through", keys: [] };
}

const VISIBLE_ENV = "CUDA_VISIBLE_DEVICES";

/** The server's GPUs exist on the box, once each, and hold its parallel layout. */
export function gpuCountRule(box: BoxInput, service: ServiceConfig, usable: number | undefined, f: Findings): void {
    const { host } = box;
    if (!host || usable === undefined) return;
    const boxGpus = boxGpusText(host, usable);
    const seen = new Set<number>();
    service.gpus?.forEach((index, i) => {
        const path = `service.gpus[${i}]`;
        if (index >= usable) {
            f.issue(path, index, `${path} is GPU ${index} but ${boxGpus}: use one of 0..${usable - 1}.`, ["host.gpus", "container.gpus"]);
        }
        if (seen.has(index)) f.issue(path, index, `${path} lists GPU ${index} twice: remove the duplicate.`);
        seen.add(index);
    });
    const { count, where, fix, keys } = serverGpus(box, service, usable);
    const layout = parallelLayout(service);
    if (service.tensorParallelSize > count) {
        f.issue(
            "service.tensorParallelSize",
            service.tensorParallelSize,
            `service.tensorParallelSize is ${service.tensorParallelSize} but ${where}: lower tensorParallelSize or ${fix}.`,
            ["host.gpus", "container.gpus", "service.gpus", ...keys],
        );
    } else if (layout.gpus > count) {
        // The pipeline or data parallel size in extraArgs multiplies the GPUs: SGLang gives each rank GPUs of its own.
        const given = [layout.dp, layout.pp].find((size) => size.value > 1 && size.given)?.given;
        const key = given ? `service.extraArgs[${given.index}]` : "service.tensorParallelSize";
        f.issue(
            key,
            given ? shownExtraFlag(given) : service.tensorParallelSize,
            `${key}: the server needs ${describeLayout(layout)} (SGLang places each data parallel rank on tp x pp GPUs of its own` +
                `${layout.dp.value > 1 ? "; --enable-dp-attention shares them instead" : ""}) but ${where}: lower the sizes or ${fix}.`,
            ["service.tensorParallelSize", "host.gpus", "container.gpus", "service.gpus", ...keys],
        );
    }
}

/**
 * Whether each GPU's share of the weights (core/box/gpu-fit.ts) plus the
 * reserve fits its static pool: `fraction` of one GPU's memory. The fraction
 * is the one the release runs with: the declared memFractionStatic, or the
 * one its ServerArgs resolves (the verdict's, core/sglang/verdict-fit.ts);
 * 1 bounds what any fraction could hold.
 */
export function staticPoolFit(
    weightsGB: number,
    fraction: number,
    memoryMiB: number,
    placement: WeightsPlacement,
    moe?: MoeExperts,
): { needGiB: number; budgetGiB: number; fits: boolean } {
    const needGiB = weightsPerGpuGiB(weightsGB, placement, moe) + STATIC_POOL_RESERVE_GIB;
    const budgetGiB = (fraction * memoryMiB * MIB) / GIB;
    return { needGiB, budgetGiB, fits: needGiB <= budgetGiB };
}

/** The smallest tensorParallelSize up to `maxGpus` (over the pipeline stages) at which `fits` holds, as a suggestion; else the other ways out. */
export function fitSuggestion(tp: number, pp: number, maxGpus: number, fits: (shards: number) => boolean): string {
    for (let candidate = tp + 1; candidate * pp <= maxGpus; candidate++) {
        if (fits(candidate * pp)) return `set tensorParallelSize: ${candidate}`;
    }
    return "use a smaller or quantized model, or GPUs with more memory";
}

/**
 * The fit of the declared weights (service.model.weightsGB), judged from the
 * config alone: with memFractionStatic, against that fraction of a GPU;
 * without it, against the whole GPU (the fraction the release picks is not
 * known until its own code resolves it: SGLang's verdict then judges with it,
 * core/sglang/verdict-fit.ts), which no fraction could hold. KTransformers'
 * expert offload needs the model's config.json to say what it takes off:
 * the verdict judges that too.
 */
export function memoryRule(box: BoxInput, service: ServiceConfig, usableGpus: number | undefined, f: Findings): void {
    const { host } = box;
    if (!host) return;
    const tp = service.tensorParallelSize;
    const weightsGB = service.model.weightsGB;
    if (weightsGB === undefined) return; // taken from the box: the service provider checks it there (core/box/box-facts.ts)
    const placement = weightsPlacement(service);
    if (placement.cpuExperts) return;
    const fraction = service.memFractionStatic ?? 1;
    const { needGiB, budgetGiB, fits } = staticPoolFit(weightsGB, fraction, host.gpus.memoryMiB, placement);
    if (fits) return;
    const gpuGiB = (host.gpus.memoryMiB / 1024).toFixed(1);
    const budget =
        service.memFractionStatic === undefined
            ? `the whole of one ${gpuGiB} GiB GPU (host.gpus.memoryMiB ${host.gpus.memoryMiB}), more than any --mem-fraction-static SGLang could pick, is ${budgetGiB.toFixed(1)} GiB`
            : `memFractionStatic ${service.memFractionStatic} of one ${gpuGiB} GiB GPU (host.gpus.memoryMiB ${host.gpus.memoryMiB}) is ${budgetGiB.toFixed(1)} GiB`;
    const pp = placement.shards / tp;
    const suggestion = fitSuggestion(
        tp,
        pp,
        serverGpus(box, service, usableGpus ?? host.gpus.count).count,
        (shards) => staticPoolFit(weightsGB, fraction, host.gpus.memoryMiB, { ...placement, shards }).fits,
    );
    const over = pp === 1 ? `tensorParallelSize ${tp}` : `tensorParallelSize ${tp} x pipeline parallel size ${pp}`;
    f.issue(
        "service.tensorParallelSize",
        tp,
        `service.model.weightsGB ${service.model.weightsGB} GB over ${over} does not fit: each GPU needs ${needGiB.toFixed(1)} GiB ` +
            `(weights${describePlacement(placement)} plus the ${STATIC_POOL_RESERVE_GIB} GiB reserve for the KV cache and Mamba state) but ${budget}: ${suggestion}.`,
        ["service.memFractionStatic", "service.model.weightsGB", "host.gpus", "container.gpus", "service.gpus"],
    );
}
