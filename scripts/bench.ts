// `npm run bench`: performance figures of the stack against a lab of its own,
// with the real engine (scripts/pulumi.sh), printed as a table of medians and
// ranges and written to bench-results/bench-<date>.json. Not part of the tests.
//
//   npm run bench                          everything (about 6 minutes on 2 cores)
//   npm run bench -- --runs 3              fewer repetitions of the fast figures (default 5)
//   npm run bench -- --only preview,up     some phases: preview refresh up profile readiness crash fleet stacks
//   npm run bench -- --rollouts 5 --fast-rollouts 3 --crashes 3
//   npm run bench -- --fleet 1,4,16 --stacks 1,4,16 --fleet-runs 3
//   npm run bench -- --ref HEAD            the project as committed (default: the work tree as it is)
//
// Labs: 127.0.120.5 / 127.0.120.29 (the stack), 127.0.121.5 / 127.0.121.29
// (the fleet), in temporary directories, always taken down at the end.
// bench/README.md says what each figure measures and how.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { execFileSync } from "child_process";
import { parseArgs } from "node:util";
import { clearFaults, labDown, labUp, readLabInfo, setFaults, simulatorEvents } from "../lab/control";
import type { LabInfo, SimulatorEvent } from "../lab/control";
import type { Deployment } from "../lab/deployment";
import { labStackConfig, StackConfigFile } from "../lab/stack";
import { createFloorProject, EngineEvent, FloorKind, expectCode, Project, RunResult, runEngine, stopRunningEngines, useTree } from "../bench/lib/engine";
import { Snapshot } from "../bench/lib/snapshot";
import { countSshd, SshCounts } from "../bench/lib/sshd";
import { nowMs, summarize, Summary } from "../bench/lib/stats";
import { buildProfile, Profile } from "../bench/lib/profile";
import { fleetMembers, fleetProgramConfig, fleetStackConfig, preplaceFleet } from "../bench/lib/fleet";

const repo = path.resolve(__dirname, "..");
const API_KEY = "bench-lab-api-key-0123456789abcdef";
const PHASES = ["preview", "refresh", "up", "profile", "readiness", "crash", "fleet", "stacks"] as const;
type Phase = (typeof PHASES)[number];

// ---------------------------------------------------------------------------
// Options

