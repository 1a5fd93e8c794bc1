// The lab's control API: bring the simulated Proxmox host and its real LXC
// container 129 (systemd 252 as init, journald, Debian's sshd) up and down,
// run commands in them over real ssh, set simulator faults, read simulator
// events, and write the lab stack config. Used by tests, benchmarks and
// `npm run lab`.
import { createHash } from "crypto";
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { buildStandIns, writeShim } from "./lab-build";
import { pctExecShell } from "./pve/pct-exec-shell";
import { pveversionShell } from "./pve/pveversion-shell";
import { computeCapabilityOf } from "./gpu/compute-capability";
import { GpuSpec, LabInfo, labPaths, MachineName, readLabInfoFrom, repoDir, defaultLabDir, writeJsonAtomic, LabPids, readJson } from "./lab-info";
import { machineMounts, machineSpec, RELEASES_IN_HOST, ROOTFS_IN_HOST, sshdSpec, under } from "./layout";
import {
    cgroupProcs,
    cgroupTree,
    cgroupTreeProcs,
    createLabCgroup,
    inMachineArgv,
    isAlive,
    killCgroup,
    killTree,
    mountNs,
    nsPid,
    pidsInNamespace,
    pinMountNamespaces,
    removeCgroup,
    runInMachine,
    sleep,
    startMachine,
    waitGone,
} from "./machine-ns";
import { writeModelDir } from "./model-dir";
import { procDevicesWithNvidia } from "./gpu/proc-devices";
import { confFile, isRunning, readConf, writeConf } from "./pve/ct-runtime";
import { fieldContainerConf } from "./pve/field-conf";
import { nvidiaDevices } from "./pve/pct-conf";
import { CT_LAB, ensureRootfs } from "./rootfs";
import { canBind, canConnect, ensureKey, knownHostsPattern, renderSshdConfig, startSshd, waitListening } from "./sshd";
import { Faults } from "./sglang/faults";
import { cacheRoot, ensureInstalled, releaseCacheRoot, releaseDir, sglangVersions } from "../sglang-release/oracle";
import {
    copySglangReal,
    CT_RELEASES,
    CT_SGLANG_REAL,
    CT_SYSTEM_SITE,
    ensureVenvs,
    ensureWheelhouse,
    pruneStartCache,
    startCacheDir,
    systemSitePthText,
} from "./sglang/venvs";
import { readEvents, SimulatorEvent } from "./sglang/events";
import { readStackConfig, writeStackFile } from "./stack-file";

export type { Faults } from "./sglang/faults";
export type { SimulatorEvent } from "./sglang/events";
export type { LabInfo } from "./lab-info";

export interface LabUpOptions {
    /** Default: $SGLANG_LAB_DIR or <repo>/.lab. */
    labDir?: string;
    /** Default 127.0.2.5 (the Proxmox host). */
    hostAddress?: string;
    /** Default 127.0.1.29 (container 129). */
    containerAddress?: string;
    /** Default 22, or 2222 when 22 cannot be bound on the lab addresses. */
    sshPort?: number;
    vmid?: number;
    gpus?: Array<{ name: string; memoryMiB: number; computeCap?: string }>;
    driverVersion?: string;
    /** Simulated SGLang startup time, seconds (default 3). */
    startupSeconds?: number;
    /** Seconds before a stopped server's GPU memory is free (default 2). */
    gpuReleaseDelaySeconds?: number;
    /** Total weight bytes of the model folder (default 53.8e9, Qwen3.6-27B's safetensors index). */
    modelWeightBytes?: number;
    /** Start from a clean container (config, units, model) but keep the keys. */
    fresh?: boolean;
    /** Progress lines (the rootfs build); default: none. */
    log?: (message: string) => void;
}

export interface ExecResult {
    code: number;
    stdout: string;
    stderr: string;
}

