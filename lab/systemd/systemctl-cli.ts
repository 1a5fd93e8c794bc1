// systemctl's command line, evaluated inside the supervisor (it holds the
// state). Output texts and exit codes follow systemd 252 (Debian 12).
import * as fs from "fs";
import * as os from "os";
import { exitStatusText, Manager, Unit } from "./manager";
import { formatShort, formatTimestamp, readEntries } from "./journal";
import { formatTimespan } from "./unit-file";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface Opts {
  properties: string[];
  value: boolean;
  quiet: boolean;
  now: boolean;
  noReload: boolean;
  all: boolean;
  lines: number;
  signal: NodeJS.Signals;
}

const VERBS = new Set([
  "start", "stop", "restart", "try-restart", "reload-or-restart", "is-active", "is-failed", "is-enabled", "enable", "disable",
  "daemon-reload", "show", "cat", "status", "kill", "reset-failed", "list-units", "list-unit-files",
]);

export function unitName(arg: string): string {
  return /\.(service|socket|target|timer|mount|path|slice|scope|device|swap|automount)$/.test(arg) ? arg : `${arg}.service`;
}

const changedWarning = (name: string) =>
  `Warning: The unit file, source configuration file or drop-ins of ${name} changed on disk. Run 'systemctl daemon-reload' to reload units.\n`;

function parseArgs(argv: string[]): { opts: Opts; args: string[]; error?: string } {
  const opts: Opts = { properties: [], value: false, quiet: false, now: false, noReload: false, all: false, lines: 10, signal: "SIGTERM" };
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const takeValue = (): string | undefined => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i]);
    if (a === "--") {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith("-") || a === "-") {
      args.push(a);
      continue;
    }
    if (a === "-p" || a.startsWith("--property") || (a.startsWith("-p") && !a.startsWith("--"))) {
      const v = a.startsWith("-p") && a.length > 2 && !a.startsWith("--") ? a.slice(2) : takeValue();
      if (v === undefined) return { opts, args, error: "systemctl: option requires an argument -- 'p'" };
      opts.properties.push(...v.split(",").filter(Boolean));
    } else if (a === "-n" || a.startsWith("--lines")) {
      const v = takeValue();
      opts.lines = Number(v ?? 10);
    } else if (a === "-s" || a.startsWith("--signal") || a.startsWith("--kill-signal")) {
      const v = takeValue() ?? "SIGTERM";
      opts.signal = (/^\d+$/.test(v) ? v : v.startsWith("SIG") ? v : `SIG${v}`) as NodeJS.Signals;
    } else if (a === "--value") opts.value = true;
    else if (a === "-q" || a === "--quiet") opts.quiet = true;
    else if (a === "--now") opts.now = true;
    else if (a === "--no-reload") opts.noReload = true;
    else if (a === "-a" || a === "--all") opts.all = true;
    else if (["--no-pager", "--no-ask-password", "--no-block", "--system", "--plain", "--full", "-l", "--no-legend", "--force", "-f"].includes(a)) continue;
    else if (a === "--version") return { opts, args: ["--version"] };
    else if (/^--(type|state|output|job-mode|kill-whom|what)=/.test(a) || a === "-t") {
      if (!a.includes("=")) i++;
    } else return { opts, args, error: a.startsWith("--") ? `systemctl: unrecognized option '${a}'` : `systemctl: invalid option -- '${a.slice(1, 2)}'` };
  }
  return { opts, args };
}

