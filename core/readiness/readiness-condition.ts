// The readiness machine (core/readiness/readiness.ts) as a condition of the
// one poll loop (core/readiness/await-condition.ts): met when ready, failed as
// the machine decides, and polled faster once the server is close to ready.

import type { AwaitCondition, Verdict } from "./await-condition";
import {
    formatProgress,
    initialReadinessState,
    step,
    type AttemptContext,
    type FailureCause,
    type ReadinessDecision,
    type ReadinessState,
    type ReadinessTimings,
    type UnitStatus,
} from "./readiness";

/** Poll interval once the server is close to ready. */
export const NEAR_READY_POLL_MS = 250;

export type ReadyDecision = Extract<ReadinessDecision, { kind: "ready" }>;

export interface ReadinessCondition extends AwaitCondition<{ ready: ReadyDecision; unit: UnitStatus }> {
    /** The machine's state after the last poll judged (its phase timeline, its recent lines). */
    readonly state: ReadinessState;
}

/** The readiness machine, awaited: met when ready, with the unit as the ready poll saw it (the healthy window opens on it). */
export function readinessCondition(timings: ReadinessTimings, o: { pollIntervalMs: number; attempt?: AttemptContext }): ReadinessCondition {
    let state = initialReadinessState(timings);
    const failed = (d: Extract<ReadinessDecision, { kind: "failed" }>): { kind: "failed"; cause: FailureCause; message: string } => ({
        kind: "failed",
        cause: d.cause,
        message: formatProgress(d, o.attempt),
    });
    return {
        get state() {
            return state;
        },
        judgeEarly(obs) {
            // Fatal lines, the unit's state and restarts are judged before /health in
            // `step`, so a failure found without /health's answer stands as it is.
            // (Not the deadline: its message names the last /health answer.)
            const early = step(state, { ...obs, health: { error: "pending" } });
            if (early.decision.kind !== "failed" || early.decision.cause.kind === "deadline") return null;
            state = early.state;
            return failed(early.decision);
        },
        judge(obs): Verdict<{ ready: ReadyDecision; unit: UnitStatus }> {
            const r = step(state, obs);
            state = r.state;
            const d = r.decision;
            switch (d.kind) {
                case "failed":
                    return failed(d);
                case "ready":
                    return { kind: "met", value: { ready: d, unit: obs.unit }, message: formatProgress(d) };
                case "waiting": {
                    // Once the HTTP server is up (warmup under way) or the ready line was seen,
                    // readiness is moments away: poll faster so it is noticed within a quarter
                    // second, without polling the long weight-loading phase more often.
                    const nearReady = d.phase === "starting HTTP server" || d.phase === "warming up" || state.readyLineSeen;
                    const nextPollMs = nearReady ? Math.min(o.pollIntervalMs, NEAR_READY_POLL_MS) : o.pollIntervalMs;
                    return { kind: "waiting", progress: formatProgress(d, o.attempt), topic: d.phase, nextPollMs };
                }
                default: {
                    const never: never = d;
                    throw new Error(`unhandled decision ${JSON.stringify(never)}`);
                }
            }
        },
        failureMessage(cause, elapsedMs) {
            return formatProgress({ kind: "failed", elapsedMs, phase: state.phase, cause }, o.attempt);
        },
    };
}
