// Where each machine's real paths come from in the lab directory, and the
// specs (namespace, sshd) built from lab.json. Used by `lab up` and by pct.
import * as path from "path";
import { LabInfo, labPaths, MachineName } from "./lab-info";
import { MachineSpec } from "./machine-ns";
import { nvidiaDevices } from "./pve/pct-conf";
import { SshdSpec } from "./sshd";

/** Real path inside the machine -> lab directory (the lab.json `mounts`). */
export function machineMounts(labDir: string, m: MachineName): Record<string, string> {
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
    };
  }
  return {
    "/etc/systemd/system": path.join(dir, "systemd", "system"),
    "/etc/sglang": path.join(dir, "sglang"),
    "/var/log": path.join(dir, "log"),
    "/run": path.join(dir, "run"),
    "/root": path.join(dir, "home"),
    "/models": path.join(dir, "models"),
    "/opt": path.join(dir, "opt"),
    "/opt/sglang/venv/bin": path.join(L.shims, "venv"),
    "/usr/local/sbin": path.join(L.shims, "container"),
    "/proc/devices": path.join(L.labDir, "proc-devices"),
  };
}

const TOP_LEVEL = new Set(["/run", "/root", "/models", "/opt"]);

export function machineSpec(info: LabInfo, m: MachineName, bindRootHome: boolean): MachineSpec {
  const mounts = info.mounts[m];
  const topLevel: Record<string, string> = {};
  const binds: MachineSpec["binds"] = [];
  for (const [target, source] of Object.entries(mounts)) {
    if (TOP_LEVEL.has(target)) {
      if (target === "/root" && !bindRootHome) continue;
      topLevel[target.slice(1)] = source;
    } else binds.push({ target, source, file: target === "/proc/devices" });
  }
  return {
    name: m,
    hostname: m === "host" ? info.host.hostname : info.container.hostname,
    dir: labPaths(info.labDir).machine(m),
    topLevel,
    overlays: ["etc"],
    binds,
    // The host has every NVIDIA node; the container gets its nodes when it starts (pct start), from its config.
    devices: m === "host" ? nvidiaDevices(info.gpus.length, info.deviceMajors) : [],
  };
}

export function sshdSpec(info: LabInfo, m: MachineName): SshdSpec {
  const L = labPaths(info.labDir);
  const dir = L.machine(m);
  const mi = m === "host" ? info.host : info.container;
  return {
    name: m,
    address: mi.address,
    port: mi.sshPort,
    hostKeyFile: path.join(L.keys, m, "ssh_host_ed25519_key"),
    authorizedKeysFile: L.authorizedKeys,
    pidFile: path.join(dir, "sshd.pid"),
    logFile: mi.sshdLog,
    configFile: path.join(dir, "sshd_config"),
  };
}
