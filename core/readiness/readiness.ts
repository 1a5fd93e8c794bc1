// Readiness of an SGLang server, judged from what a poll can see: the systemd
// unit's state, the unit's new journal lines and GET /health.
//
// Pure: no I/O, no clock. The I/O driver (remote/readiness-wait.ts) gathers one
// Observation per poll and feeds it to `step`; tests feed recorded logs.
//
// Why both signals: GET /health answers 503 until SGLang's warmup succeeded and
// is THE readiness signal (sglang-facts.md), but a crash must be reported within
// seconds of happening, not at the 15-minute startup budget (field-notes.md), so
// fatal journal lines and the unit's state fail the wait on the poll that shows them.

/** Startup phases, in the order SGLang goes through them. */
export const PHASES = ["starting", "loading weights", "allocating caches", "capturing CUDA graphs", "starting HTTP server", "warming up"] as const;
export type Phase = (typeof PHASES)[number];

export type LineClass = { kind: "fatal"; reason: string } | { kind: "ready" } | { kind: "phase"; phase: Phase } | { kind: "other" };

const READY_MARKER = "The server is fired up and ready to roll!";
const TRACEBACK = "Python traceback";

// Substrings that mean the server (or one of its ranks) is dying. Each entry is
// [reason, test]. Exception names only count when followed by ":" or the end of
// the line, as Python prints them, so prose such as "will raise a ValueError in
// a future version" in a deprecation warning is not fatal.
const FATAL_PATTERNS: ReadonlyArray<readonly [string, RegExp]> = [
    // SGLang's own markers first: they say which part died.
    ["scheduler died", /Scheduler hit an exception/],
    ["warmup failed", /Initialization failed/],
    ["watchdog timeout", /Watchdog timeout/],
    ["a child process failed", /Received sigquit from a child process/],
    ["not enough memory", /Not enough memory/i],
    ["CUDA out of memory", /CUDA out of memory|OutOfMemoryError(:|$)/i],
    ["ValueError", /\bValueError(:|$)/],
    ["RuntimeError", /\bRuntimeError(:|$)/],
    ["AssertionError", /\bAssertionError(:|$)/],
    // Any other uncaught exception: its last traceback line starts at column 0 with
    // the (possibly dotted) exception type, e.g. "TypeError: ..." which SGLang
    // raises for --speculative-num-steps without --speculative-eagle-topk.
    ["uncaught exception", /^([A-Za-z_]\w*\.)*[A-Z]\w*(Error|Exception)(:|$)|^Exception(:|$)/],
    // Last: the header says little; the exception line after it says what.
    [TRACEBACK, /Traceback \(most recent call last\)/],
];

