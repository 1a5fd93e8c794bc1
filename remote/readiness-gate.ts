// The I/O driver of the readiness state machine (core/readiness.ts): polls the
// unit and its journal over SSH (one command per poll) and GET /health from
// this machine, until the machine says ready or failed; then checks that the
// server really generates (one short chat completion) and, with speculative
// decoding, that the drafter is active.

import { newMarker, parseBatch, renderBatch } from "../core/batch-script";
import { checkChatResponse, checkSpeculativeActive } from "../core/chat-check";
import { earlyWindowFailure, formatWindowProgress, openHealthyWindow, stepWindow } from "../core/healthy-window";
import {
    AttemptContext,
    FailureCause,
    formatProgress,
    HealthObservation,
    initialReadinessState,
    PhaseEntry,
    ReadinessDecision,
    step,
    UnitStatus,
} from "../core/readiness";
import { endpointUrl, getServerInfo, httpGetJson, httpPostJson, HttpResult, ProbeOptions } from "./probe";
import { RemoteRunner } from "./remote-host";
import { SshError } from "./ssh-error";

/** Where to start reading the unit's journal: a cursor, or a time journalctl --since understands ("@1767268800"). */
export type JournalPosition = { cursor: string } | { time: string };

export interface WaitUntilReadyOptions {
    remote: RemoteRunner;
    /** e.g. "sglang-qwen.service" */
    unit: string;
    /** http://host:port of the OpenAI-compatible API, as reachable from this machine. */
    endpoint: string;
    /** SGLang --api-key: sent as a Bearer token to the chat completion and /server_info (not /health, which is open). */
    apiKey?: string;
    startupTimeoutMs: number;
    /** Default 1000. */
    pollIntervalMs?: number;
    /** Per HTTP probe; >= SGLang's 20 s health-check timeout plus a margin. */
    probeTimeoutMs: number;
    /**
     * Journal lines before this are not read: take it with `journalPosition`
     * right after `systemctl restart` returned, so the old process's shutdown
     * lines (which may hold tracebacks) are not judged.
     */
    since: JournalPosition;
    onProgress?: (message: string) => void;
    /** Progress at most this often, plus on every phase change. Default 5000. */
    progressEveryMs?: number;
    /** The configured algorithm (NEXTN, EAGLE3, ...) when speculative decoding is on. */
    expectedSpeculative?: string;
    /** Send one short chat completion after ready and judge its text. */
    chatCheck: boolean;
    servedModelName: string;
    /** See ReadinessTimings.healthOnlyGracePolls. */
    healthOnlyGracePolls?: number;
    /**
     * After ready and the checks, the server must stay healthy this long
     * (core/healthy-window.ts) before the gate passes. Default 0: no window.
     */
    minHealthyMs?: number;
    /** Which start of the config this is; shown in the progress lines. */
    attempt?: AttemptContext;
    /** Seams for tests: clock, sleep and HTTP. Defaults: Date.now, setTimeout, probe.ts. */
    now?: () => number;
    sleep?: (ms: number) => Promise<void>;
    http?: {
        get: (url: string, opts: ProbeOptions) => Promise<HttpResult>;
        post: (url: string, payload: unknown, opts: ProbeOptions) => Promise<HttpResult>;
    };
}

export type GateResult =
    | {
          ok: true;
          readyAtMs: number;
          corroboratedBy: "health+log" | "health-only";
          phaseTimeline: PhaseEntry[];
          /** GET /server_info after the checks; null when it could not be read and nothing required it. */
          serverInfo: unknown;
          /** The chat check's text, when it ran. */
          chatText: string | null;
          /** Lowest avg_spec_accept_length reported, when speculation is checked and reported. */
          acceptLength: number | null;
      }
    | {
          ok: false;
          cause: FailureCause;
          /** One line for the operator: formatProgress of the failed decision. */
          message: string;
          lastJournalLines: string[];
          phaseTimeline: PhaseEntry[];
          /** The journal lines of this start (the last START_LINES_KEPT), read to the end after the failure. */
          startLines: string[];
      };