const { values: options } = parseArgs({
    options: {
        runs: { type: "string" },
        rollouts: { type: "string" },
        crashes: { type: "string" },
        "fast-rollouts": { type: "string" },
        fleet: { type: "string" },
        stacks: { type: "string" },
        "fleet-runs": { type: "string" },
        only: { type: "string" },
        ref: { type: "string" },
        help: { type: "boolean", short: "h" },
    },
    strict: true,
});
const intArg = (name: keyof typeof options, dflt: number) => {
    const v = options[name] as string | undefined;
    const n = v === undefined ? dflt : Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${v}`);
    return n;
};
const listArg = (name: keyof typeof options, dflt: number[]) => {
    const v = options[name] as string | undefined;
    return v === undefined ? dflt : v.split(",").filter(Boolean).map(Number);
};
if (options.help) {
    console.log(
        fs
            .readFileSync(__filename, "utf8")
            .split("\n")
            .filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith("//")))
            .map((l) => l.replace(/^\/\/ ?/, ""))
            .join("\n"),
    );
    process.exit(0);
}
const RUNS = intArg("runs", 5);
const ROLLOUTS = intArg("rollouts", 5);
const CRASHES = intArg("crashes", 3);
const FAST_ROLLOUTS = intArg("fast-rollouts", 3);
const FLEET = listArg("fleet", [1, 4, 16]);
const STACKS = listArg("stacks", [1, 4]);
const FLEET_RUNS = intArg("fleet-runs", 3);
const only = options.only;
/** Measure the project as committed at this git revision instead of the work tree as it is. */
const REF = options.ref;
const phases = new Set<Phase>(only ? (only.split(",") as Phase[]) : PHASES);
for (const p of phases) if (!PHASES.includes(p)) throw new Error(`unknown phase ${p}; phases: ${PHASES.join(" ")}`);

// ---------------------------------------------------------------------------
// Results

interface Figure {
    key: string;
    label: string;
    unit: "s" | "ms" | "x" | "count";
    summary: Summary;
    note?: string;
}
const figures: Figure[] = [];
const extra: Record<string, unknown> = {};
const notes: string[] = [];

function figure(key: string, label: string, unit: Figure["unit"], values: number[], note?: string): Figure {
    const f = { key, label, unit, summary: summarize(values), note };
    figures.push(f);
    return f;
}

/** The work tree as it was when the bench started (see bench/lib/snapshot.ts). */
let tree: Snapshot;

function log(message: string): void {
    const t = new Date().toISOString().slice(11, 19);
    process.stderr.write(`[bench ${t}] ${message}\n`);
}

// ---------------------------------------------------------------------------
// Helpers

function sshdLogs(info: LabInfo): { host: string; container: string } {
    return { host: info.host.sshdLog, container: info.container.sshdLog };
}

/** Connections and commands per lab machine during one run. */
function sshOf(r: RunResult, info: LabInfo): { host: SshCounts; container: SshCounts } {
    const logs = sshdLogs(info);
    return { host: countSshd(r.tails[logs.host] ?? []), container: countSshd(r.tails[logs.container] ?? []) };
}

function sshTail(info: LabInfo): string[] {
    const logs = sshdLogs(info);
    return [logs.host, logs.container];
}

function serviceOf(config: StackConfigFile): Record<string, unknown> {
    return config["sglang-serve:service"]!;
}

/** Whether an event is about the dynamic resource of this type (the type ends the URN's type part: `...dynamic/sglang-serve:SglangService::qwen-unit`). */
const isType = (e: EngineEvent, type: string) => e.urn !== undefined && e.urn.includes(`dynamic/sglang-serve:${type}::`);

function firstAfter<T extends { t: number }>(xs: T[], t: number, pred: (x: T) => boolean): T | undefined {
    return xs.filter((x) => x.t >= t && pred(x)).sort((a, b) => a.t - b.t)[0];
}

function newSimEvents(labDir: string, before: number): SimulatorEvent[] {
    return simulatorEvents(labDir).slice(before);
}

// ---------------------------------------------------------------------------
// Phases

type Floors = Record<FloorKind, Project>;
const FLOOR_LABEL: Record<FloorKind, string> = {
    typescript: "empty TypeScript program, type-checked (Pulumi's default)",
    "transpile-only": "empty TypeScript program, transpile-only (the target's floor)",
    javascript: "empty JavaScript program",
    dynamic: "transpile-only program with one no-op dynamic resource",
};

/**
 * The stack as users run it (the SDK's dynamic-provider plugin under the
 * official launcher, the program from its TypeScript source) against the
 * floors on the same engine, launcher and backend.
 */
async function phasePreview(d: Deployment, floors: Floors, info: LabInfo): Promise<void> {
    log(`preview --refresh: the stack vs the floors, ${RUNS} runs each, interleaved (1 warm-up each)`);
    type Which = "stack" | FloorKind;
    const all: Which[] = ["stack", "typescript", "transpile-only", "javascript", "dynamic"];
    const ms = Object.fromEntries(all.map((k) => [k, [] as number[]])) as Record<Which, number[]>;
    const ratios = Object.fromEntries(all.map((k) => [k, [] as number[]])) as Record<Which, number[]>;
    const ssh: Array<{ host: SshCounts; container: SshCounts }> = [];
    const projects: Record<Which, Project> = { stack: d, ...floors };
    for (let i = -1; i < RUNS; i++) {
        // Rotate which goes first, so a load spike does not always hit the same one.
        const order: Which[] = [...all];
        for (let k = 0; k < ((i % all.length) + all.length) % all.length; k++) order.push(order.shift()!);
        const wall: Partial<Record<Which, number>> = {};
        for (const which of order) {
            const stack = which === "stack";
            const r = expectCode(
                await runEngine(projects[which], ["preview", "--refresh", "--expect-no-changes"], stack ? { tail: sshTail(info) } : {}),
                0,
                `${which} preview --refresh (no-op)`,
            );
            wall[which] = r.wallMs;
            if (stack && i >= 0) ssh.push(sshOf(r, info));
        }
        if (i < 0) continue;
        for (const k of all) {
            ms[k].push(wall[k]! / 1000);
            ratios[k].push(wall.stack! / wall[k]!);
        }
        log(`  run ${i + 1}: ${all.map((k) => `${k} ${(wall[k]! / 1000).toFixed(2)} s`).join(", ")}`);
    }
    figure("previewRefresh.stack", "preview --refresh, deployed lab stack (no-op)", "s", ms.stack);
    for (const k of ["transpile-only", "typescript", "javascript", "dynamic"] as const) {
        figure(`previewRefresh.floor.${k}`, `preview --refresh, ${FLOOR_LABEL[k]}`, "s", ms[k]);
        figure(`previewRefresh.ratio.${k}`, "  ratio stack / that (per run)", "x", ratios[k], k === "transpile-only" ? "target <= 1.3x" : undefined);
    }
    sshFigures("previewRefresh", "preview --refresh", ssh);
}

function sshFigures(key: string, label: string, ssh: Array<{ host: SshCounts; container: SshCounts }>): void {
    if (ssh.length === 0) return;
    figure(
        `${key}.ssh.host.connections`,
        `  ssh to host kpro5 per ${label}: connections`,
        "count",
        ssh.map((s) => s.host.connections),
        "target <= 1",
    );
    figure(
        `${key}.ssh.host.commands`,
        `  ssh to host kpro5 per ${label}: commands`,
        "count",
        ssh.map((s) => s.host.commands),
    );
    const ct = ssh.map((s) => s.container.connections + s.container.commands);
    if (ct.some((v) => v > 0)) {
        figure(
            `${key}.ssh.container.connections`,
            `  ssh to container per ${label}: connections`,
            "count",
            ssh.map((s) => s.container.connections),
        );
        figure(
            `${key}.ssh.container.commands`,
            `  ssh to container per ${label}: commands`,
            "count",
            ssh.map((s) => s.container.commands),
        );
    }
}

/**
 * The drift check as the scheduled job runs it (`npm run drift`, which runs
 * `refresh --preview-only` through the Automation API), the bare engine
 * command on the stack, and the same engine command on the floors.
 */
async function phaseRefresh(d: Deployment, floors: Floors, info: LabInfo): Promise<void> {
    const n = Math.max(1, Math.min(RUNS, 3));
    const kinds = ["transpile-only", "dynamic"] as const;
    log(`drift check: npm run drift, refresh --preview-only on the stack and on the floors, ${n} runs each, interleaved`);
    const ms: Record<"drift" | "stack" | (typeof kinds)[number], number[]> = { drift: [], stack: [], "transpile-only": [], dynamic: [] };
    const ratios: Record<(typeof kinds)[number], number[]> = { "transpile-only": [], dynamic: [] };
    const ssh: Array<{ host: SshCounts; container: SshCounts }> = [];
    const refresh = ["refresh", "--preview-only", "--expect-no-changes"];
    for (let i = 0; i < n; i++) {
        const start = nowMs();
        const drift = await d.npmScript("drift", ["--stack", d.stack]);
        if (drift.code !== 0) throw new Error(`npm run drift: exit ${drift.code}\n${drift.output.slice(-3000)}`);
        ms.drift.push((nowMs() - start) / 1000);
        const r = expectCode(await runEngine(d, refresh, { tail: sshTail(info) }), 0, "refresh --preview-only");
        ms.stack.push(r.wallMs / 1000);
        ssh.push(sshOf(r, info));
        for (const k of kinds) {
            const f = expectCode(await runEngine(floors[k], refresh), 0, `${k} floor refresh --preview-only`);
            ms[k].push(f.wallMs / 1000);
            ratios[k].push(ms.drift[i]! / ms[k][i]!);
        }
    }
    figure("refresh.drift", "npm run drift (no drift)", "s", ms.drift);
    figure("refresh.stack", "refresh --preview-only on the stack (the engine command alone)", "s", ms.stack);
    for (const k of kinds) {
        figure(`refresh.floor.${k}`, `refresh --preview-only, ${FLOOR_LABEL[k]}`, "s", ms[k]);
        figure(`refresh.ratio.${k}`, "  ratio npm run drift / that (per run)", "x", ratios[k], k === "transpile-only" ? "target <= 1.3x" : undefined);
    }
    sshFigures("refresh", "refresh", ssh);
}

async function phaseUp(d: Deployment, info: LabInfo, labDir: string): Promise<void> {
    log(`no-op up: up --yes (preview + update, as the deploy workflow runs it) and up --yes --skip-preview, ${RUNS} runs each`);
    const variants: Array<{ key: string; label: string; args: string[] }> = [
        { key: "up.noop", label: "up --yes (no-op)", args: ["up", "--yes", "--expect-no-changes"] },
        { key: "up.noopSkipPreview", label: "up --yes --skip-preview (no-op)", args: ["up", "--yes", "--skip-preview", "--expect-no-changes"] },
    ];
    const ms: Record<string, number[]> = {};
    const ssh: Record<string, Array<{ host: SshCounts; container: SshCounts }>> = {};
    const launchedBefore = simulatorEvents(labDir).filter((e) => e.event === "launched").length;
    for (let i = 0; i < RUNS; i++) {
        for (const v of i % 2 === 0 ? variants : [...variants].reverse()) {
            const r = expectCode(await runEngine(d, v.args, { tail: sshTail(info) }), 0, v.label);
            (ms[v.key] ??= []).push(r.wallMs / 1000);
            (ssh[v.key] ??= []).push(sshOf(r, info));
        }
    }
    const launched = simulatorEvents(labDir).filter((e) => e.event === "launched").length - launchedBefore;
    if (launched > 0) notes.push(`no-op up started the server ${launched} time(s): not a no-op`);
    for (const v of variants) {
        figure(v.key, v.label, "s", ms[v.key]!);
        sshFigures(v.key, v.label.replace(/ \(no-op\)/, ""), ssh[v.key]!);
    }
}

async function phaseProfile(d: Deployment, floor: Project, info: LabInfo): Promise<void> {
    log("profile: one no-op preview --refresh of the stack and of the floor, node processes hooked, event log and sshd log followed");
    const profiles: Record<string, Profile> = {};
    for (const [name, project] of [
        ["stack", d],
        ["floor", floor],
    ] as const) {
        const hookLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-prof-")), "hook.jsonl");
        fs.writeFileSync(hookLog, "");
        const hookEnv = {
            SGLANG_BENCH_PROFILE_LOG: hookLog,
            NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${path.join(repo, "bench", "profile-hook.js")}`.trim(),
        };
        const r = expectCode(
            await runEngine(project, ["preview", "--refresh", "--expect-no-changes"], {
                eventLog: true,
                tail: [hookLog, info.host.sshdLog],
                env: hookEnv,
            }),
            0,
            `profiled preview --refresh (${name})`,
        );
        profiles[name] = buildProfile(r, hookLog, info.host.sshdLog);
        fs.rmSync(path.dirname(hookLog), { recursive: true, force: true });
    }
    // The wrapper alone: scripts/pulumi.sh runs `pulumi stack ls --json` before every command with --stack.
    const ls: number[] = [];
    for (let i = 0; i < 3; i++) {
        const t = nowMs();
        execFileSync(tree.pulumiSh, ["stack", "ls", "--json"], {
            env: {
                ...process.env,
                SGLANG_SERVE_PROJECT_DIR: d.dir,
                SGLANG_SERVE_STATE_DIR: path.join(d.dir, ".state"),
                PULUMI_CONFIG_PASSPHRASE: "x",
                PULUMI_CONFIG_PASSPHRASE_FILE: "",
                PULUMI_BACKEND_URL: "",
                PULUMI_HOME: "",
            },
            stdio: "ignore",
        });
        ls.push((nowMs() - t) / 1000);
    }
    figure("profile.stackLs", "scripts/pulumi.sh stack ls --json (the wrapper's per-command stack check)", "s", ls);
    extra.profile = profiles;
}

