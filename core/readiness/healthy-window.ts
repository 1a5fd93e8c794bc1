// The healthy window: after a server is ready and passed the post-ready
// checks, it must stay healthy for readiness.minHealthySeconds before a
// rollout counts as a success (issue 13: a config whose server died 3 s after
// its first ready was judged serving, and the unit then crash-looped with the
// previous config gone). Like Nomad's min_healthy_time: healthy means the same
// MainPID, the unit active, no fatal journal line and GET /health = 200 on
// every poll.
//
// Pure: no I/O, no clock. The readiness wait (remote/readiness-wait.ts) feeds
// it the same Observations as the readiness machine (core/readiness/readiness.ts).

import type { AwaitCondition, Verdict } from "./await-condition";
import { AttemptContext, attemptSuffix, classifyJournalLine, describeFailure, describeHealth, FailureCause, Observation } from "./readiness";

export interface HealthyWindowState {
    /** Readiness wait time (ms since the start) when the window opened. */
    readonly openedAtMs: number;
    readonly windowMs: number;
    /** The main process that was ready; another one (or none) is a restart. */
    readonly mainPid: number;
    readonly nRestarts: number;
    readonly polls: number;
    /** Set once healthy or failed; every later step repeats it. */
    readonly final: WindowDecision | null;
}

export type WindowDecision =
    | { kind: "holding"; elapsedMs: number; heldMs: number; windowMs: number }
    | { kind: "healthy"; elapsedMs: number; heldMs: number; polls: number }
    | { kind: "failed"; elapsedMs: number; cause: Extract<FailureCause, { kind: "unhealthy" }> };

/** Opens the window on the server the readiness machine called ready (its MainPID and NRestarts). */
export function openHealthyWindow(at: { elapsedMs: number; mainPid: number; nRestarts: number }, windowMs: number): HealthyWindowState {
    return { openedAtMs: at.elapsedMs, windowMs, mainPid: at.mainPid, nRestarts: at.nRestarts, polls: 0, final: null };
}

/**
 * One poll inside the window. Checks, in order: fatal journal lines, the
 * unit's state, a restart, GET /health; then whether the window is over. A
 * window ends healthy only on a poll whose /health answered 200 at or after
 * its end, so the last answer judged is one from after the whole window.
 */
export function stepWindow(state: HealthyWindowState, obs: Observation): { state: HealthyWindowState; decision: WindowDecision } {
    if (state.final) return { state, decision: state.final };
    const heldMs = Math.max(0, obs.elapsedMs - state.openedAtMs);
    const polls = state.polls + 1;
    const fail = (detail: string, fatal?: { reason: string; line: string }): { state: HealthyWindowState; decision: WindowDecision } => {
        const decision: WindowDecision = {
            kind: "failed",
            elapsedMs: obs.elapsedMs,
            cause: { kind: "unhealthy", heldMs, windowMs: state.windowMs, detail, ...(fatal ? { fatalReason: fatal.reason, line: fatal.line } : {}) },
        };
        return { state: { ...state, polls, final: decision }, decision };
    };

    for (const line of obs.newJournalLines) {
        const c = classifyJournalLine(line);
        if (c.kind === "fatal") return fail(`fatal log line (${c.reason}): ${line}`, { reason: c.reason, line });
    }
    const u = obs.unit;
    if (u.subState === "auto-restart") return fail(`the unit is ${u.activeState}/${u.subState}: its main process died and systemd is restarting it`);
    if (u.activeState !== "active" && u.activeState !== "reloading") return fail(`the unit is ${u.activeState}/${u.subState}`);
    if (u.nRestarts > state.nRestarts) return fail(`systemd restarted the unit (NRestarts ${state.nRestarts} -> ${u.nRestarts})`);
    if (u.mainPid !== state.mainPid) {
        return fail(
            u.mainPid === 0
                ? `the main process ${state.mainPid} exited`
                : `the main process changed (MainPID ${state.mainPid} -> ${u.mainPid}): it was restarted`,
        );
    }
    if (!("status" in obs.health) || obs.health.status !== 200) return fail(`GET /health answered ${describeHealth(obs.health)}, not 200`);

    const decision: WindowDecision =
        heldMs >= state.windowMs
            ? { kind: "healthy", elapsedMs: obs.elapsedMs, heldMs, polls }
            : { kind: "holding", elapsedMs: obs.elapsedMs, heldMs, windowMs: state.windowMs };
    return { state: { ...state, polls, final: decision.kind === "holding" ? null : decision }, decision };
}