/** Journal lines of one start kept for the retry decision (core/rollout-plan.ts retryVerdict). */
const START_LINES_KEPT = 200;

// One command per poll (core/batch-script.ts framing): the unit's state, then
// the new journal lines with the cursor after them. Unit and position are
// positional parameters ($1..$3), so nothing is pasted into the script.
export function pollScript(marker: string): string {
    return renderBatch(
        [
            { name: "state", script: `systemctl show -p ActiveState,SubState,MainPID,NRestarts -- "$1"` },
            {
                name: "journal",
                script: [
                    `if [ "$2" = cursor ]; then exec journalctl -u "$1" --no-pager -q -o cat --show-cursor --after-cursor="$3"; fi`,
                    `exec journalctl -u "$1" --no-pager -q -o cat --show-cursor --since="$3"`,
                ].join("\n"),
            },
        ],
        marker,
    );
}

// The unit journal's current end: the cursor of its last entry, or the remote
// clock when the unit has no entries yet.
const POSITION_SCRIPT = [
    `c=$(journalctl -u "$1" --no-pager -q -o cat -n 1 --show-cursor | sed -n 's/^-- cursor: //p' | tail -n 1)`,
    `if [ -n "$c" ]; then echo "cursor $c"; else echo "time @$(date +%s)"; fi`,
].join("\n");

interface PollResult {
    unit: UnitStatus;
    lines: string[];
    cursor: string | null;
    journalError: string | null;
}

/** Parse the poll command's output. Exported for tests. */
export function parsePollOutput(stdout: string, stderr: string, code: number, marker: string): PollResult {
    const sections = parseBatch(stdout, marker);
    const state = sections.get("state");
    const journal = sections.get("journal");
    if (state === undefined || journal === undefined) {
        throw new Error(`unexpected output from systemctl (exit ${code}): ${(stderr || stdout.replaceAll(`${marker} `, "")).trim().slice(0, 500)}`);
    }
    const props = new Map<string, string>();
    for (const line of state.split("\n")) {
        const eq = line.indexOf("=");
        if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1));
    }
    const activeState = props.get("ActiveState");
    if (activeState === undefined) throw new Error(`systemctl show gave no ActiveState: ${(stderr || stdout).trim().slice(0, 500)}`);
    const num = (k: string): number => {
        const v = Number(props.get(k) ?? "0");
        return Number.isFinite(v) ? v : 0;
    };
    const lines = journal.split("\n");
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    let cursor: string | null = null;
    const last = lines[lines.length - 1];
    if (last !== undefined && last.startsWith("-- cursor: ")) {
        cursor = last.slice("-- cursor: ".length).trim();
        lines.pop();
    }
    // journalctl (systemd 252) with --show-cursor exits 1 without a word when no entry matches (it has no
    // cursor to show): the first poll after a restart, before the new process has logged. No entries, not an error.
    const nothingYet = code === 1 && stderr.trim() === "" && lines.length === 0;
    return {
        unit: { activeState, subState: props.get("SubState") ?? "", mainPid: num("MainPID"), nRestarts: num("NRestarts") },
        lines: lines.filter((l) => l !== "-- No entries --"),
        cursor,
        journalError: code !== 0 && !nothingYet ? (stderr.trim() || `journalctl exited ${code}`).slice(0, 300) : null,
    };
}

/** Where the unit's journal ends now; pass it as `since` after restarting the unit. */
export async function journalPosition(remote: RemoteRunner, unit: string): Promise<JournalPosition> {
    const r = await remote.run(["sh", "-c", POSITION_SCRIPT, "sh", unit]);
    const out = r.stdout.trim().split("\n").pop() ?? "";
    if (out.startsWith("cursor ")) return { cursor: out.slice("cursor ".length) };
    if (out.startsWith("time ")) return { time: out.slice("time ".length) };
    throw new Error(`cannot read the journal position of ${unit} on ${remote.describe()} (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}`);
}

