// Parsers for `nvidia-smi --query-*=... --format=csv,noheader,nounits` output.
// Pure: the caller runs nvidia-smi (remote/gpu-release.ts).

/** What `--query-gpu=` asks for the memory wait: the GPU, its UUID (what compute apps name), its used memory. */
export const GPU_MEMORY_QUERY = "index,uuid,memory.used";
/** What `--query-compute-apps=` asks for the memory wait: the process, its memory, and the GPU it holds it on. */
export const COMPUTE_APPS_QUERY = "pid,used_memory,gpu_uuid";

export interface GpuMemory {
    index: number;
    uuid: string;
    memoryUsedMiB: number;
}

export interface ComputeApp {
    pid: number;
    /** null when the driver reports "[N/A]" (common inside containers). */
    usedMemoryMiB: number | null;
    /** The GPU the process holds memory on (a process on several GPUs is one row per GPU). */
    gpuUuid: string;
}

/**
 * Rows of a `--format=csv,noheader` output: one array of trimmed fields per
 * non-empty line. nvidia-smi never quotes fields in this mode, so a comma is
 * always a separator. Throws on lines that are nvidia-smi's error prose (e.g.
 * "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
 * driver") when `columns` is given and the field count does not match.
 */
export function parseNvidiaSmiCsv(text: string, columns?: number): string[][] {
    const rows: string[][] = [];
    for (const line of text.split(/\r?\n/)) {
        if (line.trim() === "") continue;
        // "No running processes found" is printed by some versions instead of an empty list.
        if (/^No running (compute )?processes found/i.test(line.trim())) continue;
        const fields = line.split(",").map((f) => f.trim());
        if (columns !== undefined && fields.length !== columns) {
            throw new Error(`unexpected nvidia-smi output (expected ${columns} comma-separated fields): ${line.trim().slice(0, 200)}`);
        }
        rows.push(fields);
    }
    return rows;
}

function toInt(field: string, what: string): number {
    if (!/^\d+$/.test(field)) throw new Error(`unexpected ${what} in nvidia-smi output: ${JSON.stringify(field)}`);
    return Number(field);
}

const notAvailable = (f: string): boolean => /^\[?N\/A\]?$/i.test(f) || /^\[Not Supported\]$/i.test(f);

/** Parse `--query-gpu=${GPU_MEMORY_QUERY} --format=csv,noheader,nounits`. */
export function parseGpuMemoryCsv(text: string): GpuMemory[] {
    return parseNvidiaSmiCsv(text, 3).map(([index, uuid, used]) => ({
        index: toInt(index!, "GPU index"),
        uuid: uuid!,
        memoryUsedMiB: toInt(used!, "memory.used"),
    }));
}

/** Parse `--query-compute-apps=${COMPUTE_APPS_QUERY} --format=csv,noheader,nounits`. */
export function parseComputeAppsCsv(text: string): ComputeApp[] {
    return parseNvidiaSmiCsv(text, 3).map(([pid, used, gpuUuid]) => ({
        pid: toInt(pid!, "pid"),
        usedMemoryMiB: notAvailable(used!) ? null : toInt(used!, "used_memory"),
        gpuUuid: gpuUuid!,
    }));
}
