// The lab's service manager: what systemd (PID 1) does for the units the stack
// installs. Units load from /etc/systemd/system (fragment + .d/*.conf drop-ins)
// when first referenced and are kept until `daemon-reload` (a changed file
// keeps the old definition), processes are supervised with Restart=,
// RestartSec=, StartLimitBurst=/StartLimitIntervalSec= and TimeoutStopSec=,
// and everything they print goes to the journal.
import { ChildProcess, spawn } from "child_process";
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { expandEnvInArgv } from "./exec-line";
import { JournalWriter } from "./journal";
import { buildServiceDef, ServiceDef } from "./service-def";
import { parseEnvironmentFile, parseUnitText } from "./unit-file";

export type ActiveState = "active" | "activating" | "deactivating" | "failed" | "inactive" | "reloading";

export interface Unit {
  name: string;
  loadState: "loaded" | "not-found" | "bad-setting";
  def?: ServiceDef;
  badSetting?: string;
  fragmentPath: string;
  dropIns: string[];
  /** Contents of fragment + drop-ins at load, to tell "changed on disk". */
  loadedText: string;
  activeState: ActiveState;
  subState: string;
  result: string;
  mainPid: number;
  child?: ChildProcess;
  ident: string;
  nRestarts: number;
  execMainStartMs: number;
  execMainStartMono: number;
  execMainExitMs: number;
  execMainExitMono: number;
  execMainPid: number;
  execMainCode: number;
  execMainStatus: number;
  stateChangeMs: number;
  activeEnterMs: number;
  activeExitMs: number;
  inactiveEnterMs: number;
  starts: number[];
  restartTimer?: NodeJS.Timeout;
  stopTimer?: NodeJS.Timeout;
  stopping: boolean;
  stopTimedOut: boolean;
  waiters: Array<() => void>;
  invocationId: string;
  argvLine: string;
}

export type StartOutcome = { ok: true } | { ok: false; reason: "not-found" | "bad-setting" | "start-limit-hit" | "exit-code" | "resources" };

const CLEAN_SIGNALS = new Set(["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"]);
const EXIT_NAMES: Record<number, string> = {
  0: "SUCCESS",
  1: "FAILURE",
  2: "INVALIDARGUMENT",
  3: "NOTIMPLEMENTED",
  4: "NOPERMISSION",
  5: "NOTINSTALLED",
  6: "NOTCONFIGURED",
  7: "NOTRUNNING",
  200: "CHDIR",
  203: "EXEC",
};

export function exitStatusText(code: number, status: number): string {
  if (code === 2 || code === 3) {
    const name = Object.entries(os.constants.signals).find(([, n]) => n === status)?.[0] ?? String(status);
    return `code=${code === 3 ? "dumped" : "killed"}, status=${status}/${name.replace(/^SIG/, "")}`;
  }
  return `code=exited, status=${status}${EXIT_NAMES[status] ? `/${EXIT_NAMES[status]}` : ""}`;
}

export interface ManagerOptions {
  unitDir: string;
  journal: JournalWriter;
  journalDir: string;
  hostname: string;
  managerEnv: Record<string, string>;
}

export class Manager {
  readonly units = new Map<string, Unit>();

  constructor(readonly opts: ManagerOptions) {}

  // ---- loading ------------------------------------------------------------------

  private files(name: string): { fragment: string; dropIns: string[] } {
    const fragment = path.join(this.opts.unitDir, name);
    const dropDir = `${fragment}.d`;
    let dropIns: string[] = [];
    try {
      dropIns = fs.readdirSync(dropDir).filter((f) => f.endsWith(".conf")).sort().map((f) => path.join(dropDir, f));
    } catch {
      // no drop-ins
    }
    return { fragment, dropIns };
  }

  /** Current contents on disk (fragment + drop-ins), or null when the fragment is gone. */
  diskText(name: string): string | null {
    const { fragment, dropIns } = this.files(name);
    if (!fs.existsSync(fragment)) return null;
    return [fragment, ...dropIns].map((f) => `${f}\0${fs.readFileSync(f, "utf8")}`).join("\0");
  }

