// The lab's control API: bring the simulated Proxmox host and container up
// and down, run commands in them over real ssh, set simulator faults, read
// simulator events, and write the lab stack config. Used by tests,
// benchmarks and `npm run lab`.
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { buildStandIns, writeShim } from "./lab-build";
import { GpuSpec, LabInfo, labPaths, MachineName, readLabInfoFrom, repoDir, defaultLabDir, writeJsonAtomic, LabPids, readJson } from "./lab-info";
import { machineMounts, machineSpec, sshdSpec } from "./layout";
import { isAlive, killTree, mountNs, pidsInNamespace, startMachine, waitGone } from "./machine-ns";
import { writeModelDir } from "./model-dir";
import { procDevicesWithNvidia } from "./gpu/proc-devices";
import { confFile, readConf, readCtState, startContainer, stopContainer, updatePids, writeConf } from "./pve/ct-runtime";
import { fieldContainerConf } from "./pve/field-conf";
import { nvidiaDevices } from "./pve/pct-conf";
import { canBind, canConnect, ensureKey, knownHostsPattern, startSshd, waitListening } from "./sshd";
import { Faults } from "./sglang/faults";
import { readEvents, SimulatorEvent } from "./sglang/events";

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
  gpus?: Array<{ name: string; memoryMiB: number }>;
  driverVersion?: string;
  /** Simulated SGLang startup time, seconds (default 3). */
  startupSeconds?: number;
  /** Seconds before a stopped server's GPU memory is free (default 2). */
  gpuReleaseDelaySeconds?: number;
  /** Total weight bytes of the model folder (default 52e9). */
  modelWeightBytes?: number;
  /** Start from a clean container (config, units, journal, model) but keep the keys. */
  fresh?: boolean;
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
  container: { namespace: boolean; running: boolean; sshd: boolean; init: boolean; listening: boolean; address: string; port: number; simulators: number[] } | null;
  /** Every process in a lab namespace. */
  processes: number[];
}

const DEFAULT_GPUS = [
  { name: "NVIDIA RTX A6000", memoryMiB: 49140 },
  { name: "NVIDIA RTX A6000", memoryMiB: 49140 },
];

