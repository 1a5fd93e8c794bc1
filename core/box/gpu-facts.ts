/** What the stack needs to know about a GPU box, parsed from its own tools' output. */

export interface GpuFact {
    index: number;
    name: string;
    memoryMiB: number;
    uuid: string;
    /** nvidia-smi's compute_cap (`8.6`, `9.0`); absent in states written before it was read. */
    computeCapability?: string;
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

/**
 * The columns the GpuHost asks nvidia-smi for, in order. compute_cap (the
 * CUDA compute capability, `8.6`, `9.0`; nvidia-smi has it since driver
 * 510) goes to SGLang's own verdict, whose checks of Hopper- or
 * Blackwell-only backends read it (core/sglang/verdict.ts).
 */
export const GPU_QUERY = "index,name,memory.total,driver_version,uuid,compute_cap";

/** A compute capability as nvidia-smi prints it (`major.minor`); anything else (`[N/A]`, an unknown-input placeholder) is not one. */
export const COMPUTE_CAPABILITY = /^\d{1,2}\.\d{1,2}$/;

/**
 * Parses `nvidia-smi --query-gpu=${GPU_QUERY} --format=csv,noheader,nounits`:
 * one GPU a line, comma-and-space separated (nvidia-smi never quotes fields
 * in this mode; a GPU's name has no comma).
 */
export function parseGpuQuery(csv: string): { gpus: GpuFact[]; driverVersion: string } {
    const gpus: GpuFact[] = [];
    let driverVersion = "";
    for (const line of csv.split("\n")) {
        if (!line.trim()) continue;
        const cols = line.split(",").map((c) => c.trim());
        if (cols.length !== 6 || !/^\d+$/.test(cols[0]) || !/^\d+$/.test(cols[2])) {
            throw new Error(`unexpected nvidia-smi line: ${JSON.stringify(line)}`);
        }
        const capability = COMPUTE_CAPABILITY.test(cols[5]) ? { computeCapability: cols[5] } : {};
        gpus.push({ index: Number(cols[0]), name: cols[1], memoryMiB: Number(cols[2]), uuid: cols[4], ...capability });
        driverVersion = cols[3];
    }
    return { gpus, driverVersion };
}

/**
 * The compute capability a server runs on: the lowest among the host GPUs it
 * sees (`hostIndices`, the host's nvidia-smi indices; all of them when
 * absent), since each rank must run every kernel SGLang picks. Undefined
 * when any of them was read without one (a state from before), or none is known.
 */
export function serverComputeCapability(gpus: readonly GpuFact[], hostIndices?: readonly number[]): string | undefined {
    const used = hostIndices === undefined ? gpus : gpus.filter((g) => hostIndices.includes(g.index));
    if (used.length === 0 || used.some((g) => g.computeCapability === undefined)) return undefined;
    const value = (c: string) => c.split(".").map(Number) as [number, number];
    return used
        .map((g) => g.computeCapability!)
        .reduce((low, c) => {
            const [a, b] = [value(low), value(c)];
            return b[0] < a[0] || (b[0] === a[0] && b[1] < a[1]) ? c : low;
        });
}
