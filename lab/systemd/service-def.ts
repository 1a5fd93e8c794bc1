// A loaded service unit: the [Unit]/[Service]/[Install] settings the lab's
// supervisor honours, built from the fragment and its drop-ins.
import { ExecCommand, parseExecLine, expandSpecifiers } from "./exec-line";
import { lastValue, listValues, parseEnvironmentAssignments, parseTimespan, UnitText } from "./unit-file";

export type RestartPolicy = "no" | "always" | "on-success" | "on-failure" | "on-abnormal" | "on-abort" | "on-watchdog";
const RESTART_POLICIES: RestartPolicy[] = ["no", "always", "on-success", "on-failure", "on-abnormal", "on-abort", "on-watchdog"];

export interface ServiceDef {
  description: string;
  type: "simple" | "exec" | "notify" | "oneshot" | "forking" | "idle";
  execStart: ExecCommand[];
  environment: Array<[string, string]>;
  environmentFiles: Array<{ path: string; optional: boolean }>;
  restart: RestartPolicy;
  restartMs: number;
  timeoutStopMs: number;
  startLimitBurst: number;
  startLimitIntervalMs: number;
  killSignal: NodeJS.Signals;
  workingDirectory?: { path: string; optional: boolean };
  remainAfterExit: boolean;
  successExitStatus: number[];
  wantedBy: string[];
  requiredBy: string[];
  hasInstall: boolean;
}

export interface BuiltDef {
  def: ServiceDef;
  /** Set when systemd would refuse the unit (LoadState=bad-setting). */
  badSetting?: string;
  /** Warnings systemd logs while loading (ignored lines). */
  warnings: string[];
}

function bool(v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  return ["1", "yes", "true", "on"].includes(v.toLowerCase());
}

export function buildServiceDef(unit: string, text: UnitText, hostname: string): BuiltDef {
  const warnings: string[] = [];
  let badSetting: string | undefined;
  const ctx = { unit, hostname };
  const typeRaw = lastValue(text, "Service", "Type") ?? "simple";
  const type = (["simple", "exec", "notify", "oneshot", "forking", "idle"].includes(typeRaw) ? typeRaw : "simple") as ServiceDef["type"];
  const execStart: ExecCommand[] = [];
  for (const raw of listValues(text, "Service", "ExecStart")) {
    try {
      const cmd = parseExecLine(raw, ctx);
      if (cmd.path.includes("/") && !cmd.path.startsWith("/")) {
        warnings.push(`${unit}: Neither a valid executable name nor an absolute path: ${cmd.path}`);
        continue;
      }
      execStart.push(cmd);
    } catch (e) {
      warnings.push(`${unit}: ${(e as Error).message}, ignoring: ${raw}`);
    }
  }
  if (execStart.length === 0) badSetting = `${unit}: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing.`;
  else if (execStart.length > 1 && type !== "oneshot") {
    badSetting = `${unit}: Service has more than one ExecStart= setting, which is only allowed for Type=oneshot services. Refusing.`;
  }
  const environment: Array<[string, string]> = [];
  for (const v of listValues(text, "Service", "Environment")) {
    for (const [k, val] of parseEnvironmentAssignments(v)) {
      try {
        environment.push([k, expandSpecifiers(val, ctx)]);
      } catch (e) {
        warnings.push(`${unit}: ${(e as Error).message}`);
      }
    }
  }
  const environmentFiles = listValues(text, "Service", "EnvironmentFile").map((v) => ({
    path: v.replace(/^-/, ""),
    optional: v.startsWith("-"),
  }));
  const restartRaw = lastValue(text, "Service", "Restart") ?? "no";
  const restart = RESTART_POLICIES.includes(restartRaw as RestartPolicy) ? (restartRaw as RestartPolicy) : "no";
  if (restart !== restartRaw) warnings.push(`${unit}: Failed to parse service restart specifier, ignoring: ${restartRaw}`);
  const span = (v: string | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    const ms = parseTimespan(v);
    return ms === null ? dflt : ms;
  };
  const timeoutSec = lastValue(text, "Service", "TimeoutSec");
  const wd = lastValue(text, "Service", "WorkingDirectory");
  const killSignalRaw = lastValue(text, "Service", "KillSignal") ?? "SIGTERM";
  const killSignal = (killSignalRaw.startsWith("SIG") ? killSignalRaw : `SIG${killSignalRaw}`) as NodeJS.Signals;
  const install = text.sections.get("Install") ?? [];
  const words = (key: string) => listValues(text, "Install", key).flatMap((v) => v.split(/\s+/).filter(Boolean));
  const wantedBy = words("WantedBy");
  const requiredBy = words("RequiredBy");
  return {
    def: {
      description: lastValue(text, "Unit", "Description") ?? unit,
      type,
      execStart,
      environment,
      environmentFiles,
      restart,
      restartMs: span(lastValue(text, "Service", "RestartSec"), 100),
      timeoutStopMs: span(lastValue(text, "Service", "TimeoutStopSec") ?? timeoutSec, 90_000),
      startLimitBurst: Number(lastValue(text, "Unit", "StartLimitBurst") ?? lastValue(text, "Service", "StartLimitBurst") ?? 5),
      startLimitIntervalMs: span(lastValue(text, "Unit", "StartLimitIntervalSec") ?? lastValue(text, "Service", "StartLimitInterval"), 10_000),
      killSignal,
      workingDirectory: wd ? { path: wd.replace(/^-/, "").replace(/^~$/, "/root"), optional: wd.startsWith("-") } : undefined,
      remainAfterExit: bool(lastValue(text, "Service", "RemainAfterExit"), false),
      successExitStatus: listValues(text, "Service", "SuccessExitStatus").flatMap((v) => v.split(/\s+/)).filter((w) => /^\d+$/.test(w)).map(Number),
      wantedBy,
      requiredBy,
      hasInstall: install.some(([k]) => ["WantedBy", "RequiredBy", "Alias", "Also"].includes(k)),
    },
    badSetting,
    warnings,
  };
}
