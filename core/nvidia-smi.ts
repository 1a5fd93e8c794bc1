// Parsers for `nvidia-smi --query-*=... --format=csv,noheader,nounits` output.
// Pure: the caller runs nvidia-smi (remote/gpu-release.ts).

export interface GpuMemory {
    index: number;
    memoryUsedMiB: number;
}

export interface ComputeApp {
    pid: number;
    /** null when the driver reports "[N/A]" (common inside containers). */
    usedMemoryMiB: number | null;
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

/** Parse `--query-gpu=index,memory.used --format=csv,noheader,nounits`. */
export function parseGpuMemoryCsv(text: string): GpuMemory[] {
    return parseNvidiaSmiCsv(text, 2).map(([index, used]) => ({
        index: toInt(index!, "GPU index"),
        memoryUsedMiB: toInt(used!, "memory.used"),
    }));
}

/** Parse `--query-compute-apps=pid,used_memory --format=csv,noheader,nounits`. */
export function parseComputeAppsCsv(text: string): ComputeApp[] {
    return parseNvidiaSmiCsv(text, 2).map(([pid, used]) => ({
        pid: toInt(pid!, "pid"),
        usedMemoryMiB: notAvailable(used!) ? null : toInt(used!, "used_memory"),
    }));
}