function under(p: string, dir: string): boolean {
  const rel = path.relative(dir, p);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

export function readLabInfo(labDir = defaultLabDir()): LabInfo {
  return readLabInfoFrom(labDir);
}

function gpuSpecs(gpus: Array<{ name: string; memoryMiB: number }>): GpuSpec[] {
  return gpus.map((g, i) => ({
    index: i,
    name: g.name,
    memoryMiB: g.memoryMiB,
    uuid: `GPU-1a6b0c3e-5d2f-4e7a-9b8c-${String(i).padStart(12, "0")}`,
    busId: `00000000:${(0x41 + i * 0x20).toString(16).toUpperCase().padStart(2, "0")}:00.0`,
  }));
}

/** The machines' mount namespaces: from the live holders, and as recorded at start (should a holder have died). */
function namespacesOf(pids: Partial<LabPids>, labDir: string): string[] {
  const live = [pids.hostHolder, pids.containerHolder].filter((p): p is number => !!p && isAlive(p)).map(mountNs).filter((n): n is string => !!n);
  // A recorded namespace counts only while a process in it belongs to this lab (inode numbers are reused).
  const ours = (pid: number) =>
    ["cmdline", "environ"].some((f) => {
      try {
        return fs.readFileSync(`/proc/${pid}/${f}`, "utf8").includes(labDir);
      } catch {
        return false;
      }
    });
  const recorded = readJson<string[]>(path.join(labPaths(labDir).state, "namespaces.json"), []).filter((ns) => !live.includes(ns) && pidsInNamespace(ns).some(ours));
  return [...live, ...recorded];
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
    for (const d of [L.machine("host"), L.machine("container"), L.state, L.gpu, L.shims]) fs.rmSync(d, { recursive: true, force: true });
    for (const f of [L.events, L.faults]) fs.rmSync(f, { force: true });
  }
  const distDir = buildStandIns(repo);
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

  const vmid = opts.vmid ?? 129;
  const gpus = gpuSpecs(opts.gpus ?? DEFAULT_GPUS);
  const deviceMajors = { nvidia: 195, nvidiaUvm: 508 };
  const mounts = { host: machineMounts(labDir, "host"), container: machineMounts(labDir, "container") };
  const modelWeightBytes = opts.modelWeightBytes ?? 52e9;
  const info: LabInfo = {
    schema: 1,
    labDir,
    repoDir: repo,
    distDir,
    nodePath: process.execPath,
    host: { hostname: "kpro5", address: hostAddress, sshPort, hostKey, knownHostsFile: L.knownHosts, sshdLog: path.join(L.machine("host"), "sshd.log") },
    container: { hostname: "llm-two", address: containerAddress, sshPort, hostKey: ctKey, knownHostsFile: L.knownHosts, sshdLog: path.join(L.machine("container"), "sshd.log"), vmid },
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
    journalDir: { inContainer: "/var/log/journal/lab", lab: path.join(mounts.container["/var/log"]!, "journal", "lab") },
    simulator: { startupSeconds: opts.startupSeconds ?? 3, gpuReleaseDelaySeconds: opts.gpuReleaseDelaySeconds ?? 2 },
    proxmoxVersion: "8.3.2",
    mounts,
  };

  // The stand-ins, reached through /usr/local/sbin (first on root's PATH) and the venv's bin.
  const js = (name: string) => path.join(distDir, "bin", `${name}.js`);
  for (const n of ["pct", "nvidia-smi", "pveversion"]) writeShim(path.join(L.shims, "host", n), info.nodePath, js(n), labDir);
  for (const n of ["systemctl", "journalctl", "nvidia-smi"]) writeShim(path.join(L.shims, "container", n), info.nodePath, js(n), labDir);
  for (const n of ["python3", "python"]) writeShim(path.join(L.shims, "venv", n), info.nodePath, js("python3"), labDir);
  writeShim(path.join(L.shims, "venv", "sglang"), info.nodePath, js("sglang"), labDir);

  for (const m of ["host", "container"] as MachineName[]) {
    for (const [target, dir] of Object.entries(mounts[m])) if (target !== "/proc/devices") fs.mkdirSync(dir, { recursive: true });
    fs.mkdirSync(path.join(mounts[m]["/run"]!, "sshd"), { recursive: true, mode: 0o755 });
  }
  fs.mkdirSync(info.journalDir.lab, { recursive: true });
  fs.mkdirSync(L.gpu, { recursive: true });
  fs.writeFileSync(mounts.host["/proc/devices"]!, procDevicesWithNvidia(fs.readFileSync("/proc/devices", "utf8"), deviceMajors));
  if (!fs.existsSync(path.join(info.modelDir, "config.json"))) writeModelDir(info.modelDir, modelWeightBytes);
  writeJsonAtomic(L.info, info);
  if (!fs.existsSync(confFile(info, vmid))) writeConf(info, vmid, fieldContainerConf(vmid, info.container.hostname, nvidiaDevices(gpus.length, deviceMajors)));

  try {
    // /root becomes each machine's own home unless the lab itself lives there.
    const bindRootHome = ![labDir, repo, process.execPath].some((p) => under(p, "/root"));
    const hostHolder = await startMachine(machineSpec(info, "host", bindRootHome));
    updatePids(info, { hostHolder });
    const containerHolder = await startMachine(machineSpec(info, "container", bindRootHome));
    updatePids(info, { containerHolder });
    writeJsonAtomic(path.join(L.state, "namespaces.json"), [hostHolder, containerHolder].map(mountNs));
    const hostSshd = await startSshd(hostHolder, sshdSpec(info, "host"));
    updatePids(info, { hostSshd });
    // Proxmox starts onboot containers when the host boots.
    if (readConf(info, vmid)?.options.get("onboot") === "1") await startContainer(info, vmid);
    else writeJsonAtomic(L.ctState(vmid), { status: "stopped" });
    await waitListening(hostAddress, sshPort, 10_000);
  } catch (e) {
    await labDown(labDir).catch(() => undefined);
    throw e;
  }
  return info;
}