export interface LabStatus {
    labDir: string;
    up: boolean;
    host: { namespace: boolean; sshd: boolean; listening: boolean; address: string; port: number } | null;
    /** namespace/init: the LXC container runs (systemd is its PID 1); sshd: Debian's ssh.service has a process. */
    container: {
        namespace: boolean;
        running: boolean;
        sshd: boolean;
        init: boolean;
        listening: boolean;
        address: string;
        port: number;
        simulators: number[];
    } | null;
    /** Every process of the lab (its cgroup: the host machine, LXC's monitors, the container). */
    processes: number[];
}

const DEFAULT_GPUS = [
    { name: "NVIDIA RTX A6000", memoryMiB: 49140 },
    { name: "NVIDIA RTX A6000", memoryMiB: 49140 },
];

export function readLabInfo(labDir = defaultLabDir()): LabInfo {
    return readLabInfoFrom(labDir);
}

/** The lab's info, or null when no lab was brought up in labDir (or its info file cannot be read). */
function labInfoIfWritten(labDir: string): LabInfo | null {
    try {
        return readLabInfoFrom(labDir);
    } catch {
        return null;
    }
}

/** The most GPUs a lab has: PCI bus numbers 0x41 upwards, ascending in index order (CUDA_DEVICE_ORDER=PCI_BUS_ID), below 0x100. */
const MAX_LAB_GPUS = 32;

function gpuSpecs(gpus: Array<{ name: string; memoryMiB: number; computeCap?: string }>): GpuSpec[] {
    if (gpus.length > MAX_LAB_GPUS) throw new Error(`a lab has at most ${MAX_LAB_GPUS} GPUs, asked for ${gpus.length}`);
    // Buses 0x20 apart as on the field's boards, closer where more GPUs must fit.
    const busStep = Math.min(0x20, Math.floor((0xff - 0x41) / Math.max(1, gpus.length - 1)));
    return gpus.map((g, i) => ({
        index: i,
        name: g.name,
        memoryMiB: g.memoryMiB,
        computeCap: g.computeCap ?? computeCapabilityOf(g.name),
        uuid: `GPU-1a6b0c3e-5d2f-4e7a-9b8c-${String(i).padStart(12, "0")}`,
        busId: `00000000:${(0x41 + i * busStep).toString(16).toUpperCase().padStart(2, "0")}:00.0`,
    }));
}

/** A lab's id: names its cgroup and LXC path, so labs side by side never share LXC's abstract sockets or cgroups. */
function labId(labDir: string): string {
    return createHash("sha256").update(labDir).digest("hex").slice(0, 12);
}

/** Processes in the host machine's mount namespace (a lab whose cgroup is gone, or from before the lab had one). */
function namespaceProcs(pids: Partial<LabPids>, labDir: string): number[] {
    const ours = (pid: number) =>
        ["cmdline", "environ"].some((f) => {
            try {
                return fs.readFileSync(`/proc/${pid}/${f}`, "utf8").includes(labDir);
            } catch {
                return false;
            }
        });
    // The holder's pid counts only while it is still in the lab's cgroup: pids are reused (pid_max is 32768 here, and a
    // full test run starts more processes than that), and another lab's process in its place would name that lab's namespace.
    const holder = pids.hostHolder;
    const inLabCgroup = (pid: number) => {
        try {
            return fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(`/sglang-lab-${labId(labDir)}/`);
        } catch {
            return false;
        }
    };
    const ns = holder && isAlive(holder) && inLabCgroup(holder) ? mountNs(holder) : null;
    const recorded = readJson<string[]>(path.join(labPaths(labDir).state, "namespaces.json"), []);
    const out = new Set<number>();
    if (ns) for (const p of pidsInNamespace(ns)) out.add(p);
    // A recorded namespace counts only while a process in it belongs to this lab (inode numbers are reused).
    for (const r of recorded) if (r !== ns && pidsInNamespace(r).some(ours)) for (const p of pidsInNamespace(r)) out.add(p);
    return [...out];
}

function labProcesses(info: LabInfo | null, pids: Partial<LabPids>, labDir: string): number[] {
    const all = new Set<number>(namespaceProcs(pids, labDir));
    if (info?.lxc?.cgroupDir) for (const p of cgroupTreeProcs(info.lxc.cgroupDir)) all.add(p);
    return [...all].filter((p) => p !== process.pid);
}