// Phase markers; a line may only move the phase forward (see `advance`).
const PHASE_PATTERNS: ReadonlyArray<readonly [Phase, RegExp]> = [
    ["loading weights", /Load weight begin/],
    ["allocating caches", /KV Cache is allocated|Mamba Cache is allocated|Memory pool end/],
    ["capturing CUDA graphs", /Capture cuda graph begin/i],
    // uvicorn's startup lines; the server is NOT ready yet, warmup follows.
    ["starting HTTP server", /Uvicorn running on|Application startup complete|Started server process|Waiting for application startup/],
    // The warmup request itself (its prefill batch and the access-log line).
    ["warming up", /"POST \/generate HTTP\/1\.[01]"|Prefill batch\. #new-seq: 1,/],
];

/** What a single journal line tells about the startup. */
export function classifyJournalLine(line: string): LineClass {
    if (line.includes(READY_MARKER)) return { kind: "ready" };
    for (const [reason, re] of FATAL_PATTERNS) {
        if (re.test(line)) return { kind: "fatal", reason };
    }
    for (const [phase, re] of PHASE_PATTERNS) {
        if (re.test(line)) return { kind: "phase", phase };
    }
    return { kind: "other" };
}

export function phaseIndex(phase: Phase): number {
    return PHASES.indexOf(phase);
}

/** Phases never go backwards: TP0 and TP1 print the same markers at different times. */
function advance(current: Phase, seen: Phase): Phase {
    return phaseIndex(seen) > phaseIndex(current) ? seen : current;
}

// ---------------------------------------------------------------------------
// The state machine

export interface UnitStatus {
    /** systemd ActiveState: active, activating, deactivating, failed, inactive, reloading, ... */
    activeState: string;
    /** systemd SubState: running, start-pre, auto-restart, exited, dead, ... */
    subState: string;
    /** 0 when there is no main process. */
    mainPid: number;
    nRestarts: number;
}

export type HealthObservation = { status: number } | { error: string };

export interface Observation {
    /** Milliseconds since the readiness wait started (after the restart). */
    elapsedMs: number;
    unit: UnitStatus;
    /** Journal lines written since the previous observation, oldest first. */
    newJournalLines: string[];
    health: HealthObservation;
}

/** The state machine's settings, in milliseconds (the stack's readiness section, in seconds, is ReadinessConfig in core/config/schema.ts). */
export interface ReadinessTimings {
    startupTimeoutMs: number;
    /**
     * Consecutive polls with GET /health = 200 but no ready line before the health
     * check alone is believed. Default 3. Why not 0: the ready line is written just
     * before /health flips, and journald may deliver it a poll late. Why not
     * "never": `--log-level warning` suppresses the (info) ready line and journald
     * rate-limits bursts, and /health = 200 really means a warmup generation
     * succeeded, so a missing line must not block a healthy server forever.
     */
    healthOnlyGracePolls?: number;
    /** Journal lines kept for failure messages. Default 40. */
    keepLines?: number;
}

export interface PhaseEntry {
    phase: Phase;
    enteredAtMs: number;
}

export type FailureCause =
    | { kind: "unit-stopped"; activeState: string; subState: string }
    | { kind: "restarted"; detail: string }
    | { kind: "fatal-log"; reason: string; line: string }
    | { kind: "deadline"; budgetMs: number; phase: Phase; lastHealth: string }
    // Set by the I/O driver, not by `step`: the checks after readiness.
    /** status: the HTTP status of the answer (200 for garbage text); absent when none came. */
    | { kind: "chat-check"; reason: string; status?: number }
    | { kind: "speculative-check"; reason: string }
    | { kind: "auth-check"; reason: string }
    /**
     * Any other post-ready check (remote/checks/): it names itself and says
     * whether a new start could pass it, so a new check needs no case here.
     */
    | { kind: "post-ready-check"; check: string; reason: string; retry: boolean }
    | { kind: "poll-error"; reason: string }
    /** `systemctl start` itself failed (systemd refused the unit, e.g. its executable is missing). */
    | { kind: "start-refused"; reason: string }
    /** Ready, checked, then not healthy for the whole window (core/readiness/healthy-window.ts). */
    | { kind: "unhealthy"; heldMs: number; windowMs: number; detail: string; fatalReason?: string; line?: string };

export type ReadinessDecision =
    | {
          kind: "waiting";
          phase: Phase;
          elapsedMs: number;
          budgetMs: number;
          /** What the readiness wait is waiting for, for progress messages. */
          awaiting: string;
      }
    | {
          kind: "ready";
          elapsedMs: number;
          /** health+log: /health = 200 and the ready line; health-only: the grace polls ran out. */
          corroboratedBy: "health+log" | "health-only";
          phaseTimeline: PhaseEntry[];
      }
    | { kind: "failed"; elapsedMs: number; phase: Phase; cause: FailureCause };

export interface ReadinessState {
    readonly config: Required<ReadinessTimings>;
    readonly phase: Phase;
    readonly phaseTimeline: readonly PhaseEntry[];
    readonly readyLineSeen: boolean;
    /** Consecutive polls with /health = 200 and no ready line yet. */
    readonly healthOkWithoutLine: number;
    /** NRestarts of the first observation; MainPID of the first one that had a main process (0: none yet). */
    readonly baseline: { mainPid: number; nRestarts: number } | null;
    readonly recentLines: readonly string[];
    /** Set once ready or failed; every later step repeats it. */
    readonly final: ReadinessDecision | null;
}

export function initialReadinessState(config: ReadinessTimings): ReadinessState {
    return {
        config: {
            startupTimeoutMs: config.startupTimeoutMs,
            healthOnlyGracePolls: config.healthOnlyGracePolls ?? 3,
            keepLines: config.keepLines ?? 40,
        },
        phase: "starting",
        phaseTimeline: [{ phase: "starting", enteredAtMs: 0 }],
        readyLineSeen: false,
        healthOkWithoutLine: 0,
        baseline: null,
        recentLines: [],
        final: null,
    };
}

/** A /health observation in words: "HTTP 503", or why the request failed. */
export function describeHealth(h: HealthObservation): string {
    return "status" in h ? `HTTP ${h.status}` : h.error;
}

/**
 * One poll. Checks, in order: fatal journal lines, the unit's state, a restart,
 * readiness, the deadline. Failure checks come first so a crash in the same poll
 * as a stale 200 is still a crash.
 */
export function step(state: ReadinessState, obs: Observation): { state: ReadinessState; decision: ReadinessDecision } {
    if (state.final) return { state, decision: state.final };

    const keep = state.config.keepLines;
    const recentLines = [...state.recentLines, ...obs.newJournalLines].slice(-keep);
    let phase = state.phase;
    const timeline = [...state.phaseTimeline];
    let readyLineSeen = state.readyLineSeen;
    let fatal: { reason: string; line: string } | null = null;

    const enter = (p: Phase): void => {
        const next = advance(phase, p);
        if (next !== phase) {
            phase = next;
            timeline.push({ phase, enteredAtMs: obs.elapsedMs });
        }
    };

    for (const line of obs.newJournalLines) {
        const c = classifyJournalLine(line);
        switch (c.kind) {
            case "fatal":
                // The first fatal line is the cause (later ones are usually its echo),
                // except that the exception line beats the bare "Traceback" header
                // before it: "ValueError: Speculative decoding ..." says what to fix.
                if (!fatal || (fatal.reason === TRACEBACK && c.reason !== TRACEBACK)) fatal = { reason: c.reason, line };
                break;
            case "ready":
                readyLineSeen = true;
                break;
            case "phase":
                enter(c.phase);
                break;
            case "other":
                break;
            default: {
                const never: never = c;
                throw new Error(`unhandled line class ${JSON.stringify(never)}`);
            }
        }
    }
    // Any HTTP answer (even 503) means uvicorn is up, so the server is at least
    // warming up, even if the journal lines saying so were lost.
    if ("status" in obs.health && phaseIndex(phase) >= phaseIndex("starting HTTP server")) {
        enter("warming up");
    }

    // Baselines: NRestarts from the first observation; MainPID from the first
    // observation that has a main process (before that, e.g. in start-pre, there
    // is nothing to compare against).
    const first = state.baseline ?? { mainPid: 0, nRestarts: obs.unit.nRestarts };
    let restarted: string | null = null;
    if (obs.unit.nRestarts > first.nRestarts) {
        restarted = `systemd restarted the unit (NRestarts ${first.nRestarts} -> ${obs.unit.nRestarts})`;
    } else if (first.mainPid !== 0 && obs.unit.mainPid !== first.mainPid) {
        restarted =
            obs.unit.mainPid === 0
                ? `the main process ${first.mainPid} exited`
                : `the main process changed (MainPID ${first.mainPid} -> ${obs.unit.mainPid}): a restart loop`;
    }
    const baseline = first.mainPid === 0 ? { ...first, mainPid: obs.unit.mainPid } : first;

    const healthOk = "status" in obs.health && obs.health.status === 200;
    const healthOkWithoutLine = healthOk && !readyLineSeen ? state.healthOkWithoutLine + 1 : 0;

    const base = {
        ...state,
        phase,
        phaseTimeline: timeline,
        readyLineSeen,
        healthOkWithoutLine,
        baseline,
        recentLines,
    };
    const finish = (decision: ReadinessDecision): { state: ReadinessState; decision: ReadinessDecision } => {
        const final = decision.kind === "waiting" ? null : decision;
        return { state: { ...base, final }, decision };
    };
    const fail = (cause: FailureCause) => finish({ kind: "failed", elapsedMs: obs.elapsedMs, phase, cause });

    if (fatal) return fail({ kind: "fatal-log", reason: fatal.reason, line: fatal.line });

    const unitProblem = unitStateProblem(obs.unit);
    if (unitProblem === "stopped") {
        return fail({ kind: "unit-stopped", activeState: obs.unit.activeState, subState: obs.unit.subState });
    }
    if (unitProblem === "restarting") {
        return fail({
            kind: "restarted",
            detail: `the unit is ${obs.unit.activeState}/${obs.unit.subState}: its main process died and systemd is restarting it`,
        });
    }
    if (restarted) return fail({ kind: "restarted", detail: restarted });

    if (healthOk && readyLineSeen) {
        return finish({ kind: "ready", elapsedMs: obs.elapsedMs, corroboratedBy: "health+log", phaseTimeline: timeline });
    }
    if (healthOk && healthOkWithoutLine >= state.config.healthOnlyGracePolls) {
        return finish({ kind: "ready", elapsedMs: obs.elapsedMs, corroboratedBy: "health-only", phaseTimeline: timeline });
    }

    if (obs.elapsedMs > state.config.startupTimeoutMs) {
        return fail({
            kind: "deadline",
            budgetMs: state.config.startupTimeoutMs,
            phase,
            lastHealth: describeHealth(obs.health),
        });
    }

    let awaiting: string;
    if (healthOk) awaiting = "the ready log line (GET /health is already 200)";
    else if (readyLineSeen) awaiting = `GET /health = 200 (ready line seen; last: ${describeHealth(obs.health)})`;
    else awaiting = "GET /health = 200";
    return finish({
        kind: "waiting",
        phase,
        elapsedMs: obs.elapsedMs,
        budgetMs: state.config.startupTimeoutMs,
        awaiting,
    });
}

/** "stopped": the unit is not running any more; "restarting": systemd is between two runs. */
function unitStateProblem(unit: UnitStatus): "stopped" | "restarting" | null {
    if (unit.subState === "auto-restart") return "restarting";
    switch (unit.activeState) {
        case "active":
        case "activating":
        case "reloading":
            return null;
        default:
            // failed, inactive, deactivating, maintenance or anything newer.
            return "stopped";
    }
}

const seconds = (ms: number): number => Math.round(ms / 1000);

/** Which start of a config this is, when a rollout may start it more than once. */
export interface AttemptContext {
    attempt: number;
    attempts: number;
}

/**
 * One line for the operator, e.g. "[readiness] capturing CUDA graphs — 42 s elapsed, waiting for GET /health = 200 (budget 900 s)";
 * with an attempt context, "(budget 900 s, attempt 2 of 2)".
 */
export function formatProgress(decision: ReadinessDecision, context?: AttemptContext): string {
    switch (decision.kind) {
        case "waiting":
            return `[readiness] ${decision.phase} — ${seconds(decision.elapsedMs)} s elapsed, waiting for ${decision.awaiting} (budget ${seconds(decision.budgetMs)} s${attemptSuffix(context)})`;
        case "ready":
            return `[readiness] ready after ${seconds(decision.elapsedMs)} s (${decision.corroboratedBy === "health+log" ? "GET /health = 200 and the ready log line" : "GET /health = 200; the ready log line was not seen"})`;
        case "failed":
            return `[readiness] failed after ${seconds(decision.elapsedMs)} s during ${decision.phase}: ${describeFailure(decision.cause)}`;
        default: {
            const never: never = decision;
            throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
    }
}

/** ", attempt 2 of 2", or nothing without a context. */
export function attemptSuffix(context: AttemptContext | undefined): string {
    return context ? `, attempt ${context.attempt} of ${context.attempts}` : "";
}

export function describeFailure(cause: FailureCause): string {
    switch (cause.kind) {
        case "unit-stopped":
            return `the unit is ${cause.activeState}/${cause.subState}`;
        case "restarted":
            return cause.detail;
        case "fatal-log":
            return `fatal log line (${cause.reason}): ${cause.line}`;
        case "deadline":
            return `not ready within the startup budget of ${seconds(cause.budgetMs)} s (phase: ${cause.phase}; last GET /health: ${cause.lastHealth})`;
        case "chat-check":
            return `the server is up but the test chat completion failed: ${cause.reason}`;
        case "speculative-check":
            return `speculative decoding is not active: ${cause.reason}`;
        case "auth-check":
            return `the server does not enforce its API key: ${cause.reason}`;
        case "post-ready-check":
            return `the server is up but failed the ${cause.check} check: ${cause.reason}`;
        case "poll-error":
            return `could not poll the unit: ${cause.reason}`;
        case "start-refused":
            return `systemd refused to start the unit: ${cause.reason}`;
        case "unhealthy":
            return `the server was ready but did not stay healthy for ${seconds(cause.windowMs)} s (readiness.minHealthySeconds): after ${seconds(cause.heldMs)} s, ${cause.detail}`;
        default: {
            const never: never = cause;
            throw new Error(`unhandled cause ${JSON.stringify(never)}`);
        }
    }
}
