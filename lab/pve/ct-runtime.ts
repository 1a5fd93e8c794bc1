// Starting and stopping container 129 on the lab's Proxmox host, the way
// pve-container does (src/PVE/LXC.pm vm_start / vm_stop / check_running):
// pending changes applied, /var/lib/lxc/<vmid>/config written from the PVE
// config, lxc-start; lxc-stop [--kill | --nokill --timeout N]; "running"
// means the container's LXC command socket is listening. The lab's rootfs
// step (PVE: activate the volume, its prestart hook writes /etc/hostname):
// the cached Debian image with a fresh tmpfs as writable layer, so every
// start boots a clean system. Run by pct inside the host machine.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { LabInfo, labPaths, readJson, writeJsonAtomic } from "../lab-info";
import { containerBinds } from "../layout";
import { sleep } from "../machine-ns";
import { renderLxcConfig } from "./lxc-config";
import { parsePctConf, PctConf, renderPctConf, withPending } from "./pct-conf";

export interface CtState {
    status: "running" | "stopped";
    startedAt?: string;
}

export function confFile(info: LabInfo, vmid: number): string {
    return path.join(info.mounts.host["/etc/pve/lxc"]!, `${vmid}.conf`);
}

export function readConf(info: LabInfo, vmid: number): PctConf | null {
    try {
        return parsePctConf(fs.readFileSync(confFile(info, vmid), "utf8"));
    } catch {
        return null;
    }
}

export function writeConf(info: LabInfo, vmid: number, conf: PctConf): void {
    const file = confFile(info, vmid);
    const tmp = `${file}.tmp.${process.pid}`;
    fs.writeFileSync(tmp, renderPctConf(conf));
    fs.renameSync(tmp, file);
}

/** LXC's command socket of a container: an abstract unix socket named after lxcpath and name. */
export function commandSocket(info: LabInfo, vmid: number): string {
    return `@${info.lxc.lxcPath}/${vmid}/command`;
}

/** check_running: the command socket in /proc/net/unix (the lab's machines share one network namespace). Other vmids are config files only. */
export function isRunning(info: LabInfo, vmid: number): boolean {
    if (vmid !== info.vmid) return readJson<CtState>(labPaths(info.labDir).ctState(vmid), { status: "stopped" }).status === "running";
    const sock = commandSocket(info, vmid);
    try {
        return fs
            .readFileSync("/proc/net/unix", "utf8")
            .split("\n")
            .some((l) => l.endsWith(` ${sock}`));
    } catch {
        return false;
    }
}

function writeCtState(info: LabInfo, vmid: number, s: CtState): void {
    writeJsonAtomic(labPaths(info.labDir).ctState(vmid), s);
}

function run(argv: string[], timeoutMs = 60_000): { code: number; out: string } {
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: timeoutMs, stdio: ["ignore", "pipe", "pipe"] });
    return { code: r.status ?? (r.signal ? 128 : 1), out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim() };
}

function ctDir(info: LabInfo, vmid: number): string {
    return path.join(info.lxc.lxcPath, String(vmid));
}

function mountedAt(target: string): boolean {
    return fs
        .readFileSync("/proc/self/mountinfo", "utf8")
        .split("\n")
        .some((l) => l.split(" ")[4] === target);
}

/** The poststop step: the rootfs overlay and its writable layer go (the layer's content with them). */
function releaseRootfs(dir: string): void {
    for (const m of [path.join(dir, "rootfs"), path.join(dir, "rw")]) {
        while (mountedAt(m)) {
            if (run(["umount", "-l", m]).code !== 0) break;
        }
    }
}

/** The image with a fresh tmpfs over it, and what PVE's prestart hook writes into a container (hostname, hosts). */
function prepareRootfs(info: LabInfo, dir: string, hostname: string): void {
    releaseRootfs(dir);
    const rw = path.join(dir, "rw");
    const rootfs = path.join(dir, "rootfs");
    fs.mkdirSync(rw, { recursive: true });
    fs.mkdirSync(rootfs, { recursive: true });
    const steps = [
        ["mount", "-t", "tmpfs", "-o", "mode=0755", `ct${info.vmid}-rw`, rw],
        ["mkdir", path.join(rw, "upper"), path.join(rw, "work")],
        ["mount", "-t", "overlay", "-o", `lowerdir=${info.lxc.rootfsInHost},upperdir=${rw}/upper,workdir=${rw}/work`, `ct${info.vmid}-rootfs`, rootfs],
    ];
    for (const s of steps) {
        const r = run(s);
        if (r.code !== 0) {
            releaseRootfs(dir);
            throw new Error(`lab: preparing the rootfs of CT ${info.vmid} failed: ${s.join(" ")}: ${r.out}`);
        }
    }
    fs.writeFileSync(path.join(rootfs, "etc", "hostname"), `${hostname}\n`);
    fs.writeFileSync(
        path.join(rootfs, "etc", "hosts"),
        `127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n${info.container.address} ${hostname}\n`,
    );
}

