// The rollout of a server as a plan: given what the box runs and what is
// declared, the next step, and the decision at each observation (what the
// step found). Stop-first, because two A6000s cannot hold two 52 GB servers:
//
//   keep the previous unit -> stop, wait for the GPU memory -> write the new unit
//   -> start and wait (readiness, checks, healthy window), retried for failures
//      that can pass on retry (issue 13: flaky starts of large MTP models)
//   -> on failure: stop, put the previous unit back, start and wait for it (retried too)
//
// Pure: no I/O, no clock. providers/sglang-server/rollout.ts runs the steps over SSH
// in a short loop; tests walk the plan observation by observation.

import { classifyJournalLine, describeFailure, FailureCause } from "../readiness/readiness";

export interface RolloutPlanInput {
    /** e.g. sglang-qwen.service, for messages. */
    unit: string;
    /** A unit file for this server is on the box now (it becomes the previous one). */
    hasUnit: boolean;
    /** The box's server was active before the rollout. */
    wasActive: boolean;
    /** readiness.startAttempts: starts per config before giving up (>= 1). */
    startAttempts: number;
    /** readiness.gpuReleaseTimeoutSeconds, for messages. */
    gpuReleaseTimeoutSeconds: number;
}

export type ConfigRole = "new" | "previous";

export type RolloutStep =
    /** Copy the unit file and the environment file to *.previous. */
    | { kind: "keep-previous" }
    /** systemctl stop; with waitForGpu, wait (bounded) until nvidia-smi shows the GPU memory released. */
    | { kind: "stop"; waitForGpu: boolean }
    /** Write the new unit and environment file, daemon-reload, enable. */
    | { kind: "write-new" }
    /** reset-failed, start, wait (readiness, checks, healthy window). */
    | { kind: "start"; config: ConfigRole; attempt: number; attempts: number }
    /** Copy *.previous back, daemon-reload. */
    | { kind: "restore-previous" }
    | { kind: "finish"; result: RolloutResult };

export type StartResult =
    | { ok: true }
    | {
          ok: false;
          cause: FailureCause;
          /** Journal lines of this start only (for the retry decision). */
          startLines: readonly string[];
          /** The unit journal's last lines (for the error message). */
          lastJournalLines: readonly string[];
      };

export type RolloutObservation =
    | { kind: "kept"; hadPrevious: boolean }
    | { kind: "stopped"; released: true }
    | { kind: "stopped"; released: false; reason: string }
    | { kind: "written" }
    | { kind: "started"; result: StartResult }
    | { kind: "restored" };

export type RetryVerdict = { retry: true } | { retry: false; why: string };

export interface FailedAttempt {
    config: ConfigRole;
    attempt: number;
    cause: FailureCause;
    verdict: RetryVerdict;
}

export type RolloutResult =
    | { ok: true; attempts: number }
    | {
          ok: false;
          /** Why the rollout failed: the new config's last failure (with the earlier attempts), or the GPU release. */
          cause: string;
          /** What the box runs now, as a clause: "the previous unit was put back and is ready again". */
          outcome: string;
          /** The journal tail of the new config's last failed start (empty when it never started). */
          journal: readonly string[];
          /** False when the new unit was never written: the box holds what it held. */
          changed: boolean;
          /**
           * Whose unit file the box holds now: the previous config's (put back, or
           * never replaced) or the new one's (no previous unit: left stopped).
           * The state records that config, so a refresh finds what it says.
           */
          holds: ConfigRole;
          failures: readonly FailedAttempt[];
      };

type Stage =
    | "keeping"
    | "stopping-to-replace"
    | "restarting-unchanged"
    | "writing"
    | "starting-new"
    | "stopping-to-retry-new"
    | "stopping-to-roll-back"
    | "restoring"
    | "starting-previous"
    | "stopping-to-retry-previous"
    | "stopping-failed-new"
    | "done";

export interface RolloutPlanState {
    readonly input: RolloutPlanInput;
    readonly stage: Stage;
    readonly hadPrevious: boolean;
    /** The attempt under way (or just done) of the config being started. */
    readonly attempt: number;
    readonly failures: readonly FailedAttempt[];
    /** The new config's last failure: the rollout's cause once it is rolled back. */
    readonly newFailure: { cause: string; journal: readonly string[] } | null;
    /** GPU memory not released in time at some stop (said in the outcome). */
    readonly releaseProblem: string | null;
    readonly changed: boolean;
    readonly result: RolloutResult | null;
}

export interface PlanAdvance {
    state: RolloutPlanState;
    step: RolloutStep;
    /** Progress lines for the operator, in order, before the step runs. */
    say: string[];
}

const OUT_OF_MEMORY = new Set(["not enough memory", "CUDA out of memory"]);