/** The container's view of lab.json: what the stand-ins inside read (SGLANG_LAB_DIR=/var/lib/sglang-lab). */
function containerView(info: LabInfo): LabInfo {
    const share = (f: string) => path.join(CT_LAB.share, path.relative(info.share.lab, f));
    return {
        ...info,
        labDir: CT_LAB.share,
        distDir: path.join(CT_LAB.lib, "dist"),
        nodePath: path.join(CT_LAB.lib, "node"),
        gpuStateDir: share(info.gpuStateDir),
        faultsFile: share(info.faultsFile),
        eventsFile: share(info.eventsFile),
    };
}

/** Brings the lab up (idempotent: an up lab is left as it is) and returns lab.json. */
export async function labUp(opts: LabUpOptions = {}): Promise<LabInfo> {
    const labDir = path.resolve(opts.labDir ?? defaultLabDir());
    const L = labPaths(labDir);
    fs.mkdirSync(labDir, { recursive: true });
    const status = labStatus(labDir);
    if (status.up) return readLabInfo(labDir);
    if (status.processes.length > 0 || fs.existsSync(L.pids)) await labDown(labDir);

    const repo = repoDir();
    if (opts.fresh) {
        for (const d of [L.machine("host"), L.machine("container"), L.state, L.share, L.shims, L.ctLib]) fs.rmSync(d, { recursive: true, force: true });
    }
    // The stand-ins, copied into the lab: the machines run them from there, not from the checkout.
    const distDir = path.join(L.ctLib, "dist");
    fs.rmSync(distDir, { recursive: true, force: true });
    fs.cpSync(buildStandIns(repo), distDir, { recursive: true });
    const hostAddress = opts.hostAddress ?? "127.0.2.5";
    const containerAddress = opts.containerAddress ?? "127.0.1.29";
    let sshPort = opts.sshPort ?? 22;
    if (opts.sshPort === undefined && !((await canBind(hostAddress, 22)) && (await canBind(containerAddress, 22)))) sshPort = 2222;
    for (const a of [hostAddress, containerAddress]) {
        if (!(await canBind(a, sshPort))) throw new Error(`lab: ${a}:${sshPort} is in use (another lab?); choose other addresses or SGLANG_LAB_DIR`);
    }

    // Keys: a client key and one host key per machine, kept across restarts so pinned keys stay valid.
    const clientPublicKey = ensureKey(L.clientKey);
    const hostKey = ensureKey(path.join(L.keys, "host", "ssh_host_ed25519_key"));
    const ctKey = ensureKey(path.join(L.keys, "container", "ssh_host_ed25519_key"));
    fs.writeFileSync(L.authorizedKeys, `${clientPublicKey} sglang-lab-client\n`, { mode: 0o600 });
    fs.writeFileSync(L.knownHosts, `${knownHostsPattern(hostAddress, sshPort)} ${hostKey}\n${knownHostsPattern(containerAddress, sshPort)} ${ctKey}\n`);
    fs.chmodSync(L.clientKey, 0o600);

    const rootfsImage = ensureRootfs(cacheRoot(), opts.log);
    // The real SGLang releases the container's venvs run (sglang-release/install.sh; instant when current).
    await ensureInstalled();
    const id = labId(labDir);
    const vmid = opts.vmid ?? 129;
    const gpus = gpuSpecs(opts.gpus ?? DEFAULT_GPUS);
    const deviceMajors = { nvidia: 195, nvidiaUvm: 508 };
    const mounts = {
        host: machineMounts(labDir, "host", rootfsImage, releaseCacheRoot(), startCacheDir(releaseCacheRoot())),
        container: machineMounts(labDir, "container"),
    };
    const modelWeightBytes = opts.modelWeightBytes ?? 53.8e9;
    const info: LabInfo = {
        schema: 2,
        labDir,
        repoDir: repo,
        distDir,
        nodePath: process.execPath,
        lxc: { lxcPath: `/var/lib/lxc/lab-${id}`, cgroupDir: createLabCgroup(id), rootfsImage, rootfsInHost: ROOTFS_IN_HOST },
        share: { lab: L.share, inContainer: CT_LAB.share },
        host: { hostname: "kpro5", address: hostAddress, sshPort, hostKey, knownHostsFile: L.knownHosts, sshdLog: path.join(L.machine("host"), "sshd.log") },
        container: {
            hostname: "llm-two",
            address: containerAddress,
            sshPort,
            hostKey: ctKey,
            knownHostsFile: L.knownHosts,
            sshdLog: path.join(L.share, "sshd.log"),
            vmid,
        },
        vmid,
        clientKeyPath: L.clientKey,
        clientPublicKey,
        knownHostsFile: L.knownHosts,
        modelPath: "/models/Qwen3.6-27B",
        modelDir: path.join(mounts.container["/models"]!, "Qwen3.6-27B"),
        modelWeightBytes,
        gpus,
        driverVersion: opts.driverVersion ?? "570.133.20",
        cudaVersion: "12.8",
        idleMemoryUsedMiB: 1,
        deviceMajors,
        gpuStateDir: L.gpu,
        faultsFile: L.faults,
        eventsFile: L.events,
        simulator: { startupSeconds: opts.startupSeconds ?? 3, gpuReleaseDelaySeconds: opts.gpuReleaseDelaySeconds ?? 2 },
        proxmoxVersion: "8.3.2",
        mounts,
    };

    // The stand-ins: on the host through /usr/local/sbin (first on root's PATH); in the container nvidia-smi
    // there, run by the host's node bound into the container. SGLang itself runs from the venvs (below).
    const js = (name: string) => path.join(distDir, "bin", `${name}.js`);
    const before: Record<string, string> = { pct: pctExecShell(info), "nvidia-smi": "", pveversion: pveversionShell(info.proxmoxVersion) };
    for (const n of ["pct", "nvidia-smi", "pveversion"]) writeShim(path.join(L.shims, "host", n), info.nodePath, js(n), labDir, before[n]);
    const ct = containerView(info);
    const ctJs = (name: string) => path.join(ct.distDir, "bin", `${name}.js`);
    writeShim(path.join(L.shims, "container", "nvidia-smi"), ct.nodePath, ctJs("nvidia-smi"), ct.labDir);
    fs.rmSync(path.join(L.shims, "venv"), { recursive: true, force: true });

    for (const m of ["host", "container"] as MachineName[]) {
        for (const [target, dir] of Object.entries(mounts[m]))
            if (target !== "/proc/devices" && target !== ROOTFS_IN_HOST && target !== RELEASES_IN_HOST) fs.mkdirSync(dir, { recursive: true });
    }
    // The real SGLang releases of sglang-release/VERSIONS, one venv each (/opt/sglang/venv is the field's), run by the container's python3.
    copySglangReal(releaseDir(), path.join(L.ctLib, path.posix.relative(CT_LAB.lib, CT_SGLANG_REAL)));
    fs.mkdirSync(path.join(L.ctLib, path.posix.relative(CT_LAB.lib, CT_RELEASES)), { recursive: true });
    ensureVenvs(mounts.container["/opt"]!, rootfsImage, releaseCacheRoot(), sglangVersions());
    // The start cache the labs of this cache share (made by the mkdir above): bounded here, before this lab's starts.
    pruneStartCache(startCacheDir(releaseCacheRoot()));
    // What a venv the stack stages sees of the box: the stubs in the system site, the real wheels to install from.
    const pythonLib = path.posix.join("/usr/lib", path.posix.basename(path.posix.dirname(CT_SYSTEM_SITE)));
    if (!fs.existsSync(path.join(rootfsImage, pythonLib)))
        throw new Error(`lab: the container's image has no ${pythonLib} (lab/sglang/venvs.ts CT_SYSTEM_SITE names bookworm's python3.11)`);
    fs.writeFileSync(path.join(mounts.container[CT_SYSTEM_SITE]!, "sglang-lab.pth"), systemSitePthText());
    ensureWheelhouse(releaseCacheRoot(), opts.log ?? ((line) => process.stderr.write(`${line}\n`)));
    fs.mkdirSync(path.join(mounts.host["/run"]!, "sshd"), { recursive: true, mode: 0o755 });
    fs.mkdirSync(L.gpu, { recursive: true });
    // The mountpoint of the node binary inside the read-only /usr/local/lib/sglang-lab.
    fs.writeFileSync(path.join(L.ctLib, "node"), "");
    // The container's sshd: Debian's ssh.service with the lab's address, pinned host key and client key.
    const ctSsh = mounts.container[CT_LAB.ssh]!;
    fs.copyFileSync(path.join(L.keys, "container", "ssh_host_ed25519_key"), path.join(ctSsh, "ssh_host_ed25519_key"));
    fs.chmodSync(path.join(ctSsh, "ssh_host_ed25519_key"), 0o600);
    fs.copyFileSync(path.join(L.keys, "container", "ssh_host_ed25519_key.pub"), path.join(ctSsh, "ssh_host_ed25519_key.pub"));
    fs.copyFileSync(L.authorizedKeys, path.join(ctSsh, "authorized_keys"));
    fs.writeFileSync(sshdSpec(info, "container").configFile, renderSshdConfig(sshdSpec(info, "container")));
    // LXC on the host finds the lab's containers in its own lxcpath.
    const hostEtc = path.join(L.machine("host"), "etc.upper", "lxc");
    fs.mkdirSync(hostEtc, { recursive: true });
    fs.writeFileSync(path.join(hostEtc, "lxc.conf"), `lxc.lxcpath = ${info.lxc.lxcPath}\n`);
    fs.writeFileSync(mounts.host["/proc/devices"]!, procDevicesWithNvidia(fs.readFileSync("/proc/devices", "utf8"), deviceMajors));
    writeModelDir(info.modelDir, modelWeightBytes);
    writeJsonAtomic(L.info, info);
    writeJsonAtomic(path.join(L.share, "lab.json"), ct);
    if (!fs.existsSync(confFile(info, vmid)))
        writeConf(info, vmid, fieldContainerConf(vmid, info.container.hostname, nvidiaDevices(gpus.length, deviceMajors)));

    try {
        // /root becomes the host's own home unless the lab itself lives there.
        // (node may live under /root, the pinned one in the cache: layout.ts binds it in at its own path.)
        const bindRootHome = ![labDir, repo].some((p) => under(p, "/root"));
        const hostHolder = await startMachine(machineSpec(info, bindRootHome));
        writeJsonAtomic(L.pids, { hostHolder });
        writeJsonAtomic(path.join(L.state, "namespaces.json"), [mountNs(hostHolder)]);
        const inHost = (argv: string[]) => inMachineArgv(hostHolder, info.lxc.cgroupDir, argv);
        const sshdInNs = await startSshd(inHost, { ...sshdSpec(info, "host"), pidFile: sshdSpec(info, "host").pidFile! });
        // The pid file holds the host's own pid of sshd; lab.json's pids are this machine's.
        const hostSshd = cgroupProcs(path.join(info.lxc.cgroupDir, "init.scope")).find((p) => nsPid(p) === sshdInNs);
        writeJsonAtomic(L.pids, { hostHolder, ...(hostSshd ? { hostSshd } : {}) });
        // Proxmox starts onboot containers when the host boots.
        if (readConf(info, vmid)?.options.get("onboot") === "1") {
            const start = () => runInMachine(hostHolder, info.lxc.cgroupDir, ["/usr/local/sbin/pct", "start", String(vmid)], { timeoutMs: 90_000 });
            let r = start();
            if (r.code !== 0) {
                // lxc-start's daemonized start was seen to fail once under a full test run's load ("Failed to
                // receive the container state"): the lab tries once more from a stopped container.
                runInMachine(hostHolder, info.lxc.cgroupDir, ["/usr/local/sbin/pct", "stop", String(vmid)], { timeoutMs: 60_000 });
                r = start();
            }
            if (r.code !== 0) throw new Error(`lab: pct start ${vmid} failed (exit ${r.code}): ${r.stderr.trim()}`);
            // The container boots its systemd before ssh.service listens: seconds alone, more under a full test run's load (20 s was seen to run out).
            await waitListening(containerAddress, sshPort, 90_000);
        }
        await waitListening(hostAddress, sshPort, 30_000);
    } catch (e) {
        // SGLANG_LAB_KEEP_FAILED=1 leaves a lab that failed to come up as it is, to look at it (then `lab down`).
        if (process.env.SGLANG_LAB_KEEP_FAILED !== "1") await labDown(labDir).catch(() => undefined);
        throw e;
    }
    return info;
}