  private fresh(name: string): Unit {
    return {
      name,
      loadState: "not-found",
      fragmentPath: "",
      dropIns: [],
      loadedText: "",
      activeState: "inactive",
      subState: "dead",
      result: "success",
      mainPid: 0,
      ident: "",
      nRestarts: 0,
      execMainStartMs: 0,
      execMainStartMono: 0,
      execMainExitMs: 0,
      execMainExitMono: 0,
      execMainPid: 0,
      execMainCode: 0,
      execMainStatus: 0,
      stateChangeMs: 0,
      activeEnterMs: 0,
      activeExitMs: 0,
      inactiveEnterMs: 0,
      starts: [],
      stopping: false,
      stopTimedOut: false,
      waiters: [],
      invocationId: "",
      argvLine: "",
    };
  }

  private loadInto(u: Unit): void {
    const { fragment, dropIns } = this.files(u.name);
    const text = this.diskText(u.name);
    if (text === null) {
      u.loadState = "not-found";
      u.def = undefined;
      u.fragmentPath = "";
      u.dropIns = [];
      u.loadedText = "";
      return;
    }
    const parsed = parseUnitText([fragment, ...dropIns].map((f) => fs.readFileSync(f, "utf8")));
    const built = buildServiceDef(u.name, parsed, this.opts.hostname);
    for (const w of built.warnings) this.log(u.name, w);
    u.def = built.def;
    u.badSetting = built.badSetting;
    if (built.badSetting) this.log(u.name, built.badSetting);
    u.loadState = built.badSetting ? "bad-setting" : "loaded";
    u.fragmentPath = fragment;
    u.dropIns = dropIns;
    u.loadedText = text;
  }

  /** The unit, loading it from disk on first reference; undefined when no such unit file exists. */
  get(name: string): Unit | undefined {
    let u = this.units.get(name);
    if (!u) {
      if (this.diskText(name) === null) return undefined;
      u = this.fresh(name);
      this.loadInto(u);
      this.units.set(name, u);
    }
    return u;
  }

  needsReload(u: Unit): boolean {
    return u.loadState !== "not-found" && this.diskText(u.name) !== u.loadedText;
  }

  daemonReload(): void {
    for (const u of [...this.units.values()]) {
      this.loadInto(u);
      if (u.loadState === "not-found" && u.activeState === "inactive") this.units.delete(u.name);
    }
  }

  /** Inactive units nothing refers to are unloaded (systemd's GC); enabled or failed ones stay. */
  gc(): void {
    for (const u of [...this.units.values()]) {
      if (u.activeState === "inactive" && !u.restartTimer && this.enablement(u.name) !== "enabled") this.units.delete(u.name);
    }
  }

  // ---- enablement ---------------------------------------------------------------

  private wantsLinks(name: string): string[] {
    const out: string[] = [];
    let dirs: string[] = [];
    try {
      dirs = fs.readdirSync(this.opts.unitDir).filter((d) => d.endsWith(".wants") || d.endsWith(".requires"));
    } catch {
      return out;
    }
    for (const d of dirs) {
      const link = path.join(this.opts.unitDir, d, name);
      try {
        fs.lstatSync(link);
        out.push(link);
      } catch {
        // not linked there
      }
    }
    return out;
  }

  enablement(name: string): "enabled" | "disabled" | "static" | "not-found" {
    const text = this.diskText(name);
    if (text === null) return "not-found";
    if (this.wantsLinks(name).length > 0) return "enabled";
    const { fragment, dropIns } = this.files(name);
    const built = buildServiceDef(name, parseUnitText([fragment, ...dropIns].map((f) => fs.readFileSync(f, "utf8"))), this.opts.hostname);
    return built.def.hasInstall ? "disabled" : "static";
  }