function cgroupControllers(): string[] {
    try {
        return fs.readFileSync("/sys/fs/cgroup/cgroup.controllers", "utf8").trim().split(/\s+/).filter(Boolean);
    } catch {
        return [];
    }
}

/** vm_start: pending changes applied, the LXC config written, the rootfs prepared, lxc-start. */
export async function startContainer(info: LabInfo, vmid: number): Promise<void> {
    const conf = readConf(info, vmid);
    if (!conf) throw new Error(`Configuration file 'nodes/${info.host.hostname}/lxc/${vmid}.conf' does not exist`);
    const applied = withPending(conf);
    if (conf.pending.size > 0 || conf.pendingDelete.length > 0) writeConf(info, vmid, applied);
    if (vmid !== info.vmid) {
        writeCtState(info, vmid, { status: "running", startedAt: new Date().toISOString() });
        return;
    }
    const dir = ctDir(info, vmid);
    const hostname = applied.options.get("hostname") ?? `CT${vmid}`;
    const logFile = `/var/log/lxc/${vmid}.log`;
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
        path.join(dir, "config"),
        renderLxcConfig(applied, {
            vmid,
            lxcPath: info.lxc.lxcPath,
            controllers: cgroupControllers(),
            cpus: os.cpus().map((_, i) => i),
            binds: containerBinds(info),
            logFile,
            deviceNode,
        }),
    );
    prepareRootfs(info, dir, hostname);
    const logStart = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0;
    // A session of its own: LXC takes a controlling terminal, if it has one, as the console's peer.
    const r = run(["setsid", "-w", "lxc-start", "-n", String(vmid), "-d"], 60_000);
    if (r.code !== 0) {
        releaseRootfs(dir);
        let log = "";
        try {
            log = fs.readFileSync(logFile, "utf8").slice(logStart).trim().split("\n").slice(-15).join("\n");
        } catch {
            // no log
        }
        throw new Error(`startup for container '${vmid}' failed\n${r.out}${log ? `\n${log}` : ""}`);
    }
    writeCtState(info, vmid, { status: "running", startedAt: new Date().toISOString() });
}

export interface StopOptions {
    /** lxc-stop --kill (pct stop). */
    kill: boolean;
    /** Seconds for a clean shutdown (pct shutdown --timeout, default 60). */
    timeoutSeconds?: number;
    /** Kill when the shutdown times out (pct shutdown --forceStop, pct reboot). */
    killAfterTimeout?: boolean;
}

/** vm_stop: lxc-stop, then wait until the command socket is gone; the rootfs is released. */
export async function stopContainer(info: LabInfo, vmid: number, opts: StopOptions): Promise<void> {
    if (vmid !== info.vmid) {
        writeCtState(info, vmid, { status: "stopped" });
        return;
    }
    const dir = ctDir(info, vmid);
    if (isRunning(info, vmid)) {
        const argv = ["lxc-stop", "-n", String(vmid)];
        if (opts.kill) argv.push("--kill");
        else {
            if (!opts.killAfterTimeout) argv.push("--nokill");
            if (opts.timeoutSeconds !== undefined) argv.push("--timeout", String(opts.timeoutSeconds));
        }
        const r = run(argv, ((opts.timeoutSeconds ?? 60) + 5) * 1000);
        const deadline = Date.now() + 10_000;
        while (isRunning(info, vmid) && Date.now() < deadline) await sleep(25);
        if (isRunning(info, vmid)) throw new Error(`${r.out ? `${r.out}\n` : ""}container did not stop`);
        // LXC's monitor leaves its cgroup a moment after the container stopped; a start before that fails
        // "Failed to create monitor cgroup" (seen under load in pct reboot). Bounded: a start then says why.
        const cgroups = [path.join(info.lxc.cgroupDir, "lxc.monitor", String(vmid)), path.join(info.lxc.cgroupDir, "lxc", String(vmid))];
        const gone = Date.now() + 10_000;
        while (cgroups.some((c) => fs.existsSync(c)) && Date.now() < gone) await sleep(25);
    }
    releaseRootfs(dir);
    writeCtState(info, vmid, { status: "stopped" });
}

/** A host device node's type and numbers (Linux's dev_t: major in bits 8-19 and 32-63 of rdev, minor in 0-7 and 20-31). */
function deviceNode(devicePath: string): { type: "c" | "b"; major: number; minor: number } | undefined {
    let st: fs.Stats;
    try {
        st = fs.statSync(devicePath);
    } catch {
        return undefined;
    }
    if (!st.isCharacterDevice() && !st.isBlockDevice()) return undefined;
    const rdev = st.rdev;
    return { type: st.isBlockDevice() ? "b" : "c", major: (rdev >> 8) & 0xfff, minor: (rdev & 0xff) | ((rdev >> 12) & 0xfff00) };
}
