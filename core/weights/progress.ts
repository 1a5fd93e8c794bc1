/**
 * The progress lines of a download as `pulumi up` shows them: files, bytes
 * done of the total, rate and ETA, from the snapshots the box-side program
 * writes (STATE/progress.json, about every second) and the driver polls. A
 * line when the phase changes, when a file completes (at most one every few
 * seconds), and at least every 15 s whatever happens. The rate is over the
 * last seconds of snapshots, in the box's own clock (the `at` it writes), so
 * the poll's delays and the clocks' skew do not bend it. Pure:
 * `step(state, snapshot, now)` returns the next state and the line to say.
 */
import { isRecord } from "../is-record";
import { formatBytes } from "./disk";

export type ProgressPhase = "starting" | "listing" | "downloading" | "verifying" | "done";

/** What the box-side program writes in progress.json. */
export interface ProgressSnapshot {
    phase: ProgressPhase;
    files: number;
    filesDone: number;
    bytes: number;
    bytesDone: number;
    /** The box's clock, seconds since the epoch. */
    at: number;
}

const PHASES: readonly ProgressPhase[] = ["starting", "listing", "downloading", "verifying", "done"];

export function parseProgress(text: string): ProgressSnapshot | undefined {
    let v: unknown;
    try {
        v = JSON.parse(text);
    } catch {
        return undefined;
    }
    if (!isRecord(v) || !PHASES.includes(v.phase as ProgressPhase)) return undefined;
    const n = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : 0);
    return { phase: v.phase as ProgressPhase, files: n(v.files), filesDone: n(v.filesDone), bytes: n(v.bytes), bytesDone: n(v.bytesDone), at: n(v.at) };
}

export interface ProgressState {
    /** Recent snapshots of the phase (box time, bytes done), for the rate. */
    window: Array<{ at: number; bytesDone: number }>;
    phase?: ProgressPhase;
    filesDone: number;
    /** When the last line was said (the driver's clock, ms). */
    lastLineAt?: number;
}

export const INITIAL_PROGRESS: ProgressState = { window: [], filesDone: 0 };

export interface ProgressOptions {
    /** The longest silence (default 15 s, issue 33: "a line at least every 15 s"). */
    everyMs?: number;
    /** The shortest gap between lines for a completed file (default 5 s). */
    fileGapMs?: number;
    /** How far back the rate looks (default 10 s of the box's clock). */
    rateWindowSeconds?: number;
}

/** Bytes per second over the window, or undefined before two snapshots a moment apart. */
export function rateOf(window: ReadonlyArray<{ at: number; bytesDone: number }>): number | undefined {
    if (window.length < 2) return undefined;
    const first = window[0]!;
    const last = window[window.length - 1]!;
    const seconds = last.at - first.at;
    return seconds > 0.2 ? Math.max(0, (last.bytesDone - first.bytesDone) / seconds) : undefined;
}

export function formatDuration(seconds: number): string {
    const s = Math.round(seconds);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The line for a snapshot: `downloading 3/9 files, 120.5 MiB of 3.2 GiB (3.7%), 85.2 MiB/s, ETA 37 s`. */
export function progressLine(s: ProgressSnapshot, rate: number | undefined): string {
    const pct = s.bytes > 0 ? ` (${((100 * s.bytesDone) / s.bytes).toFixed(1)}%)` : "";
    switch (s.phase) {
        case "starting":
        case "listing":
            return `${s.phase === "starting" ? "starting" : "asking the Hub for the revision's files"}`;
        case "downloading":
        case "verifying": {
            const what =
                s.phase === "downloading"
                    ? `downloading ${s.filesDone}/${s.files} files, ${formatBytes(s.bytesDone)} of ${formatBytes(s.bytes)}`
                    : `verifying ${formatBytes(s.bytesDone)} of ${formatBytes(s.bytes)} against the Hub's hashes`;
            if (rate === undefined) return `${what}${pct}`;
            const eta = rate > 0 ? `, ETA ${formatDuration((s.bytes - s.bytesDone) / rate)}` : ", stalled";
            return `${what}${pct}, ${formatBytes(rate)}/s${eta}`;
        }
        case "done":
            return `done: ${s.files} files, ${formatBytes(s.bytes)}`;
        default: {
            const never: never = s.phase;
            throw new Error(`unknown phase ${String(never)}`);
        }
    }
}

/** The next state, and the line to say for this snapshot (undefined: nothing new enough to say). */
export function progressStep(state: ProgressState, s: ProgressSnapshot, nowMs: number, o: ProgressOptions = {}): { state: ProgressState; line?: string } {
    const newPhase = s.phase !== state.phase;
    const windowSeconds = o.rateWindowSeconds ?? 10;
    const window = (newPhase ? [] : state.window).concat({ at: s.at, bytesDone: s.bytesDone }).filter((p) => p.at >= s.at - windowSeconds);
    const since = state.lastLineAt === undefined ? Infinity : nowMs - state.lastLineAt;
    const fileDone = s.filesDone > state.filesDone && since >= (o.fileGapMs ?? 5000);
    const say = newPhase || fileDone || since >= (o.everyMs ?? 15_000);
    const next: ProgressState = { window, phase: s.phase, filesDone: say ? s.filesDone : state.filesDone, lastLineAt: say ? nowMs : state.lastLineAt };
    return say ? { state: next, line: progressLine(s, rateOf(window)) } : { state: next };
}