/** Lag figures of one rollout or crash run, from the simulator's events and the engine's event log. */
interface Lags {
    [k: string]: number | undefined;
}

interface RolloutSet {
    runs: Lags[];
    walls: number[];
    ssh: Array<{ host: SshCounts; container: SshCounts }>;
}

/** `count` rollouts flipping service.memFractionStatic 0.88 <-> 0.87, with the readiness poll interval given. */
async function rollouts(d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo, count: number, pollSeconds: number): Promise<RolloutSet> {
    const set: RolloutSet = { runs: [], walls: [], ssh: [] };
    const readiness = config["sglang-serve:readiness"]!;
    const previousPoll = readiness.pollIntervalSeconds;
    readiness.pollIntervalSeconds = pollSeconds;
    try {
        for (let i = 0; i < count; i++) {
            const next = serviceOf(config).memFractionStatic === 0.87 ? 0.88 : 0.87;
            serviceOf(config).memFractionStatic = next;
            d.writeConfig(config);
            // The gate polls once per interval from the start, and the lab's startup is a whole 3 s: with a
            // fixed startup every run would hit the same phase of the poll. Spread the startup over one
            // second (3.1, 3.3, ... 3.9 s for 5 runs), so the runs sample the lag an unaligned startup sees.
            const startupSeconds = 3 + (i + 0.5) / count;
            setFaults({ startupSeconds }, labDir);
            const before = simulatorEvents(labDir).length;
            const r = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"], { eventLog: true, tail: sshTail(info) }), 0, `rollout to ${next}`);
            set.walls.push(r.wallMs / 1000);
            set.ssh.push(sshOf(r, info));
            const sim = newSimEvents(labDir, before);
            const ready = sim.filter((e) => e.event === "ready");
            if (ready.length !== 1) throw new Error(`rollout to ${next}: expected one "ready" simulator event, got ${ready.length}: ${JSON.stringify(sim)}`);
            const T = ready[0]!.epochMs;
            const launched = sim.find((e) => e.event === "launched");
            const gateLine = firstAfter(r.events, T, (e) => e.type === "diagnosticEvent" && /\[readiness\] ready after/.test(e.message ?? ""));
            const gateStdout = firstAfter(r.stdout, T, (l) => /\[readiness\] ready after/.test(l.line));
            const svc = firstAfter(r.events, T, (e) => e.type === "resOutputsEvent" && isType(e, "SglangService"));
            const probe = firstAfter(r.events, T, (e) => e.type === "resOutputsEvent" && isType(e, "ReadinessCheck"));
            const probePre = r.events.find((e) => e.type === "resourcePreEvent" && e.op !== "refresh" && isType(e, "ReadinessCheck"));
            const lags: Lags = {
                pollIntervalSeconds: pollSeconds,
                startupSeconds,
                gateLine: gateLine ? gateLine.t - T : undefined,
                gateStdout: gateStdout ? gateStdout.t - T : undefined,
                service: svc ? svc.t - T : undefined,
                probe: probe ? probe.t - T : undefined,
                probeStep: probe && probePre ? probe.t - probePre.t : undefined,
                launchToReady: launched ? T - launched.epochMs : undefined,
                upStartToLaunch: launched ? launched.epochMs - r.startMs : undefined,
                upWall: r.wallMs,
            };
            set.runs.push(lags);
            log(
                `  rollout ${i + 1} (-> ${next}, poll ${pollSeconds} s): ready -> "[readiness] ready after" ${fmtMs(lags.gateLine)}, ` +
                    `-> SglangService done ${fmtMs(lags.service)}, -> ReadinessCheck done ${fmtMs(lags.probe)}; up ${(r.wallMs / 1000).toFixed(1)} s`,
            );
        }
    } finally {
        clearFaults(labDir);
        readiness.pollIntervalSeconds = previousPoll;
        d.writeConfig(config);
    }
    return set;
}