/**
 * Judges only what a poll shows before /health answers (journal, unit, restart),
 * so a crash is reported without waiting for a /health probe that may hang.
 * Returns the failure, or null when nothing but /health is left to judge.
 */
export function earlyWindowFailure(state: HealthyWindowState, obs: Omit<Observation, "health">): WindowDecision | null {
    const d = stepWindow(state, { ...obs, health: { status: 200 } }).decision;
    return d.kind === "failed" ? d : null;
}

const seconds = (ms: number): number => Math.round(ms / 1000);

/** e.g. "[readiness] healthy window — 48 s elapsed, healthy for 12 s of 30 s (budget 30 s, attempt 1 of 2)". */
export function formatWindowProgress(decision: WindowDecision, context?: AttemptContext): string {
    switch (decision.kind) {
        case "holding":
            return `[readiness] healthy window — ${seconds(decision.elapsedMs)} s elapsed, healthy for ${seconds(decision.heldMs)} s of ${seconds(decision.windowMs)} s (budget ${seconds(decision.windowMs)} s${attemptSuffix(context)})`;
        case "healthy":
            return `[readiness] stayed healthy for ${seconds(decision.heldMs)} s after ready (same main process, unit active, no fatal log line, GET /health = 200 on ${decision.polls} polls)`;
        case "failed":
            return formatWindowFailure(decision.cause, decision.elapsedMs);
        default: {
            const never: never = decision;
            throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
    }
}

/** e.g. "[readiness] failed after 51 s in the healthy window: could not poll the unit: ...". */
function formatWindowFailure(cause: FailureCause, elapsedMs: number): string {
    return `[readiness] failed after ${seconds(elapsedMs)} s in the healthy window: ${describeFailure(cause)}`;
}

export type HealthyDecision = Extract<WindowDecision, { kind: "healthy" }>;

/** The healthy window as a condition of the one poll loop (core/readiness/await-condition.ts): met when the server stayed healthy for the whole window. */
export function healthyWindowCondition(window: HealthyWindowState, o: { pollIntervalMs: number; attempt?: AttemptContext }): AwaitCondition<HealthyDecision> {
    let state = window;
    return {
        judgeEarly(obs) {
            // A crash in the journal or the unit fails the window without waiting for /health.
            const early = earlyWindowFailure(state, obs);
            return early && early.kind === "failed" ? { kind: "failed", cause: early.cause, message: formatWindowProgress(early, o.attempt) } : null;
        },
        judge(obs): Verdict<HealthyDecision> {
            const r = stepWindow(state, obs);
            state = r.state;
            const d = r.decision;
            switch (d.kind) {
                case "failed":
                    return { kind: "failed", cause: d.cause, message: formatWindowProgress(d, o.attempt) };
                case "healthy":
                    return { kind: "met", value: d, message: formatWindowProgress(d, o.attempt) };
                case "holding":
                    return { kind: "waiting", progress: formatWindowProgress(d, o.attempt), topic: "healthy window", nextPollMs: o.pollIntervalMs };
                default: {
                    const never: never = d;
                    throw new Error(`unhandled decision ${JSON.stringify(never)}`);
                }
            }
        },
        failureMessage: (cause, elapsedMs) => formatWindowFailure(cause, elapsedMs),
    };
}