/**
 * Whether a failed start can pass on retry. Not: SGLang's argument parser or
 * ServerArgs refusing the config (the same argv fails the same way), out of
 * memory (the same config needs the same memory), checks that judge the
 * config rather than the start (API key, speculative decoding, a chat answer
 * that came back wrong), and a box that cannot be polled. Everything else
 * (a crash, a hang, a death after ready, a start that never became ready) can.
 */
export function retryVerdict(cause: FailureCause, startLines: readonly string[]): RetryVerdict {
    switch (cause.kind) {
        case "auth-check":
            return { retry: false, why: "whether the server enforces its API key depends on its config, not on the start" };
        case "speculative-check":
            return { retry: false, why: "whether speculative decoding is active depends on the config, not on the start" };
        case "chat-check":
            if (cause.status !== undefined && cause.status < 500) {
                return { retry: false, why: `the server answered the test chat completion (HTTP ${cause.status}): the same config answers the same way` };
            }
            break;
        case "post-ready-check":
            if (!cause.retry) return { retry: false, why: `the ${cause.check} check judges the config, not the start` };
            break;
        case "poll-error":
            return { retry: false, why: "the box could not be polled, so a new start could not be judged either" };
        case "start-refused":
            return { retry: false, why: "systemd refused the unit itself, as it will again" };
        case "fatal-log":
            if (OUT_OF_MEMORY.has(cause.reason))
                return { retry: false, why: `out of memory (${cause.reason}): the same config needs the same memory on every start` };
            break;
        case "unhealthy":
            if (cause.fatalReason !== undefined && OUT_OF_MEMORY.has(cause.fatalReason)) {
                return { retry: false, why: `out of memory (${cause.fatalReason}): the same config needs the same memory on every start` };
            }
            break;
        case "unit-stopped":
        case "restarted":
        case "deadline":
            break;
        default: {
            const never: never = cause;
            throw new Error(`unhandled cause ${JSON.stringify(never)}`);
        }
    }
    // The journal says more than the cause when the process exited before its lines were read.
    for (const line of startLines) {
        const c = classifyJournalLine(line);
        if (c.kind === "fatal" && OUT_OF_MEMORY.has(c.reason))
            return { retry: false, why: `out of memory (${c.reason}): the same config needs the same memory on every start` };
    }
    // argparse: "usage: sglang serve [-h] ..." then "sglang serve: error: ..." (exit 2).
    if (startLines.some((l) => /^usage: /.test(l)) && startLines.some((l) => /^[\w./ -]+: error: /.test(l))) {
        return { retry: false, why: "SGLang's argument parser refused the command line, as it will on every start" };
    }
    // ServerArgs.__post_init__ (and the CLI's own model-path check) raise before anything loads.
    if (startLines.some((l) => /File "[^"]*\/sglang\/srt\/server_args\.py"/.test(l) || /Error: --model-path is required/.test(l))) {
        return { retry: false, why: "SGLang's ServerArgs refused the config before loading anything, as it will on every start" };
    }
    return { retry: true };
}

function attemptsText(n: number, of: number): string {
    return `attempt ${n} of ${of}`;
}

/** The first step of a rollout. */
export function planRollout(input: RolloutPlanInput): PlanAdvance {
    const attempts = Math.max(1, Math.floor(input.startAttempts));
    const state: RolloutPlanState = {
        input: { ...input, startAttempts: attempts },
        stage: input.hasUnit ? "keeping" : "stopping-to-replace",
        hadPrevious: false,
        attempt: 0,
        failures: [],
        newFailure: null,
        releaseProblem: null,
        changed: false,
        result: null,
    };
    return { state, step: input.hasUnit ? { kind: "keep-previous" } : { kind: "stop", waitForGpu: true }, say: [] };
}