async function phaseReadiness(d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo): Promise<void> {
    log(`readiness detection lag: ${ROLLOUTS} rollouts, service.memFractionStatic 0.88 <-> 0.87 (readiness.pollIntervalSeconds 1, the default)`);
    const set = await rollouts(d, config, labDir, info, ROLLOUTS, 1);
    const col = (runs: Lags[], k: string) => runs.map((x) => x[k]).filter((v): v is number => v !== undefined);
    figure("readiness.lag", "readiness lag: server ready -> ReadinessCheck done", "ms", col(set.runs, "probe"), "target < 1000 ms");
    figure("readiness.gateLine", '  server ready -> rollout gate says "[readiness] ready after"', "ms", col(set.runs, "gateLine"));
    figure("readiness.service", "  server ready -> SglangService done", "ms", col(set.runs, "service"));
    figure("readiness.probeStep", "  ReadinessCheck step (start -> done)", "ms", col(set.runs, "probeStep"));
    figure("readiness.launchToReady", "  (simulated startup: launched -> ready)", "ms", col(set.runs, "launchToReady"));
    figure("readiness.upWall", "up with a rollout (one flag changed)", "s", set.walls);
    sshFigures("readiness", "up with a rollout", set.ssh);
    extra.readinessRuns = set.runs;
    if (FAST_ROLLOUTS > 0) {
        log(`readiness lag what-if: ${FAST_ROLLOUTS} rollouts with readiness.pollIntervalSeconds 0.25 (a config setting, no code change)`);
        const fast = await rollouts(d, config, labDir, info, FAST_ROLLOUTS, 0.25);
        figure("readiness.lagPoll025", "readiness lag with pollIntervalSeconds 0.25", "ms", col(fast.runs, "probe"), "what-if");
        figure("readiness.gateLinePoll025", '  server ready -> "[readiness] ready after" (poll 0.25 s)', "ms", col(fast.runs, "gateLine"));
        figure(
            "readiness.commandsPoll025",
            "  ssh commands per up with a rollout (poll 0.25 s)",
            "count",
            fast.ssh.map((x) => x.host.commands),
        );
        extra.readinessRunsPoll025 = fast.runs;
    }
}

