// The lab's description (lab.json) and where its state lives. Shared by the
// control API (run by tests and `npm run lab`) and by the stand-ins that run
// inside the lab's machines (compiled to JS; they find the lab through the
// SGLANG_LAB_DIR their shim sets). Inside container 129 the stand-ins read a
// copy with the container's paths (share/lab.json, at /var/lib/sglang-lab).
import * as fs from "fs";
import * as path from "path";

export type MachineName = "host" | "container";

export interface MachineInfo {
    hostname: string;
    /** Loopback address the machine's sshd listens on. */
    address: string;
    sshPort: number;
    /** Public host key, "ssh-ed25519 AAAA..." (no comment), as pinned in stack config. */
    hostKey: string;
    knownHostsFile: string;
    /** Lab-side file with sshd's log (-E). */
    sshdLog: string;
}

/** Container 129 as LXC runs it on the lab's Proxmox host. */
export interface LxcInfo {
    /** LXC's lxcpath on the host (PVE's /var/lib/lxc plus the lab's id: LXC's command socket is an abstract socket named after it, and labs share the network namespace). */
    lxcPath: string;
    /** The lab's cgroup as this machine sees it; the host's cgroup namespace is rooted there. */
    cgroupDir: string;
    /** The cached Debian rootfs (lab/rootfs.ts), and where the host sees it (read-only). */
    rootfsImage: string;
    rootfsInHost: string;
}

export interface GpuSpec {
    index: number;
    name: string;
    memoryMiB: number;
    uuid: string;
    busId: string;
    /** The CUDA compute capability nvidia-smi's compute_cap prints (`8.6`); absent in a lab brought up before it was kept (lab/gpu/compute-capability.ts fills it by name). */
    computeCap?: string;
}

export interface SimulatorSettings {
    /** Seconds from launch to "The server is fired up and ready to roll!" (before faults). */
    startupSeconds: number;
    /** Seconds until a stopped server's GPU memory shows as free in nvidia-smi. */
    gpuReleaseDelaySeconds: number;
}

export interface LabInfo {
    schema: 2;
    labDir: string;
    repoDir: string;
    /** Compiled stand-ins (JS) used by the shims. */
    distDir: string;
    nodePath: string;
    lxc: LxcInfo;
    /** Files the lab and the container share: lab-side directory, and its path inside the container. */
    share: { lab: string; inContainer: string };
    host: MachineInfo;
    container: MachineInfo & { vmid: number };
    vmid: number;
    clientKeyPath: string;
    clientPublicKey: string;
    knownHostsFile: string;
    /** Model folder as the container sees it, and where it lives in the lab. */
    modelPath: string;
    modelDir: string;
    modelWeightBytes: number;
    gpus: GpuSpec[];
    driverVersion: string;
    cudaVersion: string;
    /** Memory an idle GPU reports as used (MiB). */
    idleMemoryUsedMiB: number;
    /** Device majors the lab's /proc/devices and /dev/nvidia* nodes carry. */
    deviceMajors: { nvidia: number; nvidiaUvm: number };
    /** One JSON file per simulated server process (pid.json): what it holds on each GPU. */
    gpuStateDir: string;
    /** JSON read by every simulator at start (see lab/sglang/faults.ts). */
    faultsFile: string;
    /** JSON lines appended by the simulators (see lab/sglang/events.ts). */
    eventsFile: string;
    simulator: SimulatorSettings;
    proxmoxVersion: string;
    /** Real path inside a machine -> lab directory bind-mounted there. */
    mounts: { host: Record<string, string>; container: Record<string, string> };
}

/** Runtime pids of a running lab (state/pids.json), as this machine sees them. */
export interface LabPids {
    hostHolder: number;
    hostSshd?: number;
}

export const LAB_ENV = "SGLANG_LAB_DIR";

export function repoDir(): string {
    // lab/ (sources, run by ts-node) or dist/lab/<build>/ (compiled): the repo holds package.json.
    let dir = __dirname;
    while (dir !== path.dirname(dir)) {
        if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
        dir = path.dirname(dir);
    }
    throw new Error(`lab: cannot find the repository above ${__dirname}`);
}

export function defaultLabDir(): string {
    return process.env[LAB_ENV] || path.join(repoDir(), ".lab");
}

/** Fixed layout of a lab directory. */
export function labPaths(labDir: string) {
    const state = path.join(labDir, "state");
    return {
        labDir,
        info: path.join(labDir, "lab.json"),
        state,
        pids: path.join(state, "pids.json"),
        ctState: (vmid: number) => path.join(state, `ct-${vmid}.json`),
        lock: path.join(state, "pct.lock"),
        keys: path.join(labDir, "keys"),
        clientKey: path.join(labDir, "keys", "client_ed25519"),
        knownHosts: path.join(labDir, "keys", "known_hosts"),
        authorizedKeys: path.join(labDir, "keys", "authorized_keys"),
        shims: path.join(labDir, "shims"),
        /** Shared with the container (read-write at /var/lib/sglang-lab). */
        share: path.join(labDir, "share"),
        gpu: path.join(labDir, "share", "gpu"),
        faults: path.join(labDir, "share", "faults.json"),
        events: path.join(labDir, "share", "events.jsonl"),
        /** Bound read-only into the container at /usr/local/lib/sglang-lab: node and the compiled stand-ins. */
        ctLib: path.join(labDir, "ct-lib"),
        machine: (m: MachineName) => path.join(labDir, m === "host" ? "host" : "ct"),
    };
}

export function readLabInfoFrom(labDir: string): LabInfo {
    const file = labPaths(labDir).info;
    if (!fs.existsSync(file)) throw new Error(`lab: ${file} does not exist; run \`npm run lab -- up\` first`);
    return JSON.parse(fs.readFileSync(file, "utf8")) as LabInfo;
}

/** For the stand-ins: the lab they belong to. */
export function currentLab(): LabInfo {
    const dir = process.env[LAB_ENV];
    if (!dir) throw new Error(`lab: ${LAB_ENV} is not set (stand-ins are started through their shims)`);
    return readLabInfoFrom(dir);
}

export function readJson<T>(file: string, fallback: T): T {
    try {
        return JSON.parse(fs.readFileSync(file, "utf8")) as T;
    } catch {
        return fallback;
    }
}

/** Write-then-rename, so readers never see half a file. */
export function writeJsonAtomic(file: string, value: unknown): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(value, null, 2) + "\n");
    fs.renameSync(tmp, file);
}