/** The decision on what the last step found: the next step. */
export function advanceRollout(state: RolloutPlanState, obs: RolloutObservation): PlanAdvance {
    const { input } = state;
    const u = input.unit;
    const of = input.startAttempts;
    const to = (next: Partial<RolloutPlanState>, step: RolloutStep, say: string[] = []): PlanAdvance => ({ state: { ...state, ...next }, step, say });
    const finish = (result: RolloutResult, say: string[] = []): PlanAdvance => to({ stage: "done", result }, { kind: "finish", result }, say);
    const unexpected = (): never => {
        throw new Error(`rollout plan: observation ${obs.kind} does not answer stage ${state.stage}`);
    };
    const startNew = (attempt: number, next: Partial<RolloutPlanState> = {}, say: string[] = []) =>
        to({ ...next, stage: "starting-new", attempt }, { kind: "start", config: "new", attempt, attempts: of }, say);
    const startPrevious = (attempt: number, stage: Stage, next: Partial<RolloutPlanState> = {}, say: string[] = []) =>
        to({ ...next, stage, attempt }, { kind: "start", config: "previous", attempt, attempts: of }, say);

    switch (state.stage) {
        case "keeping":
            if (obs.kind !== "kept") return unexpected();
            return to({ stage: "stopping-to-replace", hadPrevious: obs.hadPrevious }, { kind: "stop", waitForGpu: true });

        case "stopping-to-replace": {
            if (obs.kind !== "stopped") return unexpected();
            if (obs.released) return to({ stage: "writing" }, { kind: "write-new" });
            const problem = `GPU memory was not released within ${input.gpuReleaseTimeoutSeconds} s after stopping the server (${obs.reason})`;
            if (state.hadPrevious && input.wasActive) {
                return startPrevious(1, "restarting-unchanged", { releaseProblem: problem }, [
                    `[${u}] ${problem}; nothing was changed: starting the previous server again`,
                ]);
            }
            return finish({
                ok: false,
                cause: problem,
                outcome: "nothing was changed",
                journal: [],
                changed: false,
                holds: "previous",
                failures: state.failures,
            });
        }

        case "restarting-unchanged": {
            if (obs.kind !== "started") return unexpected();
            const cause = state.releaseProblem ?? "GPU memory was not released";
            if (obs.result.ok) {
                return finish({
                    ok: false,
                    cause,
                    outcome: "nothing was changed and the previous server was started again and is ready",
                    journal: [],
                    changed: false,
                    holds: "previous",
                    failures: state.failures,
                });
            }
            const failures = [
                ...state.failures,
                { config: "previous" as const, attempt: 1, cause: obs.result.cause, verdict: { retry: false as const, why: "the GPU memory is still held" } },
            ];
            return finish({
                ok: false,
                cause,
                outcome: `nothing was changed; the previous server was started again but did not become ready: ${describeFailure(obs.result.cause)}`,
                journal: obs.result.lastJournalLines,
                changed: false,
                holds: "previous",
                failures,
            });
        }

        case "writing":
            if (obs.kind !== "written") return unexpected();
            return startNew(1, { changed: true });

        case "starting-new": {
            if (obs.kind !== "started") return unexpected();
            if (obs.result.ok) return finish({ ok: true, attempts: state.attempt });
            const verdict = retryVerdict(obs.result.cause, obs.result.startLines);
            const failures = [...state.failures, { config: "new" as const, attempt: state.attempt, cause: obs.result.cause, verdict }];
            const newFailure = { cause: newConfigCause(failures, of), journal: obs.result.lastJournalLines };
            const what = describeFailure(obs.result.cause);
            if (verdict.retry && state.attempt < of) {
                return to({ stage: "stopping-to-retry-new", failures, newFailure }, { kind: "stop", waitForGpu: true }, [
                    `[${u}] ${attemptsText(state.attempt, of)} of the new config failed (${what}); that can pass on retry: stopping it to start it again`,
                ]);
            }
            const why = verdict.retry ? `after ${of} attempts` : `not retried: ${verdict.why}`;
            return rollBack({ ...state, failures, newFailure }, `[${u}] new config did not become ready (${what}); ${why}`);
        }

        case "stopping-to-retry-new": {
            if (obs.kind !== "stopped") return unexpected();
            if (obs.released) return startNew(state.attempt + 1, {}, [`[${u}] starting the new config again (${attemptsText(state.attempt + 1, of)})`]);
            const problem = `GPU memory of the failed start was not released within ${input.gpuReleaseTimeoutSeconds} s (${obs.reason})`;
            const newFailure = state.newFailure && { ...state.newFailure, cause: `${state.newFailure.cause} (not retried: ${problem})` };
            // Stopped already: put the previous unit back (or leave the new one stopped) without stopping again.
            if (!state.hadPrevious) {
                return finish(
                    failedResult(
                        { ...state, newFailure },
                        "there was no previous unit; the new one is left stopped for inspection (systemctl cat / journalctl)",
                    ),
                );
            }
            return to({ stage: "restoring", newFailure, releaseProblem: problem }, { kind: "restore-previous" }, [
                `[${u}] ${problem}; putting the previous unit back`,
            ]);
        }

        case "stopping-to-roll-back": {
            if (obs.kind !== "stopped") return unexpected();
            const releaseProblem = obs.released
                ? state.releaseProblem
                : `GPU memory was not released within ${input.gpuReleaseTimeoutSeconds} s (${obs.reason})`;
            return to({ stage: "restoring", releaseProblem }, { kind: "restore-previous" });
        }

        case "restoring":
            if (obs.kind !== "restored") return unexpected();
            return startPrevious(1, "starting-previous");

        case "starting-previous": {
            if (obs.kind !== "started") return unexpected();
            const note = state.releaseProblem ? ` (started while ${state.releaseProblem})` : "";
            if (obs.result.ok) return finish(failedResult(state, `the previous unit was put back and is ready again${note}`));
            const verdict = retryVerdict(obs.result.cause, obs.result.startLines);
            const failures = [...state.failures, { config: "previous" as const, attempt: state.attempt, cause: obs.result.cause, verdict }];
            const what = describeFailure(obs.result.cause);
            if (verdict.retry && state.attempt < of) {
                return to({ stage: "stopping-to-retry-previous", failures }, { kind: "stop", waitForGpu: true }, [
                    `[${u}] ${attemptsText(state.attempt, of)} of the previous config failed (${what}); that can pass on retry: stopping it to start it again`,
                ]);
            }
            const notRunning = input.wasActive ? "" : " (it was not running before this rollout)";
            return finish(failedResult({ ...state, failures }, `the previous unit was put back but did not become ready either: ${what}${notRunning}${note}`));
        }

        case "stopping-to-retry-previous": {
            if (obs.kind !== "stopped") return unexpected();
            const releaseProblem = obs.released
                ? state.releaseProblem
                : `GPU memory was not released within ${input.gpuReleaseTimeoutSeconds} s (${obs.reason})`;
            return startPrevious(state.attempt + 1, "starting-previous", { releaseProblem }, [
                `[${u}] starting the previous config again (${attemptsText(state.attempt + 1, of)})`,
            ]);
        }

        case "stopping-failed-new":
            if (obs.kind !== "stopped") return unexpected();
            return finish(failedResult(state, "there was no previous unit; the new one is left stopped for inspection (systemctl cat / journalctl)"));

        case "done":
            return unexpected();

        default: {
            const never: never = state.stage;
            throw new Error(`unhandled stage ${String(never)}`);
        }
    }
}