  /** Creates the [Install] symlinks; returns systemctl's messages. */
  enable(name: string): { ok: boolean; messages: string[] } {
    const { fragment, dropIns } = this.files(name);
    if (!fs.existsSync(fragment)) return { ok: false, messages: [`Failed to enable unit: Unit file ${name} does not exist.`] };
    const def = buildServiceDef(name, parseUnitText([fragment, ...dropIns].map((f) => fs.readFileSync(f, "utf8"))), this.opts.hostname).def;
    if (!def.hasInstall) {
      return {
        ok: true,
        messages: [
          "The unit files have no installation config (WantedBy=, RequiredBy=, Also=,",
          "Alias= settings in the [Install] section, and DefaultInstance= for template",
          "units). This means they are not meant to be enabled or disabled using systemctl.",
        ],
      };
    }
    const messages: string[] = [];
    for (const [target, suffix] of [...def.wantedBy.map((t): [string, string] => [t, "wants"]), ...def.requiredBy.map((t): [string, string] => [t, "requires"])]) {
      const dir = path.join(this.opts.unitDir, `${target}.${suffix}`);
      const link = path.join(dir, name);
      if (fs.existsSync(link)) continue;
      fs.mkdirSync(dir, { recursive: true });
      fs.symlinkSync(fragment, link);
      messages.push(`Created symlink ${link} → ${fragment}.`);
    }
    return { ok: true, messages };
  }

  disable(name: string): { ok: boolean; messages: string[] } {
    if (!fs.existsSync(this.files(name).fragment) && this.wantsLinks(name).length === 0) {
      return { ok: false, messages: [`Failed to disable unit: Unit file ${name} does not exist.`] };
    }
    const messages: string[] = [];
    for (const link of this.wantsLinks(name)) {
      fs.rmSync(link, { force: true });
      messages.push(`Removed "${link}".`);
    }
    return { ok: true, messages };
  }

  /** Units linked from any *.wants directory: started at boot. */
  enabledUnits(): string[] {
    const out = new Set<string>();
    let dirs: string[] = [];
    try {
      dirs = fs.readdirSync(this.opts.unitDir).filter((d) => d.endsWith(".wants"));
    } catch {
      return [];
    }
    for (const d of dirs) for (const f of fs.readdirSync(path.join(this.opts.unitDir, d))) if (f.endsWith(".service")) out.add(f);
    return [...out].sort();
  }

  // ---- state --------------------------------------------------------------------

  private log(unit: string, message: string, ident = "systemd", pid = 1): void {
    this.opts.journal.append(unit, ident, pid, message);
  }

  private setState(u: Unit, active: ActiveState, sub: string): void {
    const now = Date.now();
    if (u.activeState !== active) {
      if (active === "active") u.activeEnterMs = now;
      if (u.activeState === "active") u.activeExitMs = now;
      if (active === "inactive" || active === "failed") u.inactiveEnterMs = now;
      u.stateChangeMs = now;
    }
    u.activeState = active;
    u.subState = sub;
    if (active !== "deactivating") {
      const w = u.waiters;
      u.waiters = [];
      for (const f of w) f();
    }
  }

  private label(u: Unit): string {
    return u.def && u.def.description !== u.name ? `${u.name} - ${u.def.description}` : u.name;
  }

  // ---- start --------------------------------------------------------------------

  async start(name: string, manual = true): Promise<StartOutcome> {
    const u = this.get(name);
    if (!u || u.loadState === "not-found") return { ok: false, reason: "not-found" };
    if (u.loadState === "bad-setting" || !u.def) return { ok: false, reason: "bad-setting" };
    if (u.activeState === "deactivating") await new Promise<void>((r) => u.waiters.push(r));
    if (u.activeState === "active" || (u.activeState === "activating" && !u.restartTimer)) return { ok: true };
    if (u.restartTimer) {
      clearTimeout(u.restartTimer);
      u.restartTimer = undefined;
    }
    if (manual) u.nRestarts = 0;
    return this.startProcess(u);
  }

  private startLimitHit(u: Unit): boolean {
    const def = u.def!;
    const now = Date.now();
    if (def.startLimitIntervalMs <= 0 || def.startLimitBurst <= 0) return false;
    u.starts = u.starts.filter((t) => now - t < def.startLimitIntervalMs);
    if (u.starts.length >= def.startLimitBurst) return true;
    u.starts.push(now);
    return false;
  }