/**
 * Stops everything the lab started: the container cleanly first (systemd stops
 * its units, so simulators release their simulated GPU memory), then every
 * process in the lab's cgroup; then the cgroup itself. Idempotent.
 */
export async function labDown(labDir = defaultLabDir()): Promise<{ killed: number }> {
    labDir = path.resolve(labDir);
    const L = labPaths(labDir);
    const pids = readJson<Partial<LabPids>>(L.pids, {});
    const info = labInfoIfWritten(labDir);
    const cgroupDir = info?.lxc?.cgroupDir;
    if (info && cgroupDir && pids.hostHolder && isAlive(pids.hostHolder) && isRunning(info, info.vmid)) {
        runInMachine(pids.hostHolder, cgroupDir, ["/usr/local/sbin/pct", "shutdown", String(info.vmid), "--timeout", "15", "--forceStop", "1"], {
            timeoutMs: 30_000,
        });
    }
    const victims = labProcesses(info, pids, labDir);
    // The lab's mount namespaces (its host's, its container's): whatever runs in them is the lab's.
    // Held open until the strays are found: a namespace whose last process dies is freed, and its inode number can then
    // name another lab's new namespace (labs go up and down side by side), whose processes are not this lab's to kill.
    const pinned = pinMountNamespaces(victims, mountNs(process.pid));
    try {
        await killLab(cgroupDir, victims, [...pinned.keys()]);
    } finally {
        for (const fd of pinned.values()) fs.closeSync(fd);
    }
    fs.rmSync(L.pids, { force: true });
    fs.rmSync(path.join(L.state, "namespaces.json"), { force: true });
    // LXC's locks and runtime files lived in the host's /run (a lab directory): nothing of them outlives the lab.
    if (info) fs.rmSync(path.join(info.mounts.host["/run"]!, "lxc"), { recursive: true, force: true });
    if (info && fs.existsSync(L.state)) {
        for (const f of fs.readdirSync(L.state)) if (/^ct-\d+\.json$/.test(f)) writeJsonAtomic(path.join(L.state, f), { status: "stopped" });
    }
    return { killed: victims.length };
}