async function phaseCrash(d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo): Promise<void> {
    log(`crash detection: ${CRASHES} rollouts to --mem-fraction-static 0.86, which crashes 1 s (+ 0..1 s) after launch (lab fault)`);
    const previous = serviceOf(config).memFractionStatic;
    const runs: Lags[] = [];
    try {
        for (let i = 0; i < CRASHES; i++) {
            // 1 s after launch, then spread over one poll interval (1, 1.33, 1.67 s for 3 runs): see phaseReadiness.
            const crashAfterSeconds = 1 + i / CRASHES;
            setFaults({ crashAfterSeconds, whenArgs: ["--mem-fraction-static", "0.86"] }, labDir);
            serviceOf(config).memFractionStatic = 0.86;
            d.writeConfig(config);
            const before = simulatorEvents(labDir).length;
            const r = await runEngine(d, ["up", "--yes", "--skip-preview"], { eventLog: true, tail: sshTail(info) });
            if (r.code === 0) throw new Error(`crash run ${i + 1}: up succeeded, expected the rollout to fail\n${r.output.slice(-3000)}`);
            if (!/previous unit was put back and is ready again/.test(r.output)) {
                throw new Error(`crash run ${i + 1}: no rollback to the previous unit\n${r.output.slice(-3000)}`);
            }
            const sim = newSimEvents(labDir, before);
            const crashed = sim.find((e) => e.event === "crashed");
            if (!crashed) throw new Error(`crash run ${i + 1}: no "crashed" simulator event: ${JSON.stringify(sim)}`);
            const T = crashed.epochMs;
            const failedLine = firstAfter(r.events, T, (e) => e.type === "diagnosticEvent" && /\[readiness\] failed after/.test(e.message ?? ""));
            const failure = firstAfter(
                r.events,
                T,
                (e) => (e.type === "diagnosticEvent" && e.severity === "error" && /rollout of/.test(e.message ?? "")) || e.type === "resOpFailedEvent",
            );
            const anyLine = firstAfter(r.events, T, (e) => e.type === "diagnosticEvent" && /crash|exception|RuntimeError|failed/i.test(e.message ?? ""));
            const failedStdout = firstAfter(r.stdout, T, (l) => /\[readiness\] failed after/.test(l.line));
            const lags: Lags = {
                crashAfterSeconds,
                failedLine: failedLine ? failedLine.t - T : undefined,
                failedStdout: failedStdout ? failedStdout.t - T : undefined,
                firstMention: anyLine ? anyLine.t - T : undefined,
                failure: failure ? failure.t - T : undefined,
                upWall: r.wallMs,
            };
            runs.push(lags);
            log(
                `  crash ${i + 1}: crashed -> "[readiness] failed after" ${fmtMs(lags.failedLine)}, -> up reports the failed rollout (after the rollback) ${fmtMs(lags.failure)}; up ${(r.wallMs / 1000).toFixed(1)} s`,
            );
        }
    } finally {
        clearFaults(labDir);
        serviceOf(config).memFractionStatic = previous;
        d.writeConfig(config);
    }
    const col = (k: string) => runs.map((x) => x[k]).filter((v): v is number => v !== undefined);
    figure("crash.detect", 'crash detection: crashed -> "[readiness] failed after"', "ms", col("failedLine"), "target < 2000 ms");
    figure("crash.failure", "  crashed -> up reports the failed rollout (rollback done)", "ms", col("failure"));
    figure(
        "crash.upWall",
        "up with a crashing rollout (+ rollback)",
        "s",
        col("upWall").map((v) => v / 1000),
    );
    extra.crashRuns = runs;
}