  private async startProcess(u: Unit): Promise<StartOutcome> {
    const def = u.def!;
    if (this.startLimitHit(u)) {
      this.log(u.name, `${u.name}: Start request repeated too quickly.`);
      this.log(u.name, `${u.name}: Failed with result 'start-limit-hit'.`);
      this.log(u.name, `Failed to start ${this.label(u)}.`);
      u.result = "start-limit-hit";
      this.setState(u, "failed", "failed");
      return { ok: false, reason: "start-limit-hit" };
    }
    u.result = "success";
    u.invocationId = randomBytes(16).toString("hex");
    const env: Record<string, string> = { ...this.opts.managerEnv, INVOCATION_ID: u.invocationId };
    for (const [k, v] of def.environment) env[k] = v;
    for (const f of def.environmentFiles) {
      try {
        for (const [k, v] of parseEnvironmentFile(fs.readFileSync(f.path, "utf8"))) env[k] = v;
      } catch {
        if (f.optional) continue;
        this.log(u.name, `${u.name}: Failed to load environment files: No such file or directory`);
        this.log(u.name, `${u.name}: Failed to run 'start' task: No such file or directory`);
        this.log(u.name, `${u.name}: Failed with result 'resources'.`);
        this.log(u.name, `Failed to start ${this.label(u)}.`);
        u.result = "resources";
        this.setState(u, "failed", "failed");
        return { ok: false, reason: "resources" };
      }
    }
    if (def.type === "oneshot") return this.runOneshot(u, env);
    const cmd = def.execStart[0]!;
    const argv = cmd.noEnvExpand ? cmd.argv : expandEnvInArgv(cmd.argv, env);
    const exe = this.resolveExecutable(cmd.path, env.PATH ?? "");
    u.ident = path.basename(cmd.path);
    u.argvLine = argv.join(" ");
    u.execMainStartMs = Date.now();
    u.execMainStartMono = Number(process.hrtime.bigint() / 1000n);
    u.execMainCode = 0;
    u.execMainStatus = 0;
    u.stopping = false;
    u.stopTimedOut = false;
    const cwd = def.workingDirectory?.path ?? "/";
    if (!exe || (def.workingDirectory && !def.workingDirectory.optional && !fs.existsSync(cwd))) {
      // The fork succeeds, the exec fails: systemd reports it as the main process exiting 203/EXEC (200/CHDIR).
      const code = exe ? 200 : 203;
      this.setState(u, "active", "running");
      this.log(u.name, `Started ${this.label(u)}.`);
      const pid = 0;
      if (!exe) {
        this.log(u.name, `${u.name}: Failed to locate executable ${cmd.path}: No such file or directory`);
        this.log(u.name, `${u.name}: Failed at step EXEC spawning ${cmd.path}: No such file or directory`);
      } else {
        this.log(u.name, `${u.name}: Changing to the requested working directory failed: No such file or directory`);
        this.log(u.name, `${u.name}: Failed at step CHDIR spawning ${cmd.path}: No such file or directory`);
      }
      setImmediate(() => this.onMainExit(u, pid, code, null));
      return { ok: true };
    }
    const child = spawn(exe, argv.slice(1), {
      argv0: argv[0],
      cwd: fs.existsSync(cwd) ? cwd : "/",
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const pid = child.pid ?? 0;
    u.child = child;
    u.mainPid = pid;
    u.execMainPid = pid;
    this.setState(u, "active", "running");
    this.log(u.name, `Started ${this.label(u)}.`);
    this.pump(u.name, child.stdout!, u.ident, pid);
    this.pump(u.name, child.stderr!, u.ident, pid);
    let exited = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (exited) return;
      exited = true;
      this.onMainExit(u, pid, code ?? 0, signal);
    };
    child.on("error", (err) => {
      this.log(u.name, `${u.name}: Failed at step EXEC spawning ${cmd.path}: ${err.message}`);
      finish(203, null);
    });
    // 'close' comes after the output is drained; a grandchild holding the pipes must not delay the exit.
    child.on("exit", (code, signal) => {
      const t = setTimeout(() => finish(code, signal), 500);
      child.once("close", () => {
        clearTimeout(t);
        finish(code, signal);
      });
    });
    return { ok: true };
  }

  /** A process's output, line by line, into the journal. */
  private pump(unit: string, stream: NodeJS.ReadableStream, ident: string, pid: number): void {
    let buf = "";
    stream.setEncoding("utf8");
    stream.on("data", (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        this.log(unit, buf.slice(0, nl).replace(/\r$/, ""), ident, pid);
        buf = buf.slice(nl + 1);
      }
    });
    stream.on("end", () => {
      if (buf) this.log(unit, buf, ident, pid);
      buf = "";
    });
  }

