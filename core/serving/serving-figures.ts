/**
 * The figures a rollout measured on a server it verified serving, recorded in
 * the state as the last good config's (issue 21): the speculative accept
 * length and the output throughput over the serving-quality prompt set
 * (core/serving/serving-prompts.ts), in total and per bucket. The gate that holds a
 * change to them is core/serving/serving-quality.ts; the refresh holds the running
 * server to them (acceptLengthDrift).
 */

/** One bucket's figures. acceptLength only where the release reports it per request. */
export interface BucketFigures {
    acceptLength?: number;
    /** Output tokens per second: completion tokens over SGLang's own e2e_latency. */
    throughput: number;
}

/**
 * What a verified rollout measured. States written before the prompt set hold
 * `{algorithm, acceptLength}` from /server_info alone, which still compares.
 */
export interface ServingFigures {
    /** The speculative algorithm the server ran (as declared); absent without speculation. */
    algorithm?: string;
    /** SGLang's accept length (tokens per verify step, the bonus token included) over the whole set. */
    acceptLength?: number;
    /** Output tokens per second over the whole set. */
    throughput?: number;
    buckets?: Record<string, BucketFigures>;
}

/** What one /generate of the prompt set returned: its meta_info. */
export interface PromptMeasurement {
    bucket: string;
    /** meta_info.completion_tokens */
    completionTokens: number;
    /** meta_info.e2e_latency: seconds from the request's arrival to its end, as SGLang timed it. */
    e2eLatencySeconds: number;
    /** meta_info.spec_verify_ct (speculative releases that report it per request): verify steps of this request. */
    verifyCount?: number;
}

/** readiness.acceptLengthDropLimit's default (also for states written before it existed): 10%. */
export const DEFAULT_ACCEPT_LENGTH_DROP_LIMIT = 0.1;
/** readiness.throughputDropLimit's default: 10%. */
export const DEFAULT_THROUGHPUT_DROP_LIMIT = 0.1;

export const shownLength = (v: number) => v.toFixed(2);
export const shownThroughput = (v: number) => `${v.toFixed(1)} tok/s`;
export const percent = (v: number) => `${Math.round(v * 1000) / 10}%`;

interface Sums {
    tokens: number;
    seconds: number;
    verify: number;
    /** Every request reported its verify steps. */
    allVerified: boolean;
}

