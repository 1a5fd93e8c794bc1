// nvidia-smi stand-in: --query-gpu / --query-compute-apps with --format=csv
// (noheader, nounits), -L, -i, and a plain summary table. GPUs are those whose
// /dev/nvidiaN node this process may open (the container sees what its
// passthrough lines bind in, and opens what its device cgroup allows); memory
// used comes from the simulated servers.
import * as fs from "fs";
import { computeCapabilityOf } from "../gpu/compute-capability";
import { readUsage } from "../gpu/gpu-state";
import { currentLab, GpuSpec, LabInfo } from "../lab-info";

interface Field {
    header: string;
    unit?: string;
    value: (g: GpuSpec, used: number, info: LabInfo, count: number) => string;
}

const GPU_FIELDS: Record<string, Field> = {
    index: { header: "index", value: (g) => String(g.index) },
    name: { header: "name", value: (g) => g.name },
    gpu_name: { header: "name", value: (g) => g.name },
    uuid: { header: "uuid", value: (g) => g.uuid },
    gpu_uuid: { header: "uuid", value: (g) => g.uuid },
    "pci.bus_id": { header: "pci.bus_id", value: (g) => g.busId },
    gpu_bus_id: { header: "pci.bus_id", value: (g) => g.busId },
    driver_version: { header: "driver_version", value: (_g, _u, i) => i.driverVersion },
    // The header is the field's name, and no unit: `compute_cap` / `8.6`.
    compute_cap: { header: "compute_cap", value: (g) => g.computeCap ?? computeCapabilityOf(g.name) },
    count: { header: "count", value: (_g, _u, _i, n) => String(n) },
    "memory.total": { header: "memory.total", unit: "MiB", value: (g) => String(g.memoryMiB) },
    "memory.used": { header: "memory.used", unit: "MiB", value: (_g, used) => String(used) },
    "memory.free": { header: "memory.free", unit: "MiB", value: (g, used) => String(Math.max(0, g.memoryMiB - used)) },
    "memory.reserved": { header: "memory.reserved", unit: "MiB", value: () => "0" },
    "utilization.gpu": { header: "utilization.gpu", unit: "%", value: (_g, used, i) => (used > i.idleMemoryUsedMiB ? "3" : "0") },
    "utilization.memory": { header: "utilization.memory", unit: "%", value: () => "0" },
    "temperature.gpu": { header: "temperature.gpu", value: (_g, used, i) => (used > i.idleMemoryUsedMiB ? "41" : "30") },
    "power.draw": { header: "power.draw", unit: "W", value: (_g, used, i) => (used > i.idleMemoryUsedMiB ? "78.12" : "21.43") },
    "power.limit": { header: "power.limit", unit: "W", value: () => "300.00" },
    persistence_mode: { header: "persistence_mode", value: () => "Enabled" },
    compute_mode: { header: "compute_mode", value: () => "Default" },
    pstate: { header: "pstate", value: () => "P8" },
    vbios_version: { header: "vbios_version", value: () => "94.02.5C.00.02" },
};

const APP_FIELDS: Record<string, { header: string; unit?: string }> = {
    pid: { header: "pid" },
    process_name: { header: "process_name" },
    name: { header: "process_name" },
    used_memory: { header: "used_gpu_memory", unit: "MiB" },
    used_gpu_memory: { header: "used_gpu_memory", unit: "MiB" },
    gpu_uuid: { header: "gpu_uuid" },
    gpu_bus_id: { header: "gpu_bus_id" },
    gpu_name: { header: "gpu_name" },
};

function fail(msg: string, code: number): never {
    process.stdout.write(`${msg}\n`);
    process.exit(code);
}

/**
 * How opening a device node ends: the nodes are mknod'ed without a driver, so
 * a node this machine may use opens with ENXIO; a container's device cgroup
 * denying it answers EPERM first (the kernel's check, not the lab's).
 */
function openNode(node: string): "ok" | "missing" | "denied" {
    try {
        fs.closeSync(fs.openSync(node, "r+"));
        return "ok";
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return "missing";
        if (code === "EPERM" || code === "EACCES") return "denied";
        return "ok";
    }
}

function visibleGpus(info: LabInfo): GpuSpec[] {
    switch (openNode("/dev/nvidiactl")) {
        case "missing":
            return fail(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
                9,
            );
        case "denied":
            // What nvidia-smi prints in a container whose device cgroup does not allow the NVIDIA major.
            return fail("Failed to initialize NVML: Unknown Error", 255);
        case "ok":
            break;
    }
    return info.gpus.filter((g) => openNode(`/dev/nvidia${g.index}`) === "ok");
}