/** SIGKILLs the lab's processes, removes its cgroups, then kills what entered its (pinned) namespaces from outside. */
async function killLab(cgroupDir: string | undefined, victims: number[], namespaces: string[]): Promise<void> {
    if (cgroupDir) killCgroup(cgroupDir);
    killTree(victims, "SIGKILL");
    const left = await waitGone(victims, 10_000);
    if (left.length > 0) throw new Error(`lab: processes still alive after SIGKILL: ${left.join(", ")}`);
    if (cgroupDir && fs.existsSync(cgroupDir)) {
        const deadline = Date.now() + 5000;
        let busy = removeCgroup(cgroupDir);
        while (busy.length > 0 && Date.now() < deadline) {
            killCgroup(cgroupDir);
            await sleep(50);
            busy = removeCgroup(cgroupDir);
        }
        if (busy.length > 0) throw new Error(`lab: cgroups still busy after down: ${busy.join(", ")}`);
    }
    // A process that entered one of them from outside the lab's cgroup (an attach still in flight while the lab went down).
    const strays = namespaces.flatMap(pidsInNamespace);
    killTree(strays, "SIGKILL");
    const straysLeft = await waitGone(strays, 10_000);
    if (straysLeft.length > 0) throw new Error(`lab: processes still alive in the lab's namespaces after SIGKILL: ${straysLeft.join(", ")}`);
}

