// Rollouts the lab watches: how long after the simulated server turns ready
// (or crashes) the stack's rollout notices. Readiness and crash detection
// share the matching of simulator events to engine events.
import { clearFaults, setFaults, simulatorEvents } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";
import { expectCode, runEngine } from "../lib/engine";
import { firstAfter, isType, newSimEvents } from "../lib/events";
import { fmtMs, Report } from "../lib/figures";
import { log } from "../lib/log";
import { serviceOf } from "../lib/stack-config";
import { sshFigures, sshOf, SshSample, sshTail } from "../lib/ssh-figures";

/** Lag figures of one rollout or crash run, from the simulator's events and the engine's event log. */
interface Lags {
    [k: string]: number | undefined;
}

interface RolloutSet {
    runs: Lags[];
    walls: number[];
    ssh: SshSample[];
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
            // The readiness wait polls once per interval from the start, and the lab's startup is a whole 3 s: with a
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
            const readyLine = firstAfter(r.events, T, (e) => e.type === "diagnosticEvent" && /\[readiness\] ready after/.test(e.message ?? ""));
            const readyStdout = firstAfter(r.stdout, T, (l) => /\[readiness\] ready after/.test(l.line));
            const svc = firstAfter(r.events, T, (e) => e.type === "resOutputsEvent" && isType(e, "SglangService"));
            const probe = firstAfter(r.events, T, (e) => e.type === "resOutputsEvent" && isType(e, "ReadinessCheck"));
            const probePre = r.events.find((e) => e.type === "resourcePreEvent" && e.op !== "refresh" && isType(e, "ReadinessCheck"));
            const lags: Lags = {
                pollIntervalSeconds: pollSeconds,
                startupSeconds,
                readyLine: readyLine ? readyLine.t - T : undefined,
                readyStdout: readyStdout ? readyStdout.t - T : undefined,
                service: svc ? svc.t - T : undefined,
                probe: probe ? probe.t - T : undefined,
                probeStep: probe && probePre ? probe.t - probePre.t : undefined,
                launchToReady: launched ? T - launched.epochMs : undefined,
                upStartToLaunch: launched ? launched.epochMs - r.startMs : undefined,
                upWall: r.wallMs,
            };
            set.runs.push(lags);
            log(
                `  rollout ${i + 1} (-> ${next}, poll ${pollSeconds} s): ready -> "[readiness] ready after" ${fmtMs(lags.readyLine)}, ` +
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

export async function phaseReadiness(
    report: Report,
    d: Deployment,
    config: StackConfigFile,
    labDir: string,
    info: LabInfo,
    counts: { rollouts: number; fastRollouts: number },
): Promise<void> {
    log(`readiness detection lag: ${counts.rollouts} rollouts, service.memFractionStatic 0.88 <-> 0.87 (readiness.pollIntervalSeconds 1, the default)`);
    const set = await rollouts(d, config, labDir, info, counts.rollouts, 1);
    const col = (runs: Lags[], k: string) => runs.map((x) => x[k]).filter((v): v is number => v !== undefined);
    report.figure("readiness.lag", "readiness lag: server ready -> ReadinessCheck done", "ms", col(set.runs, "probe"), "target < 1000 ms");
    report.figure("readiness.readyLine", '  server ready -> rollout readiness wait says "[readiness] ready after"', "ms", col(set.runs, "readyLine"));
    report.figure("readiness.service", "  server ready -> SglangService done", "ms", col(set.runs, "service"));
    report.figure("readiness.probeStep", "  ReadinessCheck step (start -> done)", "ms", col(set.runs, "probeStep"));
    report.figure("readiness.launchToReady", "  (simulated startup: launched -> ready)", "ms", col(set.runs, "launchToReady"));
    report.figure("readiness.upWall", "up with a rollout (one flag changed)", "s", set.walls);
    sshFigures(report, "readiness", "up with a rollout", set.ssh);
    report.extra.readinessRuns = set.runs;
    if (counts.fastRollouts > 0) {
        log(`readiness lag what-if: ${counts.fastRollouts} rollouts with readiness.pollIntervalSeconds 0.25 (a config setting, no code change)`);
        const fast = await rollouts(d, config, labDir, info, counts.fastRollouts, 0.25);
        report.figure("readiness.lagPoll025", "readiness lag with pollIntervalSeconds 0.25", "ms", col(fast.runs, "probe"), "what-if");
        report.figure("readiness.readyLinePoll025", '  server ready -> "[readiness] ready after" (poll 0.25 s)', "ms", col(fast.runs, "readyLine"));
        report.figure(
            "readiness.commandsPoll025",
            "  ssh commands per up with a rollout (poll 0.25 s)",
            "count",
            fast.ssh.map((x) => x.host.commands),
        );
        report.extra.readinessRunsPoll025 = fast.runs;
    }
}

export async function phaseCrash(report: Report, d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo, crashes: number): Promise<void> {
    log(`crash detection: ${crashes} rollouts to --mem-fraction-static 0.86, which crashes 1 s (+ 0..1 s) after launch (lab fault)`);
    const previous = serviceOf(config).memFractionStatic;
    const runs: Lags[] = [];
    try {
        for (let i = 0; i < crashes; i++) {
            // 1 s after launch, then spread over one poll interval (1, 1.33, 1.67 s for 3 runs): see phaseReadiness.
            const crashAfterSeconds = 1 + i / crashes;
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
    report.figure("crash.detect", 'crash detection: crashed -> "[readiness] failed after"', "ms", col("failedLine"), "target < 2000 ms");
    report.figure("crash.failure", "  crashed -> up reports the failed rollout (rollback done)", "ms", col("failure"));
    report.figure(
        "crash.upWall",
        "up with a crashing rollout (+ rollback)",
        "s",
        col("upWall").map((v) => v / 1000),
    );
    report.extra.crashRuns = runs;
}
