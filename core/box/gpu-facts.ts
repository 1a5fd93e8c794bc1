/** What the stack needs to know about a GPU box, parsed from its own tools' output. */

export interface GpuFact {
    index: number;
    name: string;
    memoryMiB: number;
    uuid: string;
}

export interface GpuExpectation {
    count: number;
    name?: string;
    memoryMiB: number;
}

export interface DeviceMajors {
    nvidia: number;
    nvidiaUvm: number;
}

/**
 * Major numbers of the NVIDIA character devices from /proc/devices
 * (`195 nvidia-frontend`, `508 nvidia-uvm`): the cgroup allow lines of a
 * passthrough container must name them. Returns null when the driver is not loaded.
 */
export function parseProcDevices(text: string): DeviceMajors | null {
    let nvidia: number | undefined;
    let nvidiaUvm: number | undefined;
    let inCharacter = false;
    for (const raw of text.split("\n")) {
        const line = raw.trim();
        if (line === "Character devices:") {
            inCharacter = true;
            continue;
        }
        if (line === "Block devices:") {
            inCharacter = false;
            continue;
        }
        const m = /^(\d+)\s+(\S+)$/.exec(line);
        if (!inCharacter || !m) continue;
        const major = Number(m[1]);
        if (m[2] === "nvidia-frontend" || (m[2] === "nvidia" && nvidia === undefined)) nvidia = major;
        if (m[2] === "nvidia-uvm") nvidiaUvm = major;
    }
    return nvidia !== undefined && nvidiaUvm !== undefined ? { nvidia, nvidiaUvm } : null;
}

/** `pveversion` prints `pve-manager/8.2.4/faa83925c9641325 (running kernel: ...)`. */
export function parseProxmoxVersion(text: string): string {
    const m = /pve-manager\/(\S+?)\//.exec(text);
    return m ? m[1] : "";
}

/** Every way the GPUs found differ from what the stack expects, as sentences naming the fix. */
export function gpuExpectationProblems(expected: GpuExpectation, gpus: readonly GpuFact[]): string[] {
    const problems: string[] = [];
    if (gpus.length < expected.count) {
        problems.push(
            `expected ${expected.count} GPU(s) but nvidia-smi lists ${gpus.length}` +
                ` (${gpus.map((g) => `${g.index}: ${g.name}`).join(", ") || "none"}); ` +
                `check the driver and the passthrough, or change sglang-serve:host.gpus.count`,
        );
    }
    for (const gpu of gpus.slice(0, expected.count)) {
        if (expected.name && gpu.name !== expected.name) {
            problems.push(`GPU ${gpu.index} is "${gpu.name}", not "${expected.name}" (sglang-serve:host.gpus.name)`);
        }
        if (Math.abs(gpu.memoryMiB - expected.memoryMiB) > expected.memoryMiB * 0.02) {
            problems.push(`GPU ${gpu.index} has ${gpu.memoryMiB} MiB, not ${expected.memoryMiB} MiB (sglang-serve:host.gpus.memoryMiB)`);
        }
    }
    return problems;
}

/** The columns the GpuHost asks nvidia-smi for, in order. */
export const GPU_QUERY = "index,name,memory.total,driver_version,uuid";

/**
 * Parses `nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid
 * --format=csv,noheader,nounits`: one GPU a line, comma-and-space separated.
 */
export function parseGpuQuery(csv: string): { gpus: GpuFact[]; driverVersion: string } {
    const gpus: GpuFact[] = [];
    let driverVersion = "";
    for (const line of csv.split("\n")) {
        if (!line.trim()) continue;
        const cols = line.split(",").map((c) => c.trim());
        if (cols.length < 5 || !/^\d+$/.test(cols[0]) || !/^\d+$/.test(cols[2])) {
            throw new Error(`unexpected nvidia-smi line: ${JSON.stringify(line)}`);
        }
        gpus.push({ index: Number(cols[0]), name: cols[1], memoryMiB: Number(cols[2]), uuid: cols[4] });
        driverVersion = cols[3];
    }
    return { gpus, driverVersion };
}