export function labStatus(labDir = defaultLabDir()): LabStatus {
    labDir = path.resolve(labDir);
    const L = labPaths(labDir);
    const pids = readJson<Partial<LabPids>>(L.pids, {});
    const info = labInfoIfWritten(labDir);
    const processes = labProcesses(info, pids, labDir);
    if (!info || info.schema !== 2) return { labDir, up: false, host: null, container: null, processes };
    const cg = info.lxc.cgroupDir;
    const ctCg = path.join(cg, "lxc", String(info.vmid));
    const cmdline = (p: number) => {
        try {
            return fs.readFileSync(`/proc/${p}/cmdline`, "utf8");
        } catch {
            return "";
        }
    };
    const ctProcs = cgroupTree(ctCg).flatMap(cgroupProcs).filter(isAlive);
    const simulators = ctProcs.filter((p) => /bin\/sglang-server\.js/.test(cmdline(p)));
    const running = isRunning(info, info.vmid);
    const sshd = cgroupTree(path.join(ctCg, "ns", "system.slice", "ssh.service"))
        .flatMap(cgroupProcs)
        .some(isAlive);
    const hostUp = isAlive(pids.hostHolder) && processes.includes(pids.hostHolder!);
    const host = { namespace: hostUp, sshd: isAlive(pids.hostSshd), listening: isAlive(pids.hostSshd), address: info.host.address, port: info.host.sshPort };
    const container = {
        namespace: running,
        running,
        sshd,
        init: running,
        listening: sshd,
        address: info.container.address,
        port: info.container.sshPort,
        simulators,
    };
    return { labDir, up: host.namespace && host.sshd, host, container, processes };
}