/**
 * A step that failed with an error of its own (a command systemd refused, SSH
 * gone) is not an observation the plan can judge. What the box may hold then,
 * and whether to put the previous unit back (best effort) before failing:
 * from the new unit's write until the previous one is back, the new one.
 */
export function onStepError(state: RolloutPlanState): { holds: ConfigRole; putBack: boolean } {
    switch (state.stage) {
        case "keeping":
        case "stopping-to-replace":
        case "restarting-unchanged":
        case "starting-previous":
        case "stopping-to-retry-previous":
        case "done":
            return { holds: "previous", putBack: false };
        case "writing":
        case "starting-new":
        case "stopping-to-retry-new":
        case "stopping-to-roll-back":
        case "restoring":
        case "stopping-failed-new":
            return { holds: "new", putBack: state.hadPrevious };
        default: {
            const never: never = state.stage;
            throw new Error(`unhandled stage ${String(never)}`);
        }
    }
}

/** After the new config failed for good: put the previous unit back, or stop the new one when there is none. */
function rollBack(state: RolloutPlanState, reason: string): PlanAdvance {
    if (state.hadPrevious) {
        return {
            state: { ...state, stage: "stopping-to-roll-back" },
            step: { kind: "stop", waitForGpu: true },
            say: [`${reason}; putting the previous unit back`],
        };
    }
    // Nothing ran before: stop the failing unit so it does not restart-loop on the GPUs.
    return {
        state: { ...state, stage: "stopping-failed-new" },
        step: { kind: "stop", waitForGpu: false },
        say: [`${reason}; there is no previous unit: stopping ${state.input.unit}`],
    };
}

function failedResult(state: RolloutPlanState, outcome: string): RolloutResult {
    return {
        ok: false,
        cause: state.newFailure?.cause ?? "the new config did not become ready",
        outcome,
        journal: state.newFailure?.journal ?? [],
        changed: state.changed,
        // Without a previous unit the failed new one stays (stopped); otherwise the previous one is back.
        holds: state.hadPrevious ? "previous" : "new",
        failures: state.failures,
    };
}

/** The new config's last failure, with the earlier attempts and why it was not retried. */
function newConfigCause(failures: readonly FailedAttempt[], of: number): string {
    const mine = failures.filter((f) => f.config === "new");
    const last = mine[mine.length - 1]!;
    const notes: string[] = [];
    if (mine.length > 1 || of > 1) notes.push(attemptsText(last.attempt, of));
    const lastText = describeFailure(last.cause);
    for (const f of mine.slice(0, -1)) {
        const text = describeFailure(f.cause);
        notes.push(text === lastText ? `attempt ${f.attempt} failed the same way` : `attempt ${f.attempt}: ${text}`);
    }
    if (!last.verdict.retry) notes.push(`not retried: ${last.verdict.why}`);
    return notes.length > 0 ? `${lastText} (${notes.join("; ")})` : lastText;
}