function main(argv: string[]): void {
    const info = currentLab();
    let queryGpu: string | undefined;
    let queryApps: string | undefined;
    let format: string | undefined;
    let ids: number[] | undefined;
    let list = false;
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i]!;
        const val = (): string => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : (argv[++i] ?? ""));
        if (a.startsWith("--query-gpu")) queryGpu = val();
        else if (a.startsWith("--query-compute-apps")) queryApps = val();
        else if (a.startsWith("--format")) format = val();
        else if (a === "-i" || a.startsWith("--id")) ids = val().split(",").map(Number);
        else if (a === "-L" || a === "--list-gpus") list = true;
        else if (a === "-h" || a === "--help") {
            process.stdout.write(
                `NVIDIA System Management Interface -- v${info.driverVersion}\n\n(lab stand-in: --query-gpu, --query-compute-apps, --format, -i, -L)\n`,
            );
            return;
        } else if (a === "--version") {
            process.stdout.write(
                `NVIDIA-SMI version  : ${info.driverVersion}\nNVML version        : ${info.driverVersion.split(".")[0]}.${info.driverVersion.split(".")[1]}\nDRIVER version      : ${info.driverVersion}\nCUDA Version        : ${info.cudaVersion}\n`,
            );
            return;
        } else fail("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.", 2);
    }
    let gpus = visibleGpus(info);
    if (gpus.length === 0) fail("No devices were found", 6);
    if (ids) {
        const bad = ids.find((i) => !gpus.some((g) => g.index === i));
        if (bad !== undefined || ids.some(Number.isNaN)) fail(`No devices were found`, 6);
        gpus = gpus.filter((g) => ids!.includes(g.index));
    }
    const usage = readUsage(info.gpuStateDir);
    const used = (g: GpuSpec) => Math.min(g.memoryMiB, info.idleMemoryUsedMiB + (usage.usedMiB.get(g.index) ?? 0));
    if (list) {
        for (const g of gpus) process.stdout.write(`GPU ${g.index}: ${g.name} (UUID: ${g.uuid})\n`);
        return;
    }
    if (queryGpu !== undefined || queryApps !== undefined) {
        if (!format) fail(`Missing --format option. Please run 'nvidia-smi -h' for help.`, 2);
        const fmt = format.split(",").map((s) => s.trim());
        if (fmt[0] !== "csv" || fmt.slice(1).some((f) => f !== "noheader" && f !== "nounits")) {
            fail(`"${format}" is not a valid format. Please run 'nvidia-smi -h' for help.`, 2);
        }
        const header = !fmt.includes("noheader");
        const units = !fmt.includes("nounits");
        const rows: string[] = [];
        if (queryGpu !== undefined) {
            const names = queryGpu
                .split(",")
                .map((s) => s.trim())
                .filter(Boolean);
            for (const n of names) if (!GPU_FIELDS[n]) fail(`Field "${n}" is not a valid field to query.`, 2);
            const fields = names.map((n) => GPU_FIELDS[n]!);
            if (header) rows.push(fields.map((f) => (f.unit ? `${f.header} [${f.unit}]` : f.header)).join(", "));
            for (const g of gpus) {
                rows.push(fields.map((f) => f.value(g, used(g), info, gpus.length) + (units && f.unit ? ` ${f.unit}` : "")).join(", "));
            }
        } else {
            const names = queryApps!
                .split(",")
                .map((s) => s.trim())
                .filter(Boolean);
            for (const n of names) if (!APP_FIELDS[n]) fail(`Field "${n}" is not a valid field to query.`, 2);
            if (header)
                rows.push(
                    names
                        .map((n) => APP_FIELDS[n]!)
                        .map((f) => (f.unit ? `${f.header} [${f.unit}]` : f.header))
                        .join(", "),
                );
            for (const app of usage.apps) {
                const g = gpus.find((x) => x.index === app.gpu);
                if (!g) continue;
                rows.push(
                    names
                        .map((n) => {
                            switch (APP_FIELDS[n]!.header) {
                                case "pid":
                                    return String(app.pid);
                                case "process_name":
                                    return app.name;
                                case "used_gpu_memory":
                                    return units ? `${app.usedMiB} MiB` : String(app.usedMiB);
                                case "gpu_uuid":
                                    return g.uuid;
                                case "gpu_bus_id":
                                    return g.busId;
                                default:
                                    return g.name;
                            }
                        })
                        .join(", "),
                );
            }
        }
        process.stdout.write(rows.map((r) => `${r}\n`).join(""));
        return;
    }
    process.stdout.write(table(info, gpus, used, usage.apps));
}

function table(info: LabInfo, gpus: GpuSpec[], used: (g: GpuSpec) => number, apps: Array<{ pid: number; name: string; gpu: number; usedMiB: number }>): string {
    const line = "+-----------------------------------------------------------------------------------------+";
    const d = new Date();
    let s = `${d.toUTCString().replace(/ GMT$/, "")}\n${line}\n`;
    s += `| NVIDIA-SMI ${info.driverVersion}             Driver Version: ${info.driverVersion}     CUDA Version: ${info.cudaVersion}     |\n`;
    s += "|-----------------------------------------+------------------------+----------------------+\n";
    s += "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n";
    s += "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n";
    s += "|=========================================+========================+======================|\n";
    for (const g of gpus) {
        const mem = `${used(g)}MiB / ${g.memoryMiB}MiB`;
        s += `| ${String(g.index).padEnd(3)}  ${g.name.padEnd(24)}  On | ${g.busId.slice(4).padEnd(16)} Off | ${"Off".padStart(20)} |\n`;
        s += `| 30%   30C    P8             21W /  300W | ${mem.padStart(22)} | ${"0%      Default".padStart(20)} |\n`;
        s += "+-----------------------------------------+------------------------+----------------------+\n";
    }
    s += `\n${line}\n| Processes:                                                                              |\n`;
    s += "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n";
    s += "|=========================================================================================|\n";
    if (apps.length === 0) s += "|  No running processes found                                                             |\n";
    for (const a of apps)
        s += `|  ${String(a.gpu).padStart(3)}   N/A  N/A  ${String(a.pid).padStart(13)}      C   ${a.name.padEnd(36).slice(0, 36)}${`${a.usedMiB}MiB`.padStart(10)} |\n`;
    return `${s}${line}\n`;
}

main(process.argv.slice(2));
