// Fault knobs the tests set per run (lab.json faultsFile, read by every
// simulator when it starts). All optional; absent means "behave".
import * as fs from "fs";

export interface Faults {
    /** Override the lab's startup time (seconds from launch to ready). */
    startupSeconds?: number;
    /** Crash (RuntimeError in a scheduler, process dies) this many seconds after launch. */
    crashAfterSeconds?: number;
    /** Start the HTTP server but never finish warmup: /health stays 503. */
    neverReady?: boolean;
    /** After ready, the process dies abruptly (SIGKILL, no log) after this many seconds. */
    dieAfterReadySeconds?: number;
    /** After ready, a scheduler dies: HTTP stays up, /health 503, "Scheduler hit an exception:" logged. */
    schedulerDeathAfterReadySeconds?: number;
    /**
     * After ready, the speculative accept length (/server_info's
     * avg_spec_accept_length, /metrics) falls to `acceptLength` after
     * `seconds`: a drafter whose acceptance collapses on the live traffic.
     */
    acceptLengthAfterReady?: { seconds: number; acceptLength: number };
    /** A repetition loop: every draft token is accepted, so the accept length sits at its maximum on every prompt (lab/sglang/speculation.ts). */
    acceptPinnedAtMax?: boolean;
    /** The decode speed times this: a throughput regression (0.8: 20% slower). */
    throughputFactor?: number;
    /**
     * A fresh server's first request of each prompt bucket waits for kernels
     * compiled and tuned for its shapes (JIT, autotuning; SGLang's own
     * warm-up runs one short request): a delay drawn uniformly from 0 to this
     * many seconds, added to that request's e2e_latency. Off unless set, so
     * the lab's figures stay exact; the bench's serving phase sets it.
     */
    coldKernelSeconds?: number;
    /** Each request's e2e_latency times a factor drawn uniformly from 1 - this to 1 + this (clocks, the scheduler). Off unless set. */
    latencyJitter?: number;
    /** Chat/generate return degenerate text (one token repeated). */
    degenerateOutput?: boolean;
    /** Seconds until the GPU memory of a stopped server shows as free. */
    gpuReleaseDelaySeconds?: number;
    /** How long /health takes to answer 503 once a scheduler is dead (SGLang: SGLANG_HEALTH_CHECK_TIMEOUT, 20 s). */
    healthCheckTimeoutSeconds?: number;
    /**
     * Only for a server whose argv contains these tokens in this order (e.g.
     * ["--mem-fraction-static", "0.8"]): a fault for the new config of a
     * rollout that the rollback to the previous config does not hit.
     */
    whenArgs?: string[];
    /**
     * Only the first N starts that the faults apply to (after `whenArgs`) get
     * them; later starts behave: a flaky start that passes on retry. Counted
     * from the last setFaults (the faults file's mtime).
     */
    firstStarts?: number;
}

export const FAULT_KEYS: Array<keyof Faults> = [
    "startupSeconds",
    "crashAfterSeconds",
    "neverReady",
    "dieAfterReadySeconds",
    "schedulerDeathAfterReadySeconds",
    "acceptLengthAfterReady",
    "acceptPinnedAtMax",
    "throughputFactor",
    "coldKernelSeconds",
    "latencyJitter",
    "degenerateOutput",
    "gpuReleaseDelaySeconds",
    "healthCheckTimeoutSeconds",
    "whenArgs",
    "firstStarts",
];

export function readFaults(file: string): Faults {
    try {
        const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
        const out: Record<string, unknown> = {};
        for (const k of FAULT_KEYS) if (raw[k] !== undefined) out[k] = raw[k];
        return out as Faults;
    } catch {
        return {};
    }
}

/** The faults that apply to a server started with argv: none when `whenArgs` is set and argv does not contain it. */
export function faultsForArgv(faults: Faults, argv: readonly string[]): Faults {
    const want = faults.whenArgs;
    if (!want || want.length === 0) return faults;
    for (let i = 0; i + want.length <= argv.length; i++) {
        if (want.every((token, j) => argv[i + j] === token)) return faults;
    }
    return {};
}

/**
 * With `firstStarts`, counts this start (in `<faultsFile>.starts`, next to the
 * faults file, reset when the faults file changes) and drops the faults once
 * N starts had them. Without it, the faults as they are.
 */
export function faultsForThisStart(faultsFile: string, faults: Faults): Faults {
    if (faults.firstStarts === undefined) return faults;
    const counter = `${faultsFile}.starts`;
    let stamp: number;
    try {
        stamp = fs.statSync(faultsFile).mtimeMs;
    } catch {
        return {};
    }
    let seen = 0;
    try {
        const c = JSON.parse(fs.readFileSync(counter, "utf8")) as { stamp?: number; count?: number };
        if (c.stamp === stamp) seen = Number(c.count ?? 0);
    } catch {
        seen = 0;
    }
    if (seen >= faults.firstStarts) return {};
    const tmp = `${counter}.${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify({ stamp, count: seen + 1 }));
    fs.renameSync(tmp, counter);
    return faults;
}