/** Stops everything the lab started (init, units, simulators, sshds, namespace holders). Idempotent. */
export async function labDown(labDir = defaultLabDir()): Promise<{ killed: number }> {
  labDir = path.resolve(labDir);
  const L = labPaths(labDir);
  const pids = readJson<Partial<LabPids>>(L.pids, {});
  const namespaces = namespacesOf(pids, labDir);
  let info: LabInfo | null = null;
  try {
    info = readLabInfoFrom(labDir);
  } catch {
    info = null;
  }
  // Graceful first: init stops its units, so simulators release their (simulated) GPU memory.
  if (info && pids.supervisor && isAlive(pids.supervisor)) await stopContainer(info, info.vmid, true, 15_000);
  const victims = new Set<number>();
  for (const ns of namespaces) for (const p of pidsInNamespace(ns)) victims.add(p);
  for (const p of [pids.hostSshd, pids.containerSshd, pids.supervisor, pids.hostHolder, pids.containerHolder]) if (p && isAlive(p) && namespaces.includes(mountNs(p) ?? "")) victims.add(p);
  killTree([...victims], "SIGKILL");
  const left = await waitGone([...victims], 10_000);
  if (left.length > 0) throw new Error(`lab: processes still alive after SIGKILL: ${left.join(", ")}`);
  fs.rmSync(L.pids, { force: true });
  fs.rmSync(path.join(L.state, "namespaces.json"), { force: true });
  if (info) {
    for (const f of fs.existsSync(L.state) ? fs.readdirSync(L.state) : []) {
      if (/^ct-\d+\.json$/.test(f)) writeJsonAtomic(path.join(L.state, f), { status: "stopped" });
    }
  }
  return { killed: victims.size };
}

export function labStatus(labDir = defaultLabDir()): LabStatus {
  labDir = path.resolve(labDir);
  const L = labPaths(labDir);
  const pids = readJson<Partial<LabPids>>(L.pids, {});
  let info: LabInfo | null = null;
  try {
    info = readLabInfoFrom(labDir);
  } catch {
    info = null;
  }
  const namespaces = namespacesOf(pids, labDir);
  const processes = namespaces.flatMap((ns) => pidsInNamespace(ns));
  const ctNs = pids.containerHolder && isAlive(pids.containerHolder) ? mountNs(pids.containerHolder) : null;
  const simulators = ctNs
    ? pidsInNamespace(ctNs).filter((p) => {
        try {
          return /bin\/(python3|sglang)\.js/.test(fs.readFileSync(`/proc/${p}/cmdline`, "utf8"));
        } catch {
          return false;
        }
      })
    : [];
  const host = info
    ? { namespace: isAlive(pids.hostHolder), sshd: isAlive(pids.hostSshd), listening: isAlive(pids.hostSshd), address: info.host.address, port: info.host.sshPort }
    : null;
  const container = info
    ? {
        namespace: isAlive(pids.containerHolder),
        running: readCtState(info, info.vmid).status === "running",
        sshd: isAlive(pids.containerSshd),
        init: isAlive(pids.supervisor),
        listening: isAlive(pids.containerSshd),
        address: info.container.address,
        port: info.container.sshPort,
        simulators,
      }
    : null;
  const up = !!host && !!container && host.namespace && host.sshd && container.namespace;
  return { labDir, up, host, container, processes };
}

/** Whether both sshds accept connections (for `lab status`). */
export async function labListening(labDir = defaultLabDir()): Promise<{ host: boolean; container: boolean }> {
  const info = readLabInfo(labDir);
  return { host: await canConnect(info.host.address, info.host.sshPort), container: await canConnect(info.container.address, info.container.sshPort) };
}

