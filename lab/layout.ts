// Where each machine's real paths come from in the lab directory, and the
// specs (host namespace, sshd, the container's bind mounts) built from
// lab.json. Used by `lab up` and by pct.
import * as path from "path";
import { LabInfo, labPaths, MachineName } from "./lab-info";
import { BindMount, MachineSpec } from "./machine-ns";
import { nvidiaDevices } from "./pve/pct-conf";
import { CT_LAB } from "./rootfs";
import { CT_RELEASES, CT_START_CACHE, CT_SYSTEM_SITE } from "./sglang/venvs";
import { SshdSpec } from "./sshd";

/** Where the host sees the cached rootfs (PVE's template cache directory). */
export const ROOTFS_IN_HOST = "/var/lib/vz/template/cache/sglang-lab-rootfs";
/** Where the host sees sglang-release's install cache (read-only), for the container's venvs. */
export const RELEASES_IN_HOST = "/var/lib/sglang-lab/releases";
/** Where the host sees the start cache the labs share (read-write), for the container's venvs (lab/sglang/venvs.ts CT_START_CACHE). */
export const START_CACHE_IN_HOST = "/var/lib/sglang-lab/starts";

/**
 * Real path inside the machine -> lab directory (the lab.json `mounts`). The
 * container's are LXC bind mounts (see containerBinds): what a real
 * container keeps across restarts on its disk lives in the lab; everything
 * else is in the container's writable layer, fresh at every start.
 */
export function machineMounts(labDir: string, m: MachineName, rootfsImage = "", releases = "", startCache = ""): Record<string, string> {
    const L = labPaths(labDir);
    const dir = L.machine(m);
    if (m === "host") {
        return {
            "/etc/pve/lxc": path.join(dir, "pve", "lxc"),
            "/var/log": path.join(dir, "log"),
            "/run": path.join(dir, "run"),
            "/root": path.join(dir, "home"),
            "/usr/local/sbin": path.join(L.shims, "host"),
            "/proc/devices": path.join(L.labDir, "proc-devices"),
            [ROOTFS_IN_HOST]: rootfsImage,
            [RELEASES_IN_HOST]: releases,
            [START_CACHE_IN_HOST]: startCache,
        };
    }
    return {
        "/etc/systemd/system": path.join(dir, "systemd", "system"),
        "/etc/sglang": path.join(dir, "sglang"),
        "/root": path.join(dir, "home"),
        "/models": path.join(dir, "models"),
        "/opt": path.join(dir, "opt"),
        "/usr/local/sbin": path.join(L.shims, "container"),
        [CT_LAB.lib]: L.ctLib,
        [CT_LAB.share]: L.share,
        [CT_LAB.ssh]: path.join(dir, "ssh"),
        [CT_SYSTEM_SITE]: path.join(dir, "system-site"),
        "/proc/devices": path.join(L.labDir, "proc-devices"),
    };
}

const READ_ONLY_IN_CONTAINER = new Set(["/usr/local/sbin", CT_LAB.lib, CT_LAB.ssh, CT_SYSTEM_SITE, "/proc/devices"]);

/**
 * The container's bind mounts, in mount order, as lxc.mount.entry lines take
 * them: the lab.json `mounts` plus the host's node binary (run by the
 * simulator and the stand-ins inside), the real SGLang releases' site
 * directories (sglang-release's cache, through the host's RELEASES_IN_HOST)
 * and the start cache the labs share (through START_CACHE_IN_HOST).
 */
export function containerBinds(info: LabInfo): BindMount[] {
    const binds: BindMount[] = Object.entries(info.mounts.container)
        .sort(([a], [b]) => a.split("/").length - b.split("/").length)
        .map(([target, source]) => ({ target, source, file: target === "/proc/devices", readOnly: READ_ONLY_IN_CONTAINER.has(target) }));
    binds.push({ target: path.join(CT_LAB.lib, "node"), source: info.nodePath, file: true, readOnly: true });
    binds.push({ target: CT_RELEASES, source: RELEASES_IN_HOST, file: false, readOnly: true });
    binds.push({ target: CT_START_CACHE, source: START_CACHE_IN_HOST, file: false, readOnly: false });
    return binds;
}

const TOP_LEVEL = new Set(["/run", "/root"]);

/** Whether path p is dir or inside it. */
export function under(p: string, dir: string): boolean {
    const rel = path.relative(dir, p);
    return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

export function machineSpec(info: LabInfo, bindRootHome: boolean): MachineSpec {
    const mounts = info.mounts.host;
    const topLevel: Record<string, string> = {};
    const binds: MachineSpec["binds"] = [];
    for (const [target, source] of Object.entries(mounts)) {
        if (TOP_LEVEL.has(target)) {
            if (target === "/root" && !bindRootHome) continue;
            topLevel[target.slice(1)] = source;
        } else binds.push({ target, source, file: target === "/proc/devices", readOnly: target === ROOTFS_IN_HOST || target === RELEASES_IN_HOST });
    }
    // The node the host's stand-ins run (their shims name it), where /root is the lab's own home and
    // node lives under the machine's /root (scripts/node.sh's pinned one, in ~/.cache): bound in at its own path.
    if (bindRootHome && under(info.nodePath, "/root")) binds.push({ target: info.nodePath, source: info.nodePath, file: true, readOnly: true });
    return {
        name: "host",
        hostname: info.host.hostname,
        dir: labPaths(info.labDir).machine("host"),
        topLevel,
        // /var too: LXC's directories (/var/lib/lxc) and the template cache live in the lab's upper layer.
        overlays: ["etc", "var"],
        binds,
        // The host has every NVIDIA node; the container gets those its config passes through (lxc.mount.entry).
        devices: nvidiaDevices(info.gpus.length, info.deviceMajors),
        cgroupDir: info.lxc.cgroupDir,
    };
}

export function sshdSpec(info: LabInfo, m: MachineName): SshdSpec {
    const L = labPaths(info.labDir);
    const dir = L.machine(m);
    if (m === "host") {
        return {
            name: m,
            address: info.host.address,
            port: info.host.sshPort,
            hostKeyFile: path.join(L.keys, m, "ssh_host_ed25519_key"),
            authorizedKeysFile: L.authorizedKeys,
            pidFile: path.join(dir, "sshd.pid"),
            logFile: info.host.sshdLog,
            configFile: path.join(dir, "sshd_config"),
        };
    }
    // Debian's ssh.service in the container reads this through /etc/ssh/sshd_config.d/00-lab.conf.
    return {
        name: m,
        address: info.container.address,
        port: info.container.sshPort,
        hostKeyFile: `${CT_LAB.ssh}/ssh_host_ed25519_key`,
        authorizedKeysFile: `${CT_LAB.ssh}/authorized_keys`,
        logFile: info.container.sshdLog,
        configFile: path.join(dir, "ssh", "sshd_config"),
        included: true,
    };
}