  private async runOneshot(u: Unit, env: Record<string, string>): Promise<StartOutcome> {
    const def = u.def!;
    this.setState(u, "activating", "start");
    this.log(u.name, `Starting ${this.label(u)}...`);
    for (const cmd of def.execStart) {
      const argv = cmd.noEnvExpand ? cmd.argv : expandEnvInArgv(cmd.argv, env);
      const exe = this.resolveExecutable(cmd.path, env.PATH ?? "");
      const code = await new Promise<number>((resolve) => {
        if (!exe) return resolve(203);
        const child = spawn(exe, argv.slice(1), { argv0: argv[0], env, stdio: ["ignore", "pipe", "pipe"] });
        const ident = path.basename(cmd.path);
        for (const s of [child.stdout!, child.stderr!]) this.pump(u.name, s, ident, child.pid ?? 0);
        child.on("error", () => resolve(203));
        child.on("close", (c, sig) => resolve(sig ? 128 + (os.constants.signals[sig] ?? 0) : (c ?? 0)));
      });
      if (code !== 0 && !cmd.ignoreFailure) {
        this.log(u.name, `${u.name}: Main process exited, ${exitStatusText(1, code)}`);
        this.log(u.name, `${u.name}: Failed with result 'exit-code'.`);
        this.log(u.name, `Failed to start ${this.label(u)}.`);
        u.result = "exit-code";
        this.setState(u, "failed", "failed");
        return { ok: false, reason: "exit-code" };
      }
    }
    if (def.remainAfterExit) this.setState(u, "active", "exited");
    else {
      this.log(u.name, `${u.name}: Deactivated successfully.`);
      this.setState(u, "inactive", "dead");
    }
    this.log(u.name, `Finished ${this.label(u)}.`);
    return { ok: true };
  }

  private resolveExecutable(p: string, pathVar: string): string | null {
    const ok = (f: string) => {
      try {
        fs.accessSync(f, fs.constants.X_OK);
        return fs.statSync(f).isFile();
      } catch {
        return false;
      }
    };
    if (p.startsWith("/")) return ok(p) ? p : null;
    for (const dir of pathVar.split(":")) if (dir && ok(path.join(dir, p))) return path.join(dir, p);
    return null;
  }

  private onMainExit(u: Unit, pid: number, code: number, signal: NodeJS.Signals | null): void {
    const def = u.def!;
    if (pid > 0) {
      try {
        process.kill(-pid, "SIGKILL"); // KillMode=control-group: what is left of the unit goes too
      } catch {
        // group already empty
      }
    }
    u.child = undefined;
    u.mainPid = 0;
    u.execMainExitMs = Date.now();
    u.execMainExitMono = Number(process.hrtime.bigint() / 1000n);
    u.execMainCode = signal ? 2 : 1;
    u.execMainStatus = signal ? (os.constants.signals[signal] ?? 0) : code;
    const status = exitStatusText(u.execMainCode, u.execMainStatus);
    const clean = signal ? CLEAN_SIGNALS.has(signal) : code === 0 || def.successExitStatus.includes(code);
    if (u.stopTimer) clearTimeout(u.stopTimer);
    u.stopTimer = undefined;
    if (u.stopping) {
      u.stopping = false;
      if (u.stopTimedOut) {
        u.result = "timeout";
        this.log(u.name, `${u.name}: Failed with result 'timeout'.`);
        this.log(u.name, `Stopped ${this.label(u)}.`);
        this.setState(u, "failed", "failed");
      } else if (!clean) {
        u.result = signal ? "signal" : "exit-code";
        this.log(u.name, `${u.name}: Main process exited, ${status}`);
        this.log(u.name, `${u.name}: Failed with result '${u.result}'.`);
        this.log(u.name, `Stopped ${this.label(u)}.`);
        this.setState(u, "failed", "failed");
      } else {
        this.log(u.name, `${u.name}: Deactivated successfully.`);
        this.log(u.name, `Stopped ${this.label(u)}.`);
        this.setState(u, "inactive", "dead");
      }
      return;
    }
    if (clean) {
      if (code !== 0 || signal) this.log(u.name, `${u.name}: Main process exited, ${status}`);
      this.log(u.name, `${u.name}: Deactivated successfully.`);
      u.result = "success";
    } else {
      u.result = signal ? "signal" : "exit-code";
      this.log(u.name, `${u.name}: Main process exited, ${status}`);
      this.log(u.name, `${u.name}: Failed with result '${u.result}'.`);
    }
    const unclean = signal !== null && !CLEAN_SIGNALS.has(signal);
    const restart =
      def.restart === "always" ||
      (def.restart === "on-success" && clean) ||
      (def.restart === "on-failure" && !clean) ||
      ((def.restart === "on-abnormal" || def.restart === "on-abort") && unclean);
    if (!restart) {
      this.setState(u, clean ? "inactive" : "failed", clean ? "dead" : "failed");
      return;
    }
    this.setState(u, "activating", "auto-restart");
    u.restartTimer = setTimeout(() => {
      u.restartTimer = undefined;
      u.nRestarts++;
      this.log(u.name, `${u.name}: Scheduled restart job, restart counter is at ${u.nRestarts}.`);
      this.log(u.name, `Stopped ${this.label(u)}.`);
      void this.startProcess(u);
    }, def.restartMs);
  }