export async function runSystemctl(m: Manager, argv: string[]): Promise<CliResult> {
  const { opts, args, error } = parseArgs(argv);
  if (error) return { code: 1, stdout: "", stderr: `${error}\n` };
  if (args[0] === "--version") return { code: 0, stdout: "systemd 252 (252.39-1~deb12u1)\n+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified\n", stderr: "" };
  const verb = args[0] ?? "list-units";
  const units = args.slice(1).map(unitName);
  if (!VERBS.has(verb)) return { code: 1, stdout: "", stderr: `Unknown command verb ${verb}.\n` };
  const needUnits = !["daemon-reload", "reset-failed", "list-units", "list-unit-files", "show"].includes(verb);
  if (needUnits && units.length === 0) return { code: 1, stdout: "", stderr: `Too few arguments.\n` };
  let out = "";
  let err = "";
  let code = 0;
  try {
    switch (verb) {
      case "daemon-reload":
        m.daemonReload();
        break;
      case "start":
      case "restart":
      case "try-restart":
      case "reload-or-restart":
        for (const name of units) {
          const u = m.get(name);
          if (u && m.needsReload(u)) err += changedWarning(name);
          if (!u) {
            err += verb === "try-restart" ? "" : `Failed to ${verb === "start" ? "start" : "restart"} ${name}: Unit ${name} not found.\n`;
            code = verb === "try-restart" ? code : 5;
            continue;
          }
          if (verb === "try-restart" && u.activeState !== "active") continue;
          if (verb !== "start") await m.stop(name);
          const r = await m.start(name, true);
          if (!r.ok) {
            if (r.reason === "bad-setting") {
              err += `Failed to ${verb === "start" ? "start" : "restart"} ${name}: Unit ${name} has a bad unit file setting.\nSee system logs and 'systemctl status ${name}' for details.\n`;
              code = 1;
            } else if (r.reason === "not-found") {
              err += `Failed to start ${name}: Unit ${name} not found.\n`;
              code = 5;
            } else {
              err += jobFailed(name, r.reason);
              code = 1;
            }
          }
        }
        break;
      case "stop":
        for (const name of units) {
          const u = m.get(name);
          if (u && m.needsReload(u)) err += changedWarning(name);
          if ((await m.stop(name)) === "not-loaded") {
            err += `Failed to stop ${name}: Unit ${name} not loaded.\n`;
            code = 5;
          }
        }
        break;
      case "kill":
        for (const name of units) {
          if (!m.kill(name, opts.signal)) {
            err += `Failed to kill unit ${name}: No main process to kill\n`;
            code = 1;
          }
        }
        break;
      case "reset-failed":
        if (units.length === 0) m.resetFailed();
        for (const name of units) m.resetFailed(name);
        break;
      case "is-active":
      case "is-failed": {
        let any = false;
        for (const name of units) {
          const state = m.units.get(name)?.activeState ?? "inactive";
          if (!opts.quiet) out += `${state}\n`;
          if (verb === "is-active" ? state === "active" || state === "reloading" : state === "failed") any = true;
        }
        code = any ? 0 : verb === "is-active" ? 3 : 1;
        break;
      }
      case "is-enabled": {
        let any = false;
        for (const name of units) {
          const state = m.enablement(name);
          if (state === "not-found") {
            err += `Failed to get unit file state for ${name}: No such file or directory\n`;
            continue;
          }
          if (!opts.quiet) out += `${state}\n`;
          if (state === "enabled" || state === "static") any = true;
        }
        code = any ? 0 : 1;
        break;
      }
      case "enable":
      case "disable":
        for (const name of units) {
          const r = verb === "enable" ? m.enable(name) : m.disable(name);
          if (!opts.quiet || !r.ok) err += r.messages.map((l) => `${l}\n`).join("");
          if (!r.ok) {
            code = 1;
            continue;
          }
          if (!opts.noReload) m.daemonReload();
          if (opts.now) {
            if (verb === "enable") {
              const s = await m.start(name, true);
              if (!s.ok) {
                err += s.reason === "bad-setting" ? `Failed to start ${name}: Unit ${name} has a bad unit file setting.\n` : jobFailed(name, s.reason);
                code = 1;
              }
            } else await m.stop(name);
          }
        }
        break;
      case "show": {
        const targets = units.length > 0 ? units : [];
        const blocks: string[] = [];
        for (const name of targets) {
          const props = properties(m, name);
          const wanted = opts.properties.length > 0 ? props.filter(([k]) => opts.properties.includes(k)) : props;
          blocks.push(wanted.map(([k, v]) => (opts.value ? `${v}\n` : `${k}=${v}\n`)).join(""));
        }
        out += blocks.join("\n");
        break;
      }
      case "cat": {
        const parts: string[] = [];
        for (const name of units) {
          const u = m.get(name);
          if (!u || u.loadState === "not-found") {
            err += `No files found for ${name}.\n`;
            code = 1;
            continue;
          }
          let text = "";
          if (m.needsReload(u)) {
            text += `# Warning: ${name} changed on disk, the version systemd has loaded is outdated.\n# This output shows the current version of the unit's original fragment and drop-in files.\n# If fragments or drop-ins were added or removed, they are not properly reflected in this output.\n# Run 'systemctl daemon-reload' to reload units.\n`;
          }
          text += `# ${u.fragmentPath}\n${fs.readFileSync(u.fragmentPath, "utf8")}`;
          for (const d of u.dropIns) if (fs.existsSync(d)) text += `\n# ${d}\n${fs.readFileSync(d, "utf8")}`;
          parts.push(text);
        }
        out += parts.join("\n");
        break;
      }
      case "status": {
        const parts: string[] = [];
        for (const name of units) {
          const u = m.get(name);
          if (!u) {
            err += `Unit ${name} could not be found.\n`;
            code = 4;
            continue;
          }
          if (m.needsReload(u)) err += changedWarning(name);
          parts.push(statusText(m, u, opts.lines));
          if (code === 0 && u.activeState !== "active" && u.activeState !== "reloading") code = 3;
        }
        out += parts.join("\n");
        break;
      }
      case "list-units":
      case "list-unit-files": {
        const names = new Set([...m.units.keys(), ...m.enabledUnits()]);
        out += "  UNIT LOAD ACTIVE SUB DESCRIPTION\n";
        for (const n of [...names].sort()) {
          const u = m.get(n);
          if (!u) continue;
          out += `  ${n} ${u.loadState} ${u.activeState} ${u.subState} ${u.def?.description ?? ""}\n`;
        }
        break;
      }
      default:
        return { code: 1, stdout: "", stderr: `Unknown command verb ${verb}.\n` };
    }
  } finally {
    m.gc();
  }
  return { code, stdout: out, stderr: err };
}