/** Whether both sshds accept connections (for `lab status`). */
export async function labListening(labDir = defaultLabDir()): Promise<{ host: boolean; container: boolean }> {
    const info = readLabInfo(labDir);
    return { host: await canConnect(info.host.address, info.host.sshPort), container: await canConnect(info.container.address, info.container.sshPort) };
}

/**
 * The ssh command line the lab's own tools use: the lab key, the lab's
 * known_hosts, host keys checked. Key exchange by curve25519 alone: OpenSSH
 * 9.2's default, sntrup761x25519, costs the client about 70 ms of CPU per
 * connection (its sntrup761 key generation) against about 8 ms, and a test run
 * opens hundreds of these (the lab tests' probes, the e2e files' checks on the
 * boxes). The stack's own SSH (remote/ssh-pool.ts) never offered sntrup761.
 */
export function sshArgv(info: LabInfo, machine: MachineName, command: string): string[] {
    const m = machine === "host" ? info.host : info.container;
    return [
        "/usr/bin/ssh",
        "-F",
        "/dev/null",
        "-o",
        "KexAlgorithms=curve25519-sha256",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        `UserKnownHostsFile=${m.knownHostsFile}`,
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "ConnectTimeout=10",
        "-o",
        "LogLevel=ERROR",
        "-i",
        info.clientKeyPath,
        "-p",
        String(m.sshPort),
        `root@${m.address}`,
        command,
    ];
}