/** The ssh command line the lab's own tools use: the lab key, the lab's known_hosts, host keys checked. */
export function sshArgv(info: LabInfo, machine: MachineName, command: string): string[] {
  const m = machine === "host" ? info.host : info.container;
  return [
    "/usr/bin/ssh",
    "-F", "/dev/null",
    "-o", "StrictHostKeyChecking=yes",
    "-o", `UserKnownHostsFile=${m.knownHostsFile}`,
    "-o", "GlobalKnownHostsFile=/dev/null",
    "-o", "BatchMode=yes",
    "-o", "IdentitiesOnly=yes",
    "-o", "ConnectTimeout=10",
    "-o", "LogLevel=ERROR",
    "-i", info.clientKeyPath,
    "-p", String(m.sshPort),
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
      if (signal === "SIGKILL" && opts.timeoutMs) reject(new Error(`lab: ssh ${machine} '${command}' timed out after ${opts.timeoutMs} ms\n${stdout}${stderr}`));
      else resolve({ code: code ?? 255, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
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

interface YamlModule {
  load(text: string): unknown;
  dump(value: unknown, opts?: { lineWidth?: number; noRefs?: boolean }): string;
}

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});

/** The contract's example values (docs/design.md), used where Pulumi.kpro5.yaml does not say. */
const KPRO5_DEFAULTS: Obj = {
  "sglang-serve:host": { name: "kpro5", address: "10.1.2.5", port: 22, user: "root", topology: "pct-exec", gpus: { count: 2, name: "NVIDIA RTX A6000", memoryMiB: 49140 } },
  "sglang-serve:container": {
    vmid: 129, hostname: "llm-two", adopt: true, allowDelete: false, cores: 32, memoryMiB: 131072, swapMiB: 0, onboot: true,
    features: { nesting: true }, network: { name: "eth0", bridge: "vmbr0", ip: "10.1.230.172/24", gateway: "10.1.230.1" }, gpus: [0, 1],
  },
  "sglang-serve:service": {
    name: "qwen", sglangVersion: "0.5.11", python: "/opt/sglang/venv/bin/python3", launcher: "auto",
    model: { path: "/models/Qwen3.6-27B", architecture: "Qwen3_5ForConditionalGeneration", weightsGB: 52, servedName: "qwen3.6-27b" },
    tensorParallelSize: 2, speculative: { algorithm: "NEXTN", numSteps: 1, eagleTopk: 1, numDraftTokens: 2 },
    mambaSchedulerStrategy: "extra_buffer", disableRadixCache: false, memFractionStatic: 0.88, listenHost: "0.0.0.0", port: 30000,
    endpointHost: "10.1.230.172", extraArgs: [], environment: { SGLANG_ENABLE_SPEC_V2: "1" },
  },
  "sglang-serve:readiness": { startupTimeoutSeconds: 900, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, gpuReleaseTimeoutSeconds: 120, chatCheck: true },
};

/** The parts of lab.json a stack config needs. */
export type LabMachines = Pick<LabInfo, "host" | "container" | "clientKeyPath" | "vmid">;

/**
 * A stack config for the lab from kpro5's: the model and server settings
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
  // The lab key replaces the field's secret key.
  delete config["sglang-serve:sshPrivateKey"];
  if (topology === "pct-exec") config["sglang-serve:container"] = { ...config["sglang-serve:container"], vmid: info.vmid };
  else delete config["sglang-serve:container"];
  config["sglang-serve:service"] = { ...config["sglang-serve:service"], listenHost: info.container.address, endpointHost: info.container.address };
  return config;
}

/**
 * Writes <repo>/Pulumi.lab.yaml: kpro5's model and server settings with the
 * lab's host (address, port, pinned host key, lab client key, pct-exec) and
 * the container's lab address as listen/endpoint host. Returns the file.
 */
export function writeLabStackConfig(opts: { labDir?: string; file?: string; kpro5File?: string } = {}): string {
  const info = readLabInfo(opts.labDir);
  const yaml = require("js-yaml") as YamlModule;
  const kpro5File = opts.kpro5File ?? path.join(info.repoDir, "Pulumi.kpro5.yaml");
  const doc = fs.existsSync(kpro5File) ? asObj(yaml.load(fs.readFileSync(kpro5File, "utf8"))) : {};
  const kpro5: Obj = { ...asObj(doc.config) };
  for (const [k, v] of Object.entries(KPRO5_DEFAULTS)) if (kpro5[k] === undefined) kpro5[k] = v;
  const out: Obj = {};
  if (doc.encryptionsalt !== undefined) out.encryptionsalt = doc.encryptionsalt;
  out.config = labStackConfig(info, "pct-exec", kpro5);
  const file = opts.file ?? path.join(info.repoDir, "Pulumi.lab.yaml");
  fs.writeFileSync(file, `# Generated by lab/control.ts writeLabStackConfig() for the lab in ${info.labDir}; do not commit.\n${yaml.dump(out, { lineWidth: 200, noRefs: true })}`);
  return file;
}
