// The I/O driver of the readiness wait: polls the unit and its journal over
// SSH (one command per poll) and GET /health from this machine, and runs the
// one poll loop (remote/await/poll-until.ts) over the readiness machine
// (core/readiness/readiness.ts) until ready or failed; then the registered post-ready
// checks (remote/checks/registry.ts: the API key, a chat completion,
// speculation), then the same loop over the healthy window
// (core/readiness/healthy-window.ts).

import { newMarker, parseBatch, renderBatch } from "../core/batch-script";
import { healthyWindowCondition, openHealthyWindow } from "../core/readiness/healthy-window";
import { AttemptContext, FailureCause, HealthObservation, PhaseEntry, UnitStatus } from "../core/readiness/readiness";
import { readinessCondition } from "../core/readiness/readiness-condition";
import { Observe, pollUntil, PollUntilOptions } from "./await/poll-until";
import type { ServingFigures } from "../core/serving/serving-figures";
import { CheckContext, CheckedServer, PostReadyCheck, runPostReadyChecks } from "./checks/post-ready-check";
import { POST_READY_CHECKS } from "./checks/registry";
import { endpointUrl, getServerInfo, httpGetJson, httpPostJson, ProbeOptions } from "./probe";
import { RemoteRunner } from "./remote-host";
import { SshError } from "./ssh-error";

/** Where to start reading the unit's journal: a cursor, or a time journalctl --since understands ("@1767268800"). */
export type JournalPosition = { cursor: string } | { time: string };

/** The server's settings the checks read (endpoint, key, served name, chatCheck, speculation, probe timeout) are CheckedServer's. */
export interface WaitUntilReadyOptions extends CheckedServer {
    remote: RemoteRunner;
    /** e.g. "sglang-qwen.service" */
    unit: string;
    startupTimeoutMs: number;
    /** Default 1000. */
    pollIntervalMs?: number;
    /**
     * Journal lines before this are not read: take it with `journalPosition`
     * right after `systemctl restart` returned, so the old process's shutdown
     * lines (which may hold tracebacks) are not judged.
     */
    since: JournalPosition;
    onProgress?: (message: string) => void;
    /** Progress at most this often, plus on every phase change. Default 5000. */
    progressEveryMs?: number;
    /** See ReadinessTimings.healthOnlyGracePolls. */
    healthOnlyGracePolls?: number;
    /**
     * After ready and the checks, the server must stay healthy this long
     * (core/readiness/healthy-window.ts) before the wait succeeds. Default 0: no window.
     */
    minHealthyMs?: number;
    /** Which start of the config this is; shown in the progress lines. */
    attempt?: AttemptContext;
    /** The post-ready checks to run, in order. Default: the registered ones (remote/checks/registry.ts). */
    checks?: readonly PostReadyCheck[];
    /** Seams for tests: clock, sleep and HTTP. Defaults: Date.now, setTimeout, probe.ts. */
    now?: () => number;
    sleep?: (ms: number) => Promise<void>;
    http?: CheckContext["http"];
}

export type ReadinessResult =
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
          /** What the serving-quality gate measured, when it ran. */
          servingFigures: ServingFigures | null;
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

/** Journal lines of one start kept for the retry decision (core/rollout/rollout-plan.ts retryVerdict). */
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