function add(s: Sums, m: PromptMeasurement): Sums {
    return {
        tokens: s.tokens + m.completionTokens,
        seconds: s.seconds + m.e2eLatencySeconds,
        verify: s.verify + (m.verifyCount ?? 0),
        allVerified: s.allVerified && m.verifyCount !== undefined && m.verifyCount > 0,
    };
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

function figuresOfSums(s: Sums): BucketFigures {
    return {
        ...(s.allVerified ? { acceptLength: round(s.tokens / s.verify, 3) } : {}),
        throughput: round(s.seconds > 0 ? s.tokens / s.seconds : 0, 2),
    };
}

/**
 * The set's figures, as SGLang computes accept length (completion tokens over
 * verify steps, tokenizer_manager._calculate_spec_decoding_metrics), summed
 * per bucket and in total. `serverAcceptLength` (/server_info's
 * avg_spec_accept_length after the set) stands in for a release that reports
 * no verify steps per request.
 */
export function figuresOf(measurements: readonly PromptMeasurement[], algorithm: string | undefined, serverAcceptLength: number | null): ServingFigures {
    const empty: Sums = { tokens: 0, seconds: 0, verify: 0, allVerified: true };
    const byBucket = new Map<string, Sums>();
    let total = empty;
    for (const m of measurements) {
        byBucket.set(m.bucket, add(byBucket.get(m.bucket) ?? empty, m));
        total = add(total, m);
    }
    const overall = figuresOfSums(total);
    const acceptLength = algorithm === undefined ? undefined : (overall.acceptLength ?? serverAcceptLength ?? undefined);
    return {
        ...(algorithm !== undefined ? { algorithm } : {}),
        ...(acceptLength !== undefined ? { acceptLength } : {}),
        throughput: overall.throughput,
        buckets: Object.fromEntries(
            [...byBucket].map(([bucket, sums]) => {
                const f = figuresOfSums(sums);
                return [bucket, algorithm === undefined ? { throughput: f.throughput } : f];
            }),
        ),
    };
}

/**
 * How the gate takes its figures (issue 37: measured, not sampled): the
 * prompt set once as a warm-up, not measured (a fresh server compiles
 * kernels for shapes its own warm-up did not run, and its radix cache is
 * empty: the first request of a shape is slower by an amount that varies
 * from start to start), then SERVING_MEASURED_PASSES measured passes.
 */
export const SERVING_WARMUP_PASSES = 1;
export const SERVING_MEASURED_PASSES = 3;

function median(values: readonly number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The figures of the measured passes over the prompt set (the warm-up pass
 * not among them): the accept length over every measured request, as
 * figuresOf computes it; the throughput of each pass (its completion tokens
 * over its e2e latencies), in total and per bucket, and the median of the
 * passes', so that one slow pass (a hiccup on the box) does not move it.
 */
export function figuresOfPasses(
    passes: readonly (readonly PromptMeasurement[])[],
    algorithm: string | undefined,
    serverAcceptLength: number | null,
): ServingFigures {
    const all = figuresOf(passes.flat(), algorithm, serverAcceptLength);
    if (passes.length <= 1) return all;
    const each = passes.map((pass) => figuresOf(pass, algorithm, serverAcceptLength));
    const throughputOf = (bucket: string) => round(median(each.map((f) => f.buckets?.[bucket]?.throughput ?? 0)), 2);
    return {
        ...all,
        throughput: round(median(each.map((f) => f.throughput ?? 0)), 2),
        buckets: Object.fromEntries(Object.entries(all.buckets ?? {}).map(([bucket, b]) => [bucket, { ...b, throughput: throughputOf(bucket) }])),
    };
}

/** "avg accept length 3.12 (NEXTN), 41.7 tok/s (code 3.40 / 44.0 tok/s, prose ...)": for progress lines, the preview and reports. */
export function describeFigures(f: ServingFigures): string {
    const parts = [
        ...(f.acceptLength !== undefined ? [`avg accept length ${shownLength(f.acceptLength)}${f.algorithm ? ` (${f.algorithm})` : ""}`] : []),
        ...(f.throughput !== undefined ? [shownThroughput(f.throughput)] : []),
    ];
    // In name order: the state keeps maps sorted, so a recorded set reads as a measured one.
    const buckets = Object.entries(f.buckets ?? {})
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([bucket, b]) => `${bucket} ${b.acceptLength !== undefined ? `${shownLength(b.acceptLength)} / ` : ""}${shownThroughput(b.throughput)}`);
    return `${parts.join(", ") || "no figures"}${buckets.length ? ` (${buckets.join(", ")})` : ""}`;
}

/**
 * The running server's accept length (as the refresh reads it from
 * /server_info) against the recorded figures: undefined when either is
 * unknown or the live figure is within `dropLimit`, else what differs, naming
 * both. The refresh records it (ServiceOutputs.acceptLengthDrift), so a fall
 * is drift for the drift check, and the preview's restart says why.
 */
export function acceptLengthDrift(live: number | null, recorded: ServingFigures | undefined, dropLimit: number): string | undefined {
    if (live === null || recorded?.acceptLength === undefined) return undefined;
    if (live >= recorded.acceptLength * (1 - dropLimit)) return undefined;
    return (
        `the running server's avg accept length ${shownLength(live)} is ${percent(1 - live / recorded.acceptLength)} below ` +
        `the recorded ${shownLength(recorded.acceptLength)}${recorded.algorithm ? ` (${recorded.algorithm})` : ""}, more than readiness.acceptLengthDropLimit (${percent(dropLimit)})`
    );
}
