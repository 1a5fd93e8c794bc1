// Starting and stopping the lab's container 129: its namespace stays (held by
// its holder process); "running" means its init (the lab's systemd), its sshd
// and its NVIDIA device nodes (from the passthrough lines in its config, as
// LXC applies them at start). Used by `lab up/down` and by `pct`.
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LabInfo, LabPids, labPaths, readJson, writeJsonAtomic } from "../lab-info";
import { sshdSpec } from "../layout";
import { cleanEnv, isAlive, killTree, mountNs, nsenterArgv, pidsInNamespace, runInMachine, sleep, waitGone } from "../machine-ns";
import { startSshd } from "../sshd";
import { MANAGER_SOCKET } from "../systemd/protocol";
import { nvidiaDevices, parsePctConf, PctConf, renderPctConf, visibleDevices, withPending } from "./pct-conf";

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

export function readCtState(info: LabInfo, vmid: number): CtState {
  const s = readJson<CtState>(labPaths(info.labDir).ctState(vmid), { status: "stopped" });
  if (vmid === info.vmid && s.status === "running") {
    // The lab's container is running while its init is.
    const pids = readPids(info);
    if (!isAlive(pids.supervisor)) return { status: "stopped" };
  }
  return s;
}

export function writeCtState(info: LabInfo, vmid: number, s: CtState): void {
  writeJsonAtomic(labPaths(info.labDir).ctState(vmid), s);
}

export function readPids(info: LabInfo): Partial<LabPids> {
  return readJson<Partial<LabPids>>(labPaths(info.labDir).pids, {});
}

export function updatePids(info: LabInfo, patch: Partial<LabPids>): void {
  const cur = readPids(info);
  const next: Record<string, number | undefined> = { ...cur, ...patch };
  for (const k of Object.keys(next)) if (next[k] === undefined || next[k] === 0) delete next[k];
  writeJsonAtomic(labPaths(info.labDir).pids, next);
}

export function socketOnLab(info: LabInfo): string {
  return path.join(info.mounts.container["/run"]!, MANAGER_SOCKET.replace(/^\/run\//, ""));
}

/** Applies pending changes (they take effect at start), then brings up the container's devices, sshd and init. */
export async function startContainer(info: LabInfo, vmid: number): Promise<void> {
  const conf = readConf(info, vmid);
  if (!conf) throw new Error(`Configuration file 'nodes/${info.host.hostname}/lxc/${vmid}.conf' does not exist`);
  if (conf.pending.size > 0 || conf.pendingDelete.length > 0) writeConf(info, vmid, withPending(conf));
  const applied = withPending(conf);
  if (vmid !== info.vmid) {
    writeCtState(info, vmid, { status: "running", startedAt: new Date().toISOString() });
    return;
  }
  const holder = readPids(info).containerHolder;
  if (!holder || !isAlive(holder)) throw new Error(`lab: container ${vmid} has no namespace (is the lab up?)`);
  const devs = visibleDevices(applied, nvidiaDevices(info.gpus.length, info.deviceMajors));
  const hostname = applied.options.get("hostname") ?? info.container.hostname;
  const script = [
    `hostname ${JSON.stringify(hostname)}`,
    "rm -f /dev/nvidia*",
    ...devs.map((d) => `mknod -m 666 /dev/${d.name} c ${d.major} ${d.minor}`),
  ].join("\n");
  const r = runInMachine(holder, ["/bin/sh", "-ec", script]);
  if (r.code !== 0) throw new Error(`lab: preparing container ${vmid} failed: ${r.stderr}`);
  fs.mkdirSync(path.join(info.mounts.container["/run"]!, "sshd"), { recursive: true });
  const containerSshd = await startSshd(holder, sshdSpec(info, "container"));
  const sock = socketOnLab(info);
  fs.rmSync(sock, { force: true });
  const log = fs.openSync(path.join(labPaths(info.labDir).machine("container"), "init.log"), "a");
  const [cmd, ...args] = nsenterArgv(holder, [info.nodePath, path.join(info.distDir, "bin", "supervisor.js")]);
  const child = spawn(cmd!, args, { detached: true, stdio: ["ignore", log, log], env: cleanEnv({ SGLANG_LAB_DIR: info.labDir }) });
  fs.closeSync(log);
  child.unref();
  const supervisor = child.pid ?? 0;
  const deadline = Date.now() + 15000;
  while (!fs.existsSync(sock)) {
    if (!isAlive(supervisor) || Date.now() > deadline) {
      throw new Error(`lab: the container's init did not come up; see ${path.join(labPaths(info.labDir).machine("container"), "init.log")}`);
    }
    await sleep(20);
  }
  updatePids(info, { containerSshd, supervisor });
  writeCtState(info, vmid, { status: "running", startedAt: new Date().toISOString() });
}

/** Stops the container: graceful (init stops its units first) or hard (every process killed at once). */
export async function stopContainer(info: LabInfo, vmid: number, graceful: boolean, timeoutMs = 60_000): Promise<void> {
  if (vmid !== info.vmid) {
    writeCtState(info, vmid, { status: "stopped" });
    return;
  }
  const pids = readPids(info);
  const holder = pids.containerHolder;
  if (graceful && pids.supervisor && isAlive(pids.supervisor)) {
    killTree([pids.supervisor], "SIGTERM");
    await waitGone([pids.supervisor], timeoutMs);
  }
  if (holder && isAlive(holder)) {
    const ns = mountNs(holder);
    if (ns) {
      const victims = pidsInNamespace(ns).filter((p) => p !== holder);
      killTree(victims, "SIGKILL");
      await waitGone(victims, 5000);
    }
  }
  fs.rmSync(socketOnLab(info), { force: true });
  updatePids(info, { containerSshd: undefined, supervisor: undefined });
  writeCtState(info, vmid, { status: "stopped" });
}