/** Wait until the server is ready and generating, or failed. Never throws for server problems: they are results. */
export async function waitUntilReady(o: WaitUntilReadyOptions): Promise<ReadinessResult> {
    const now = o.now ?? Date.now;
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const http = o.http ?? { get: httpGetJson, post: httpPostJson };
    const pollIntervalMs = o.pollIntervalMs ?? 1000;
    const say = o.onProgress ?? (() => undefined);
    const loop: PollUntilOptions = { now, sleep, startedAtMs: now(), say, progressEveryMs: o.progressEveryMs ?? 5000 };
    const elapsed = (): number => now() - loop.startedAtMs;

    const readiness = readinessCondition(
        {
            startupTimeoutMs: o.startupTimeoutMs,
            ...(o.healthOnlyGracePolls !== undefined ? { healthOnlyGracePolls: o.healthOnlyGracePolls } : {}),
        },
        { pollIntervalMs, attempt: o.attempt },
    );
    let position: JournalPosition = o.since;
    let journalWarned = false;
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
    // Every poll of both phases. Both probes start together; the unit/journal
    // answer is handed on (and can be judged) as soon as it arrives, because
    // /health of a wedged server can take its full 20 s timeout and a crash in
    // the journal must not wait for that.
    const observe: Observe = async () => {
        const healthP = http.get(endpointUrl(o.endpoint, "/health"), { timeoutMs: o.probeTimeoutMs });
        const polled = await poll();
        if ("error" in polled) return { failed: { kind: "poll-error", reason: `${o.remote.describe()}: ${polled.error}` } };
        if (polled.cursor) position = { cursor: polled.cursor };
        keepLines(polled.lines);
        if (polled.journalError && !journalWarned) {
            // Health and unit state still work without the journal; say it once.
            journalWarned = true;
            say(`[readiness] cannot read the journal of ${o.unit} (${polled.journalError}); judging by the unit state and /health only`);
        }
        const health = healthP.then((h): HealthObservation => ("status" in h ? { status: h.status } : { error: h.error }));
        return { unit: polled.unit, newJournalLines: polled.lines, health };
    };

    const fail = async (cause: FailureCause, message: string): Promise<ReadinessResult> => {
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
            lastJournalLines = [...readiness.state.recentLines];
        }
        return { ok: false, cause, message, lastJournalLines, phaseTimeline: [...readiness.state.phaseTimeline], startLines };
    };

    const ready = await pollUntil(readiness, observe, loop);
    if (ready.kind === "failed") return fail(ready.cause, ready.message);

    let serverInfo: ReturnType<CheckContext["serverInfo"]> | null = null;
    const withKey: ProbeOptions = { timeoutMs: o.probeTimeoutMs, ...(o.apiKey ? { bearer: o.apiKey } : {}) };
    const checks = await runPostReadyChecks(o.checks ?? POST_READY_CHECKS, {
        endpoint: o.endpoint,
        ...(o.apiKey ? { apiKey: o.apiKey } : {}),
        servedModelName: o.servedModelName,
        chatCheck: o.chatCheck,
        ...(o.expectedSpeculative ? { expectedSpeculative: o.expectedSpeculative } : {}),
        ...(o.quality ? { quality: o.quality } : {}),
        ...(o.lastGood ? { lastGood: o.lastGood } : {}),
        ...(o.lastGoodOrigin ? { lastGoodOrigin: o.lastGoodOrigin } : {}),
        probeTimeoutMs: o.probeTimeoutMs,
        http,
        withKey,
        serverInfo: () => (serverInfo ??= getServerInfo(o.endpoint, withKey, http.get)),
        say,
    });
    // A check's failure is told as the readiness machine tells any failure (phase, elapsed, attempt).
    if (!checks.ok) return fail(checks.cause, readiness.failureMessage(checks.cause, elapsed()));
    const info = await (serverInfo ??= getServerInfo(o.endpoint, withKey, http.get));

    const minHealthyMs = o.minHealthyMs ?? 0;
    if (minHealthyMs > 0) {
        // The healthy window: the server that was ready and passed the checks must
        // stay so (same main process, unit active, no fatal line, /health 200 on
        // every poll) for minHealthyMs before the wait succeeds.
        const { mainPid, nRestarts } = ready.value.unit;
        const window = healthyWindowCondition(openHealthyWindow({ elapsedMs: elapsed(), mainPid, nRestarts }, minHealthyMs), {
            pollIntervalMs,
            attempt: o.attempt,
        });
        const held = await pollUntil(window, observe, loop);
        if (held.kind === "failed") return fail(held.cause, held.message);
    }

    return {
        ok: true,
        readyAtMs: ready.value.ready.elapsedMs,
        corroboratedBy: ready.value.ready.corroboratedBy,
        phaseTimeline: [...readiness.state.phaseTimeline],
        serverInfo: "error" in info ? null : info.body,
        chatText: checks.findings.chatText ?? null,
        acceptLength: checks.findings.acceptLength ?? null,
        servingFigures: checks.findings.servingFigures ?? null,
    };
}