  // ---- stop ---------------------------------------------------------------------

  async stop(name: string): Promise<"ok" | "not-loaded"> {
    const u = this.units.get(name) ?? this.get(name);
    if (!u) return "not-loaded";
    if (u.restartTimer) {
      clearTimeout(u.restartTimer);
      u.restartTimer = undefined;
      this.log(u.name, `Stopped ${this.label(u)}.`);
      this.setState(u, "inactive", "dead");
      return "ok";
    }
    if (u.activeState === "deactivating") {
      await new Promise<void>((r) => u.waiters.push(r));
      return "ok";
    }
    if (u.activeState === "active" && u.subState === "exited") {
      this.setState(u, "inactive", "dead");
      return "ok";
    }
    if (u.activeState !== "active" || u.mainPid <= 0) return "ok";
    const def = u.def!;
    const pid = u.mainPid;
    u.stopping = true;
    this.setState(u, "deactivating", "stop-sigterm");
    this.log(u.name, `Stopping ${this.label(u)}...`);
    const done = new Promise<void>((r) => u.waiters.push(r));
    this.signalGroup(pid, def.killSignal);
    if (def.timeoutStopMs !== Infinity) {
      u.stopTimer = setTimeout(() => {
        u.stopTimedOut = true;
        this.log(u.name, `${u.name}: State 'stop-sigterm' timed out. Killing.`);
        this.log(u.name, `${u.name}: Killing process ${pid} (${u.ident}) with signal SIGKILL.`);
        u.subState = "stop-sigkill";
        this.signalGroup(pid, "SIGKILL");
      }, def.timeoutStopMs);
    }
    await done;
    return "ok";
  }

  private signalGroup(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        // gone
      }
    }
  }

  kill(name: string, signal: NodeJS.Signals): boolean {
    const u = this.units.get(name);
    if (!u || u.mainPid <= 0) return false;
    this.signalGroup(u.mainPid, signal);
    return true;
  }

  resetFailed(name?: string): void {
    for (const u of this.units.values()) {
      if (name && u.name !== name) continue;
      u.starts = [];
      if (u.activeState === "failed") {
        u.result = "success";
        this.setState(u, "inactive", "dead");
      }
    }
  }

  async boot(): Promise<void> {
    for (const name of this.enabledUnits()) await this.start(name, true);
  }

  async shutdown(capMs: number): Promise<void> {
    const active = [...this.units.values()].filter((u) => u.mainPid > 0 || u.restartTimer);
    await Promise.race([Promise.all(active.map((u) => this.stop(u.name))), new Promise((r) => setTimeout(r, capMs))]);
    for (const u of this.units.values()) if (u.mainPid > 0) this.signalGroup(u.mainPid, "SIGKILL");
  }
}