function jobFailed(name: string, reason: string): string {
  const why: Record<string, string> = {
    "start-limit-hit": "start of the service was attempted too often",
    "exit-code": "the control process exited with error code",
    resources: "of unavailable resources or another system error",
  };
  let s = `Job for ${name} failed because ${why[reason] ?? "the service failed"}.\nSee "systemctl status ${name}" and "journalctl -xeu ${name}" for details.\n`;
  if (reason === "start-limit-hit") s += `To force a start use "systemctl reset-failed ${name}"\nfollowed by "systemctl start ${name}" again.\n`;
  return s;
}

const ts = (ms: number) => (ms > 0 ? formatTimestamp(ms) : "");

/** `systemctl show` properties in systemd's order (Service interface, then Unit). */
export function properties(m: Manager, name: string): Array<[string, string]> {
  const u = m.units.get(name) ?? m.get(name);
  const def = u?.def;
  const loadState = u?.loadState ?? "not-found";
  const cmd = def?.execStart[0];
  const execStart = cmd
    ? `{ path=${cmd.path} ; argv[]=${cmd.argv.join(" ")} ; ignore_errors=${cmd.ignoreFailure ? "yes" : "no"} ; start_time=[${u && u.execMainStartMs ? formatTimestamp(u.execMainStartMs) : "n/a"}] ; stop_time=[${u && u.execMainExitMs ? formatTimestamp(u.execMainExitMs) : "n/a"}] ; pid=${u?.execMainPid ?? 0} ; code=${u && u.execMainCode ? (u.execMainCode === 1 ? "exited" : "killed") : "(null)"} ; status=${u?.execMainStatus ?? 0}/0 }`
    : "";
  const env = (def?.environment ?? []).map(([k, v]) => (/[\s"'\\]/.test(k + v) ? `"${k}=${v.replace(/(["\\])/g, "\\$1")}"` : `${k}=${v}`)).join(" ");
  const unitFileState = loadState === "not-found" ? "" : m.enablement(name) === "not-found" ? "" : m.enablement(name);
  const p: Array<[string, string]> = [
    ["Type", def?.type ?? "simple"],
    ["Restart", def?.restart ?? "no"],
    ["NotifyAccess", "none"],
    ["RestartUSec", formatTimespan(def?.restartMs ?? 100)],
    ["TimeoutStartUSec", "1min 30s"],
    ["TimeoutStopUSec", formatTimespan(def?.timeoutStopMs ?? 90_000)],
    ["RemainAfterExit", def?.remainAfterExit ? "yes" : "no"],
    ["MainPID", String(u?.mainPid ?? 0)],
    ["ControlPID", "0"],
    ["Result", u?.result ?? "success"],
    ["NRestarts", String(u?.nRestarts ?? 0)],
    ["ExecMainStartTimestamp", ts(u?.execMainStartMs ?? 0)],
    ["ExecMainStartTimestampMonotonic", String(u?.execMainStartMono ?? 0)],
    ["ExecMainExitTimestamp", ts(u?.execMainExitMs ?? 0)],
    ["ExecMainExitTimestampMonotonic", String(u?.execMainExitMono ?? 0)],
    ["ExecMainPID", String(u?.execMainPid ?? 0)],
    ["ExecMainCode", String(u?.execMainCode ?? 0)],
    ["ExecMainStatus", String(u?.execMainStatus ?? 0)],
    ["ExecStart", execStart],
    ["Environment", env],
    ["EnvironmentFiles", (def?.environmentFiles ?? []).map((f) => `${f.path} (ignore_errors=${f.optional ? "yes" : "no"})`).join(" ")],
    ["WorkingDirectory", def?.workingDirectory?.path ?? ""],
    ["KillMode", "control-group"],
    ["KillSignal", String(def ? (os.constants.signals[def.killSignal] ?? 15) : 15)],
    ["Id", name],
    ["Names", name],
    ["Description", def?.description ?? name],
    ["LoadState", loadState],
    ["ActiveState", u?.activeState ?? "inactive"],
    ["FreezerState", "running"],
    ["SubState", u?.subState ?? "dead"],
    ["FragmentPath", u?.fragmentPath ?? ""],
    ["DropInPaths", (u?.dropIns ?? []).join(" ")],
    ["UnitFileState", unitFileState],
    ["UnitFilePreset", loadState === "not-found" ? "" : "enabled"],
    ["StateChangeTimestamp", ts(u?.stateChangeMs ?? 0)],
    ["ActiveEnterTimestamp", ts(u?.activeEnterMs ?? 0)],
    ["ActiveExitTimestamp", ts(u?.activeExitMs ?? 0)],
    ["InactiveEnterTimestamp", ts(u?.inactiveEnterMs ?? 0)],
    ["CanStart", loadState === "loaded" ? "yes" : "no"],
    ["CanStop", loadState === "loaded" ? "yes" : "no"],
    ["StartLimitIntervalUSec", formatTimespan(def?.startLimitIntervalMs ?? 10_000)],
    ["StartLimitBurst", String(def?.startLimitBurst ?? 5)],
    ["NeedDaemonReload", u && m.needsReload(u) ? "yes" : "no"],
    ["InvocationID", u?.invocationId ?? ""],
  ];
  if (loadState === "not-found") p.push(["LoadError", `org.freedesktop.systemd1.NoSuchUnit "Unit ${name} not found."`]);
  return p;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}min ${s % 60}s ago`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}min ago`;
}

function statusText(m: Manager, u: Unit, lines: number): string {
  const def = u.def;
  const dot = u.activeState === "failed" ? "×" : u.activeState === "inactive" ? "○" : "●";
  const enab = m.enablement(u.name);
  let s = `${dot} ${u.name}${def ? ` - ${def.description}` : ""}\n`;
  if (u.loadState === "not-found") s += `     Loaded: not-found (Reason: Unit ${u.name} not found.)\n`;
  else s += `     Loaded: ${u.loadState} (${u.fragmentPath}; ${enab}; preset: enabled)\n`;
  if (u.dropIns.length > 0) {
    s += `    Drop-In: ${u.dropIns[0]!.replace(/\/[^/]+$/, "")}\n`;
    s += u.dropIns.map((d) => `             └─${d.replace(/^.*\//, "")}\n`).join("");
  }
  const result = u.result !== "success" ? ` (Result: ${u.result})` : "";
  const since = u.stateChangeMs ? ` since ${formatTimestamp(u.stateChangeMs)}; ${ago(u.stateChangeMs)}` : "";
  s += `     Active: ${u.activeState} (${u.subState})${u.activeState === "active" ? "" : result}${since}\n`;
  if (u.mainPid > 0) {
    s += `   Main PID: ${u.mainPid} (${u.ident})\n`;
    s += `     CGroup: /system.slice/${u.name}\n             └─${u.mainPid} ${u.argvLine}\n`;
  } else if (u.execMainPid > 0 && u.execMainCode) {
    const st = exitStatusText(u.execMainCode, u.execMainStatus).replace(/^code=/, "code=");
    s += `    Process: ${u.execMainPid} ExecStart=${u.argvLine} (${st})\n`;
    s += `   Main PID: ${u.execMainPid} (${st})\n`;
  }
  const entries = readEntries(m.opts.journalDir, [u.name]).slice(-lines);
  if (entries.length > 0 && lines > 0) s += `\n${entries.map(formatShort).join("\n")}\n`;
  return s;
}