/** The unit's last n journal lines, for error messages. */
export async function readJournalTail(remote: RemoteRunner, unit: string, n: number): Promise<string[]> {
    const r = await remote.run(["journalctl", "-u", unit, "--no-pager", "-q", "-o", "cat", "-n", String(n)]);
    if (r.code !== 0) throw new Error(`journalctl -u ${unit} failed on ${remote.describe()} (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}`);
    const lines = r.stdout.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    return lines.filter((l) => l !== "-- No entries --");
}

/** Poll interval once the server is close to ready (see the loop in waitUntilReady). */
const NEAR_READY_POLL_MS = 250;

/** An endpoint SGLang's API-key middleware guards (a "normal" route, not /health*, /ready* or /metrics). */
const AUTH_CHECK_PATH = "/v1/models";

const CHAT_PROMPT = "Answer in one short sentence: what is the capital of France?";

/** Wait until the server is ready and generating, or failed. Never throws for server problems: they are results. */
export async function waitUntilReady(o: WaitUntilReadyOptions): Promise<GateResult> {
    const now = o.now ?? Date.now;
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const http = o.http ?? { get: httpGetJson, post: httpPostJson };
    const pollIntervalMs = o.pollIntervalMs ?? 1000;
    const progressEveryMs = o.progressEveryMs ?? 5000;
    const say = o.onProgress ?? (() => undefined);
    const start = now();

    let state = initialReadinessState({
        startupTimeoutMs: o.startupTimeoutMs,
        ...(o.healthOnlyGracePolls !== undefined ? { healthOnlyGracePolls: o.healthOnlyGracePolls } : {}),
    });
    let position: JournalPosition = o.since;
    let lastProgressAt = -Infinity;
    let lastPhase: string | null = null;
    let journalWarned = false;
    let lastUnit: UnitStatus | null = null;
    let startLines: string[] = [];
    const keepLines = (lines: readonly string[]): void => {
        if (lines.length > 0) startLines = [...startLines, ...lines].slice(-START_LINES_KEPT);
    };

    // One command: the unit's state and the journal lines since the last poll.
    const poll = (): Promise<PollResult | { error: string }> => {
        const positionArgs = "cursor" in position ? ["cursor", position.cursor] : ["since", position.time];
        const marker = newMarker();
        return o.remote.run(["sh", "-c", pollScript(marker), "sh", o.unit, ...positionArgs]).then(
            (r): PollResult | { error: string } => {
                try {
                    return parsePollOutput(r.stdout, r.stderr, r.code, marker);
                } catch (e) {
                    return { error: (e as Error).message };
                }
            },
            (e: unknown) => ({ error: e instanceof SshError || e instanceof Error ? e.message : String(e) }),
        );
    };
    const took = (polled: PollResult): void => {
        if (polled.cursor) position = { cursor: polled.cursor };
        lastUnit = polled.unit;
        keepLines(polled.lines);
        if (polled.journalError && !journalWarned) {
            // Health and unit state still work without the journal; say it once.
            journalWarned = true;
            say(`[readiness] cannot read the journal of ${o.unit} (${polled.journalError}); judging by the unit state and /health only`);
        }
    };
    // How every poll of both loops opens. Both probes start together; the
    // unit/journal answer is taken (and can be judged) as soon as it arrives,
    // because /health of a wedged server can take its full 20 s timeout and a
    // crash in the journal must not wait for that.
    const observe = async (): Promise<{ pollError: FailureCause } | { polled: PollResult; health: Promise<HealthObservation> }> => {
        const healthP = http.get(endpointUrl(o.endpoint, "/health"), { timeoutMs: o.probeTimeoutMs });
        const polled = await poll();
        if ("error" in polled) return { pollError: { kind: "poll-error", reason: `${o.remote.describe()}: ${polled.error}` } };
        took(polled);
        const health = healthP.then((h): HealthObservation => ("status" in h ? { status: h.status } : { error: h.error }));
        return { polled, health };
    };

    const fail = async (cause: FailureCause, message: string): Promise<GateResult> => {
        say(message);
        // The lines a dying process wrote after the last poll (a traceback the unit's
        // exit beat into the journal) count for the retry decision too.
        if (cause.kind !== "poll-error") {
            const rest = await poll().catch(() => null);
            if (rest && !("error" in rest)) keepLines(rest.lines);
        }
        let lastJournalLines: string[];
        try {
            lastJournalLines = await readJournalTail(o.remote, o.unit, 30);
        } catch {
            lastJournalLines = [...state.recentLines];
        }
        return { ok: false, cause, message, lastJournalLines, phaseTimeline: [...state.phaseTimeline], startLines };
    };
    const failWith = (decision: Extract<ReadinessDecision, { kind: "failed" }>): Promise<GateResult> =>
        fail(decision.cause, formatProgress(decision, o.attempt));
    const failNow = (cause: FailureCause): Promise<GateResult> => failWith({ kind: "failed", elapsedMs: now() - start, phase: state.phase, cause });

    let ready: Extract<ReadinessDecision, { kind: "ready" }>;
    for (;;) {
        const pollStart = now();
        const observed = await observe();
        if ("pollError" in observed) return failNow(observed.pollError);
        const { polled } = observed;
        // Fatal lines, the unit's state and restarts are judged before /health in
        // `step`, so a failure found without /health's answer stands as it is.
        // (Not the deadline: its message names the last /health answer.)
        const early = step(state, { elapsedMs: now() - start, unit: polled.unit, newJournalLines: polled.lines, health: { error: "pending" } });
        if (early.decision.kind === "failed" && early.decision.cause.kind !== "deadline") {
            state = early.state;
            return failWith(early.decision);
        }
        const healthObs = await observed.health;
        const r = step(state, { elapsedMs: now() - start, unit: polled.unit, newJournalLines: polled.lines, health: healthObs });
        state = r.state;
        const d = r.decision;
        if (d.kind === "failed") return failWith(d);
        if (d.kind === "ready") {
            ready = d;
            break;
        }
        if (d.phase !== lastPhase || now() - lastProgressAt >= progressEveryMs) {
            say(formatProgress(d, o.attempt));
            lastPhase = d.phase;
            lastProgressAt = now();
        }
        // Once the HTTP server is up (warmup under way) or the ready line was seen,
        // readiness is moments away: poll faster so it is noticed within a quarter
        // second, without polling the long weight-loading phase more often.
        const nearReady = d.phase === "starting HTTP server" || d.phase === "warming up" || state.readyLineSeen;
        const interval = nearReady ? Math.min(pollIntervalMs, NEAR_READY_POLL_MS) : pollIntervalMs;
        await sleep(Math.max(0, interval - (now() - pollStart)));
    }
    say(formatProgress(ready));

    const probe: ProbeOptions = { timeoutMs: o.probeTimeoutMs, ...(o.apiKey ? { bearer: o.apiKey } : {}) };

    if (o.apiKey) {
        // A server that was given a key must refuse a request without it. SGLang
        // authenticates only with a non-empty --api-key (an empty api-key in its
        // --config file turns it off) and exempts /health*, /ready* and /metrics: ask an
        // endpoint it guards, with no Authorization header.
        const url = endpointUrl(o.endpoint, AUTH_CHECK_PATH);
        const res = await http.get(url, { timeoutMs: o.probeTimeoutMs });
        if ("error" in res) return failNow({ kind: "auth-check", reason: `GET ${AUTH_CHECK_PATH} without the key: ${res.error}` });
        if (res.status !== 401) {
            return failNow({
                kind: "auth-check",
                reason:
                    `GET ${AUTH_CHECK_PATH} without the key answered HTTP ${res.status}, not 401: anyone who reaches ${o.endpoint} can use it ` +
                    "(check that the unit passes --config /etc/sglang/<service>.yaml and that this 0600 file sets a non-empty api-key)",
            });
        }
        say(`[readiness] a request without the API key is refused (GET ${AUTH_CHECK_PATH} = 401)`);
    }

    let chatText: string | null = null;
    if (o.chatCheck) {
        const res = await http.post(
            endpointUrl(o.endpoint, "/v1/chat/completions"),
            {
                model: o.servedModelName,
                messages: [{ role: "user", content: CHAT_PROMPT }],
                max_tokens: 16,
                temperature: 0,
                // Thinking models (Qwen3.x) would spend 16 tokens inside <think>;
                // SGLang passes this to the chat template. Ignored by other templates.
                chat_template_kwargs: { enable_thinking: false },
            },
            probe,
        );
        if ("error" in res) return failNow({ kind: "chat-check", reason: `POST /v1/chat/completions: ${res.error}` });
        if (res.status !== 200) {
            return failNow({
                kind: "chat-check",
                status: res.status,
                reason: `POST /v1/chat/completions answered HTTP ${res.status}: ${res.text.trim().slice(0, 300)}`,
            });
        }
        const verdict = checkChatResponse(res.body);
        if (!verdict.ok) return failNow({ kind: "chat-check", status: res.status, reason: verdict.reason });
        chatText = verdict.text;
        say(`[readiness] chat check passed: ${JSON.stringify(chatText.slice(0, 80))}`);
    }

    const info = await getServerInfo(o.endpoint, probe, http.get);
    let acceptLength: number | null = null;
    if (o.expectedSpeculative) {
        if ("error" in info) return failNow({ kind: "speculative-check", reason: info.error });
        const verdict = checkSpeculativeActive(info.body, o.expectedSpeculative);
        if (!verdict.ok) return failNow({ kind: "speculative-check", reason: verdict.reason });
        acceptLength = verdict.acceptLength;
        say(
            `[readiness] speculative decoding active: ${verdict.algorithm}` +
                (verdict.acceptLength !== null ? `, avg accept length ${verdict.acceptLength.toFixed(2)}` : ""),
        );
    }

    const minHealthyMs = o.minHealthyMs ?? 0;
    if (minHealthyMs > 0 && lastUnit) {
        // The healthy window: the server that was ready and passed the checks must
        // stay so (same main process, unit active, no fatal line, /health 200 on
        // every poll) for minHealthyMs before the gate passes.
        const unitAtReady: UnitStatus = lastUnit;
        let win = openHealthyWindow({ elapsedMs: now() - start, mainPid: unitAtReady.mainPid, nRestarts: unitAtReady.nRestarts }, minHealthyMs);
        let lastWindowProgressAt = -Infinity;
        for (;;) {
            const pollStart = now();
            const observed = await observe();
            if ("pollError" in observed) return failNow(observed.pollError);
            const { polled } = observed;
            // A crash in the journal or the unit fails the window without waiting for /health.
            const early = earlyWindowFailure(win, { elapsedMs: now() - start, unit: polled.unit, newJournalLines: polled.lines });
            if (early && early.kind === "failed") return fail(early.cause, formatWindowProgress(early, o.attempt));
            const healthObs = await observed.health;
            const r = stepWindow(win, { elapsedMs: now() - start, unit: polled.unit, newJournalLines: polled.lines, health: healthObs });
            win = r.state;
            const d = r.decision;
            if (d.kind === "failed") return fail(d.cause, formatWindowProgress(d, o.attempt));
            if (d.kind === "healthy") {
                say(formatWindowProgress(d, o.attempt));
                break;
            }
            if (now() - lastWindowProgressAt >= progressEveryMs) {
                say(formatWindowProgress(d, o.attempt));
                lastWindowProgressAt = now();
            }
            await sleep(Math.max(0, pollIntervalMs - (now() - pollStart)));
        }
    }

    return {
        ok: true,
        readyAtMs: ready.elapsedMs,
        corroboratedBy: ready.corroboratedBy,
        phaseTimeline: [...state.phaseTimeline],
        serverInfo: "error" in info ? null : info.body,
        chatText,
        acceptLength,
    };
}