/** Runs a shell command on a lab machine over real ssh. */
export function labExec(machine: MachineName, command: string, opts: { labDir?: string; input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
    const info = readLabInfo(opts.labDir);
    const [bin, ...args] = sshArgv(info, machine, command);
    return new Promise((resolve, reject) => {
        const child = spawn(bin!, args, { stdio: ["pipe", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        const timer = opts.timeoutMs ? setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs) : undefined;
        child.on("error", reject);
        child.on("close", (code, signal) => {
            if (timer) clearTimeout(timer);
            if (signal === "SIGKILL" && opts.timeoutMs)
                reject(new Error(`lab: ssh ${machine} '${command}' timed out after ${opts.timeoutMs} ms\n${stdout}${stderr}`));
            else resolve({ code: code ?? 255, stdout, stderr });
        });
        child.stdin.end(opts.input ?? "");
    });
}

/** A file's modification time on a lab machine (epoch ms, sub-second: the machine's python3 stats it). */
export async function labFileMtimeMs(machine: MachineName, file: string, labDir?: string): Promise<number> {
    const r = await labExec(machine, `python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime)' ${file}`, { labDir, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`lab ${machine}: stat ${file}: exit ${r.code}: ${r.stderr}`);
    return Number(r.stdout.trim()) * 1000;
}

/** Faults for the next simulator starts (each simulator reads them when it launches). */
export function setFaults(faults: Faults, labDir?: string): void {
    writeJsonAtomic(readLabInfo(labDir).faultsFile, faults);
}

export function clearFaults(labDir?: string): void {
    fs.rmSync(readLabInfo(labDir).faultsFile, { force: true });
}

export function simulatorEvents(labDir?: string): SimulatorEvent[] {
    return readEvents(readLabInfo(labDir).eventsFile);
}

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});

/** The parts of lab.json a stack config needs. */
export type LabMachines = Pick<LabInfo, "host" | "container" | "clientKeyPath" | "vmid">;

/**
 * A stack config for the lab from kpro5's settings (lab/stack-file.ts
 * readStackConfig: no secrets, they are kpro5's own): the model and server settings
 * unchanged, pointed at the lab's machines with their pinned host keys and
 * the lab's client key. `pct-exec` goes through the simulated Proxmox host
 * (kpro5 topology); `direct` ssh-es straight into the container (ct129
 * topology) and has no container section.
 */
export function labStackConfig(info: LabMachines, topology: "pct-exec" | "direct", kpro5Config: Obj): Record<string, Obj> {
    const config: Record<string, Obj> = {};
    for (const [k, v] of Object.entries(kpro5Config)) config[k] = structuredClone(asObj(v));
    const machine = topology === "pct-exec" ? info.host : info.container;
    config["sglang-serve:host"] = {
        ...config["sglang-serve:host"],
        ...(topology === "direct" ? { name: info.container.hostname } : {}),
        address: machine.address,
        port: machine.sshPort,
        user: "root",
        hostKey: machine.hostKey,
        topology,
        sshPrivateKeyPath: info.clientKeyPath,
    };
    // The lab key replaces the field's SSH key.
    delete config["sglang-serve:sshPrivateKey"];
    if (topology === "pct-exec") config["sglang-serve:container"] = { ...config["sglang-serve:container"], vmid: info.vmid };
    else delete config["sglang-serve:container"];
    config["sglang-serve:service"] = { ...config["sglang-serve:service"], listenHost: info.container.address, endpointHost: info.container.address };
    return config;
}

/**
 * Writes <repo>/Pulumi.lab.yaml: kpro5's model and server settings (its
 * committed Pulumi.kpro5.yaml, never its salt or secrets) with the lab's host
 * (address, port, pinned host key, lab client key, pct-exec) and the
 * container's lab address as listen/endpoint host. The lab stack's own salt
 * and secrets (its API key) are kept from the file as it was. Returns the file.
 */
export function writeLabStackConfig(opts: { labDir?: string; file?: string; kpro5File?: string } = {}): string {
    const info = readLabInfo(opts.labDir);
    const kpro5File = opts.kpro5File ?? path.join(info.repoDir, "Pulumi.kpro5.yaml");
    if (!fs.existsSync(kpro5File)) throw new Error(`lab: ${kpro5File} is missing: the lab stack takes its server settings from kpro5's stack file`);
    const file = opts.file ?? path.join(info.repoDir, "Pulumi.lab.yaml");
    const config = labStackConfig(info, "pct-exec", readStackConfig(kpro5File));
    writeStackFile(file, config, `# Generated by lab/control.ts writeLabStackConfig() for the lab in ${info.labDir}; do not commit.\n`);
    return file;
}