async function phaseFleet(fleetLabDir: string, fleetInfo: LabInfo, sizes: number[], stackSizes: number[], cleanup: Array<() => void>): Promise<void> {
    const maxN = Math.max(...sizes, ...stackSizes);
    log(`fleet: placing ${maxN} servers (sglang-f0..f${maxN - 1}, ports 30000+) in the fleet lab's container`);
    await preplaceFleet(fleetLabDir, fleetInfo, fleetMembers(maxN), API_KEY);
    const launchedAfterPlacing = simulatorEvents(fleetLabDir).filter((e) => e.event === "launched").length;

    // (B) one operation over N services: the fleet program.
    const programs = new Map<number, Deployment>();
    if (phases.has("fleet")) {
        for (const n of sizes) {
            const d = await tree.deployment(`fleet${n}`, fleetProgramConfig(fleetInfo, fleetMembers(n)) as unknown as StackConfigFile);
            cleanup.push(() => d.cleanup());
            // The program is the snapshot's bench/fleet/index.ts, whose imports resolve in the snapshot.
            fs.writeFileSync(path.join(d.dir, "index.ts"), `export * from ${JSON.stringify(path.join(tree.dir, "bench", "fleet"))};\n`);
            await d.setSecret("sglang-serve:apiKey", API_KEY);
            const r = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, `fleet program up (N=${n}, adopting)`);
            log(`  fleet program N=${n}: deployed (adopted) in ${(r.wallMs / 1000).toFixed(1)} s`);
            programs.set(n, d);
        }
    }
    // (A) N one-service stacks (the stack program as it is, one stack per server).
    const stacks: Deployment[] = [];
    if (phases.has("stacks")) {
        for (let i = 0; i < Math.max(0, ...stackSizes); i++) {
            const d = await tree.deployment(`fleet-f${i}`, fleetStackConfig(fleetInfo, fleetMembers(maxN)[i]!));
            cleanup.push(() => d.cleanup());
            await d.setSecret("sglang-serve:apiKey", API_KEY);
            expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, `one-service stack f${i} up (adopting)`);
            stacks.push(d);
        }
        log(`  ${stacks.length} one-service stacks deployed (adopted)`);
    }
    const launched = simulatorEvents(fleetLabDir).filter((e) => e.event === "launched").length - launchedAfterPlacing;
    if (launched > 0) throw new Error(`adopting the fleet restarted ${launched} server(s): the placed units differ from what the stack renders`);

    const fleetMs: Record<number, number[]> = {};
    const fleetSsh: Record<number, Array<{ host: SshCounts; container: SshCounts }>> = {};
    const fleetPreviewMs: Record<number, number[]> = {};
    const seqMs: Record<number, number[]> = {};
    const parMs: Record<number, number[]> = {};
    for (let rep = 0; rep < FLEET_RUNS; rep++) {
        for (const [n, d] of programs) {
            const r = expectCode(
                await runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"], { tail: sshTail(fleetInfo) }),
                0,
                `fleet refresh N=${n}`,
            );
            (fleetMs[n] ??= []).push(r.wallMs / 1000);
            (fleetSsh[n] ??= []).push(sshOf(r, fleetInfo));
            const p = expectCode(await runEngine(d, ["preview", "--refresh", "--expect-no-changes"]), 0, `fleet preview --refresh N=${n}`);
            (fleetPreviewMs[n] ??= []).push(p.wallMs / 1000);
            log(`  fleet program N=${n}: refresh ${(r.wallMs / 1000).toFixed(2)} s, preview --refresh ${(p.wallMs / 1000).toFixed(2)} s`);
        }
        for (const n of phases.has("stacks") ? stackSizes : []) {
            let t = nowMs();
            for (const d of stacks.slice(0, n)) expectCode(await runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"]), 0, `stack refresh`);
            (seqMs[n] ??= []).push((nowMs() - t) / 1000);
            t = nowMs();
            const all = await Promise.all(stacks.slice(0, n).map((d) => runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"])));
            for (const r of all) expectCode(r, 0, "parallel stack refresh");
            (parMs[n] ??= []).push((nowMs() - t) / 1000);
            log(`  ${n} one-service stacks: sequential ${seqMs[n]!.at(-1)!.toFixed(2)} s, parallel ${parMs[n]!.at(-1)!.toFixed(2)} s`);
        }
    }
    const base = sizes.includes(1) ? summarize(fleetMs[1] ?? []).median : NaN;
    for (const n of sizes) {
        if (!fleetMs[n]) continue;
        figure(`fleet.program.${n}`, `fleet: one program with ${n} service(s), refresh --preview-only`, "s", fleetMs[n]!);
        if (n !== 1 && Number.isFinite(base)) {
            figure(
                `fleet.program.ratio.${n}`,
                `  ratio ${n}:1 (per run / median of N=1)`,
                "x",
                fleetMs[n]!.map((v) => v / base),
                n === 16 ? "target <= 2x" : undefined,
            );
        }
        sshFigures(`fleet.program.${n}`, `fleet refresh (N=${n})`, fleetSsh[n]!);
    }
    const pbase = sizes.includes(1) ? summarize(fleetPreviewMs[1] ?? []).median : NaN;
    for (const n of sizes) {
        if (!fleetPreviewMs[n]) continue;
        figure(`fleet.programPreview.${n}`, `fleet: one program with ${n} service(s), preview --refresh`, "s", fleetPreviewMs[n]!);
        if (n !== 1 && Number.isFinite(pbase))
            figure(
                `fleet.programPreview.ratio.${n}`,
                `  ratio ${n}:1`,
                "x",
                fleetPreviewMs[n]!.map((v) => v / pbase),
            );
    }
    const sbase = stackSizes.includes(1) ? summarize(seqMs[1] ?? []).median : NaN;
    for (const n of stackSizes) {
        if (!seqMs[n]) continue;
        figure(`fleet.stacks.seq.${n}`, `fleet: ${n} one-service stack(s), refresh each in turn`, "s", seqMs[n]!);
        if (n !== 1 && Number.isFinite(sbase))
            figure(
                `fleet.stacks.seq.ratio.${n}`,
                `  ratio ${n}:1`,
                "x",
                seqMs[n]!.map((v) => v / sbase),
            );
        figure(`fleet.stacks.par.${n}`, `fleet: ${n} one-service stack(s), refreshed in parallel`, "s", parMs[n]!);
    }
}

function git(args: string[]): string {
    try {
        return execFileSync("git", args, { cwd: repo, encoding: "utf8" }).trim();
    } catch {
        return "unknown";
    }
}

function fmtMs(v: number | undefined): string {
    return v === undefined ? "n/a" : `${Math.round(v)} ms`;
}

// ---------------------------------------------------------------------------
// Output

function fmt(v: number, unit: Figure["unit"]): string {
    if (!Number.isFinite(v)) return "n/a";
    switch (unit) {
        case "s":
            return v.toFixed(2);
        case "ms":
            return String(Math.round(v));
        case "x":
            return v.toFixed(2);
        case "count":
            return Number.isInteger(v) ? String(v) : v.toFixed(1);
    }
}

function table(): string {
    const rows = figures.map((f) => {
        const s = f.summary;
        return [
            f.label,
            String(s.n),
            `${fmt(s.median, f.unit)} ${f.unit === "count" ? "" : f.unit}`.trim(),
            `${fmt(s.min, f.unit)}–${fmt(s.max, f.unit)}`,
            f.note ?? "",
        ];
    });
    const head = ["figure", "n", "median", "range (min–max)", ""];
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) =>
        r
            .map((c, i) => (i === 1 || i === 2 || i === 3 ? c.padStart(w[i]!) : c.padEnd(w[i]!)))
            .join("  ")
            .trimEnd();
    return [line(head), w.map((n) => "-".repeat(n)).join("  "), ...rows.map(line)].join("\n");
}

function profileText(p: Profile, name: string): string {
    const out = [`Profile of one no-op preview --refresh (${name}), ${(p.wallMs / 1000).toFixed(2)} s:`];
    for (const [k, v] of Object.entries(p.buckets)) out.push(`  ${k}: ${v}${/count|connections|commands$/.test(k) ? "" : " ms"}`);
    out.push("  timeline (ms after spawn):");
    for (const s of p.steps) out.push(`    ${String(s.at).padStart(6)}${s.ms !== undefined ? ` +${String(s.ms).padStart(5)}` : "       "}  ${s.what}`);
    return out.join("\n");
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
    const started = new Date();
    const labDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-lab-"));
    const fleetLabDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-fleet-lab-"));
    const cleanup: Array<() => void> = [];
    tree = Snapshot.take(REF);
    useTree(tree.dir);
    cleanup.push(() => tree.remove());
    const env = {
        node: process.version,
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        loadavgBefore: os.loadavg(),
        gitRevision: git(["rev-parse", "--short", "HEAD"]),
        /** Uncommitted changes in the tree that was measured (`git status --porcelain`). */
        gitStatus: git(["status", "--porcelain"]).split("\n").filter(Boolean),
    };
    let failed: unknown = null;
    let tornDown: Promise<void> | null = null;
    /** Deployment folders removed, both labs down (idempotent; also on Ctrl-C). */
    const teardown = (): Promise<void> =>
        (tornDown ??= (async () => {
            for (const c of cleanup.reverse()) {
                try {
                    c();
                } catch {
                    /* best effort */
                }
            }
            for (const dir of [labDir, fleetLabDir]) {
                try {
                    await labDown(dir);
                } catch (e) {
                    log(`lab down ${dir} failed: ${(e as Error).message}`);
                }
                fs.rmSync(dir, { recursive: true, force: true });
            }
        })());
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
            log(`${signal}: stopping the engine commands, taking the labs down`);
            void stopRunningEngines()
                .then(teardown)
                .finally(() => process.exit(130));
        });
    }
    try {
        const needMain = [...phases].some((p) => p !== "fleet" && p !== "stacks");
        if (needMain) {
            log(`lab up in ${labDir} (127.0.120.5 / 127.0.120.29)`);
            await labUp({ labDir, hostAddress: "127.0.120.5", containerAddress: "127.0.120.29", fresh: true });
            const info = readLabInfo(labDir);
            const config = labStackConfig(info, "pct-exec");
            const d = await tree.deployment("lab", config);
            cleanup.push(() => d.cleanup());
            await d.setSecret("sglang-serve:apiKey", API_KEY);
            const first = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, "first up");
            log(`stack deployed in ${(first.wallMs / 1000).toFixed(1)} s`);
            const floors = {} as Floors;
            for (const kind of ["typescript", "transpile-only", "javascript", "dynamic"] as const) {
                const floor = createFloorProject(kind);
                cleanup.push(() => fs.rmSync(floor.dir, { recursive: true, force: true }));
                expectCode(await runEngine(floor, ["up", "--yes", "--skip-preview"]), 0, `${kind} floor up`);
                floors[kind] = floor;
            }

            if (phases.has("preview")) await phasePreview(d, floors, info);
            if (phases.has("refresh")) await phaseRefresh(d, floors, info);
            if (phases.has("up")) await phaseUp(d, info, labDir);
            if (phases.has("profile")) await phaseProfile(d, floors["transpile-only"], info);
            if (phases.has("readiness")) await phaseReadiness(d, config, labDir, info);
            if (phases.has("crash")) await phaseCrash(d, config, labDir, info);
        }
        if (phases.has("fleet") || phases.has("stacks")) {
            log(`fleet lab up in ${fleetLabDir} (127.0.121.5 / 127.0.121.29, 2 GPUs of 768 GiB)`);
            await labUp({
                labDir: fleetLabDir,
                hostAddress: "127.0.121.5",
                containerAddress: "127.0.121.29",
                fresh: true,
                gpus: [
                    { name: "NVIDIA Bench-Fleet 768GB", memoryMiB: 786432 },
                    { name: "NVIDIA Bench-Fleet 768GB", memoryMiB: 786432 },
                ],
            });
            await phaseFleet(fleetLabDir, readLabInfo(fleetLabDir), phases.has("fleet") ? FLEET : [], phases.has("stacks") ? STACKS : [], cleanup);
        }
    } catch (e) {
        failed = e;
    } finally {
        await teardown();
    }

    const finished = new Date();
    const result = {
        schema: 1,
        started: started.toISOString(),
        finished: finished.toISOString(),
        durationSeconds: Math.round((finished.getTime() - started.getTime()) / 1000),
        command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
        options: {
            ref: REF ?? "(work tree)",
            runs: RUNS,
            rollouts: ROLLOUTS,
            fastRollouts: FAST_ROLLOUTS,
            crashes: CRASHES,
            fleet: FLEET,
            stacks: STACKS,
            fleetRuns: FLEET_RUNS,
            phases: [...phases],
        },
        environment: { ...env, loadavgAfter: os.loadavg() },
        figures: Object.fromEntries(figures.map((f) => [f.key, { label: f.label.trim(), unit: f.unit, ...f.summary, ...(f.note ? { note: f.note } : {}) }])),
        notes,
        ...extra,
        ...(failed ? { error: String((failed as Error).stack ?? failed) } : {}),
    };
    const outDir = path.join(repo, "bench-results");
    fs.mkdirSync(outDir, { recursive: true });
    const stamp = started
        .toISOString()
        .replace(/:/g, "-")
        .replace(/\.\d+Z$/, "Z");
    const outFile = path.join(outDir, `bench-${stamp}.json`);
    fs.writeFileSync(outFile, JSON.stringify(result, null, 2) + "\n");

    console.log("");
    console.log(table());
    const profiles = extra.profile as Record<string, Profile> | undefined;
    if (profiles) for (const [name, p] of Object.entries(profiles)) console.log("\n" + profileText(p, name));
    for (const n of notes) console.log(`\nnote: ${n}`);
    console.log(
        `\n${env.cpus} CPUs, load average ${env.loadavgBefore.map((v) => v.toFixed(2)).join(" ")} before, ${os
            .loadavg()
            .map((v) => v.toFixed(2))
            .join(" ")} after; ${result.durationSeconds} s in all`,
    );
    console.log(`results: ${path.relative(process.cwd(), outFile)}`);
    if (failed) {
        console.error(`\nbench failed: ${(failed as Error).stack ?? failed}`);
        process.exitCode = 1;
    }
}

void main();
