// After stopping SGLang, its GPU memory is freed only when every rank's
// process has exited; starting the new server before that fails with "Not
// enough memory". This waits, bounded, until the server's own GPUs are really
// free: a process of a neighbour on other GPUs of the box does not hold it
// (compute apps are matched to the GPUs by UUID).

import { newMarker, parseBatch, renderBatch } from "../core/batch-script";
import { COMPUTE_APPS_QUERY, ComputeApp, GPU_MEMORY_QUERY, GpuMemory, parseComputeAppsCsv, parseGpuMemoryCsv } from "../core/box/nvidia-smi";
import { RemoteRunner } from "./remote-host";

export interface GpuReleaseOptions {
    /** GPU indices as nvidia-smi sees them on the remote (inside the container). */
    gpus: number[];
    /** A GPU counts as free below this much used memory. e.g. 1024 (the driver's own use stays below). */
    thresholdMiB: number;
    timeoutMs: number;
    /** Default 1000. */
    pollIntervalMs?: number;
    onProgress?: (message: string) => void;
    /** Progress at most this often. Default 5000. */
    progressEveryMs?: number;
    now?: () => number;
    sleep?: (ms: number) => Promise<void>;
}

export type GpuReleaseResult = { ok: true; elapsedMs: number; gpus: GpuMemory[] } | { ok: false; reason: string; gpus: GpuMemory[]; apps: ComputeApp[] };

// Both queries in one command (core/batch-script.ts framing); `|| exit` keeps
// nvidia-smi's own exit status (and its error text) when the driver does not answer.
function queryScript(marker: string): string {
    return renderBatch(
        [
            { name: "memory", script: `nvidia-smi --query-gpu=${GPU_MEMORY_QUERY} --format=csv,noheader,nounits || exit $?` },
            { name: "apps", script: `nvidia-smi --query-compute-apps=${COMPUTE_APPS_QUERY} --format=csv,noheader,nounits` },
        ],
        marker,
    );
}

/** Parse the two-query output. Exported for tests. */
export function parseGpuQueryOutput(stdout: string, marker: string): { gpus: GpuMemory[]; apps: ComputeApp[] } {
    const sections = parseBatch(stdout, marker);
    const memory = sections.get("memory");
    const apps = sections.get("apps");
    if (memory === undefined || apps === undefined)
        throw new Error(`unexpected nvidia-smi output: ${stdout.replaceAll(`${marker} `, "").trim().slice(0, 300)}`);
    return { gpus: parseGpuMemoryCsv(memory), apps: parseComputeAppsCsv(apps) };
}

function describe(gpus: GpuMemory[], apps: ComputeApp[]): string {
    const mem = gpus.map((g) => `GPU ${g.index}: ${g.memoryUsedMiB} MiB used`).join(", ");
    const procs = apps.length === 0 ? "no compute processes" : `compute processes ${apps.map((a) => a.pid).join(", ")}`;
    return `${mem}; ${procs}`;
}

export async function waitForGpuMemoryReleased(remote: RemoteRunner, o: GpuReleaseOptions): Promise<GpuReleaseResult> {
    const now = o.now ?? Date.now;
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const pollIntervalMs = o.pollIntervalMs ?? 1000;
    const progressEveryMs = o.progressEveryMs ?? 5000;
    const start = now();
    let lastProgressAt = -Infinity;
    let last: { gpus: GpuMemory[]; apps: ComputeApp[] } = { gpus: [], apps: [] };

    for (;;) {
        const pollStart = now();
        const marker = newMarker();
        const r = await remote.run(["sh", "-c", queryScript(marker)]);
        if (r.code !== 0) {
            // nvidia-smi missing or the driver not answering will not fix itself by waiting.
            return {
                ok: false,
                reason: `nvidia-smi failed on ${remote.describe()} (exit ${r.code}): ${(r.stderr.trim() || (parseBatch(r.stdout, marker).get("memory") ?? r.stdout).trim()).slice(0, 300)}`,
                ...last,
            };
        }
        try {
            last = parseGpuQueryOutput(r.stdout, marker);
        } catch (e) {
            return { ok: false, reason: `${remote.describe()}: ${(e as Error).message}`, ...last };
        }
        const watched = last.gpus.filter((g) => o.gpus.includes(g.index));
        const missing = o.gpus.filter((i) => !last.gpus.some((g) => g.index === i));
        if (missing.length > 0) {
            return {
                ok: false,
                reason: `GPU(s) ${missing.join(", ")} not visible on ${remote.describe()} (nvidia-smi shows ${last.gpus.map((g) => g.index).join(", ") || "none"})`,
                ...last,
            };
        }
        // A process left on one of these GPUs still holds memory there; one on another GPU is a neighbour's.
        const uuids = new Set(watched.map((g) => g.uuid));
        const holding = last.apps.filter((a) => uuids.has(a.gpuUuid));
        const busy = watched.filter((g) => g.memoryUsedMiB >= o.thresholdMiB);
        const elapsedMs = now() - start;
        if (busy.length === 0 && holding.length === 0) return { ok: true, elapsedMs, gpus: watched };
        if (elapsedMs > o.timeoutMs) {
            return {
                ok: false,
                reason:
                    `GPU memory not released within ${Math.round(o.timeoutMs / 1000)} s on ${remote.describe()} ` +
                    `(threshold ${o.thresholdMiB} MiB): ${describe(watched, holding)}`,
                ...last,
            };
        }
        if (now() - lastProgressAt >= progressEveryMs) {
            o.onProgress?.(`[gpu] waiting for GPU memory to be released — ${Math.round(elapsedMs / 1000)} s: ${describe(watched, holding)}`);
            lastProgressAt = now();
        }
        await sleep(Math.max(0, pollIntervalMs - (now() - pollStart)));
    }
}
