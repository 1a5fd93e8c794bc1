// The serving-quality gate's throughput figure (issue 37, Deliver 3): how much
// it spreads over fresh starts of one unchanged config, and how many of them
// the gate would refuse at readiness.throughputDropLimit's default 10%.
//
// No lab and no engine: each run is a fresh simulated server (the lab's own
// HTTP API, lab/sglang/http-api.ts, in this process on loopback) serving the
// field config (Qwen3.6-27B with NEXTN, one step), measured by the gate's
// own code (remote/checks/serving-quality.ts measurePasses: the shipped
// prompt set, two code, two prose and one long-context prompt of 128 new
// tokens each, to /generate at temperature 0). The lab's decode is
// deterministic; what makes a real start's figure move is modelled by the
// simulator's timing faults (lab/sglang/faults.ts): a fresh server's first
// request of each bucket waits up to COLD_KERNEL_SECONDS for its kernels
// (drawn uniformly), and every request's latency is jittered by
// +-LATENCY_JITTER. Two figures per run, from the same requests:
//   - sampled: the first pass alone (what the gate measured before: one pass
//     on a fresh server);
//   - measured: the gate's figure now (core/serving/serving-figures.ts
//     figuresOfPasses: a warm-up pass, then the median of three passes).
// Each run is held to the one before it, as consecutive rollouts of the same
// config are.
import type { AddressInfo } from "node:net";
import { createApi, type ApiState } from "../../lab/sglang/http-api";
import { draftingOf } from "../../lab/sglang/speculation";
import type { ServerArgs } from "../../lab/sglang/server-args";
import { measurePasses } from "../../remote/checks/serving-quality";
import type { CheckContext } from "../../remote/checks/post-ready-check";
import { httpGetJson, httpPostJson } from "../../remote/probe";
import {
    DEFAULT_ACCEPT_LENGTH_DROP_LIMIT,
    DEFAULT_THROUGHPUT_DROP_LIMIT,
    figuresOf,
    figuresOfPasses,
    SERVING_WARMUP_PASSES,
    type ServingFigures,
} from "../../core/serving/serving-figures";
import { SHIPPED_SERVING_PROMPTS } from "../../core/serving/serving-prompts";
import { judgeServing } from "../../core/serving/serving-quality";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { summarize } from "../lib/stats";

/** Up to this many seconds of kernel compilation for a fresh server's first request of a bucket. */
export const COLD_KERNEL_SECONDS = 2;
/** Each request's latency within +-3%. */
export const LATENCY_JITTER = 0.03;

/** The field config's server as its ServerArgs give it (NEXTN resolves to EAGLE; one step, topk 1, two draft tokens). */
const FIELD_ARGS: ServerArgs = {
    model_path: "/models/Qwen3.6-27B",
    served_model_name: "qwen3.6-27b",
    speculative_algorithm: "EAGLE",
    speculative_num_steps: 1,
    speculative_eagle_topk: 1,
    speculative_num_draft_tokens: 2,
    tp_size: 2,
    host: "127.0.0.1",
    port: 0,
};

function freshServer(): ApiState {
    return {
        ready: true,
        schedulerAlive: true,
        degenerate: false,
        healthTimeoutMs: 0,
        args: FIELD_ARGS,
        serverInfo: { max_req_input_len: 262_143 },
        release: "0.5.11",
        architecture: "Qwen3_5ForConditionalGeneration",
        contextLen: 262_144,
        maxTotalTokens: 400_000,
        memoryUsage: {},
        drafting: draftingOf(FIELD_ARGS),
        speedFaults: { coldKernelSeconds: COLD_KERNEL_SECONDS, latencyJitter: LATENCY_JITTER },
        warmBuckets: new Set(),
        specTotals: { acceptedTokens: 0, verifySteps: 0 },
        lastGenThroughput: 0,
        counters: { prompt: 0, generation: 0, requests: 0 },
        accessLog: () => undefined,
        schedulerLog: () => undefined,
    };
}

/** One fresh start of the config, measured by the gate: its sampled and its measured figures. */
async function oneStart(): Promise<{ sampled: ServingFigures; measured: ServingFigures }> {
    const server = createApi(freshServer());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
        const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const ctx: CheckContext = {
            endpoint,
            servedModelName: "qwen3.6-27b",
            chatCheck: false,
            expectedSpeculative: "NEXTN",
            probeTimeoutMs: 30_000,
            http: { get: httpGetJson, post: httpPostJson },
            withKey: { timeoutMs: 30_000 },
            serverInfo: async () => ({ body: { max_req_input_len: 262_143 } }),
            say: () => undefined,
        };
        const passes = await measurePasses(ctx, SHIPPED_SERVING_PROMPTS);
        if ("failed" in passes) throw new Error(`the serving check failed: ${JSON.stringify(passes.failed)}`);
        return {
            sampled: figuresOf(passes[0]!, "NEXTN", null),
            measured: figuresOfPasses(passes.slice(SERVING_WARMUP_PASSES), "NEXTN", null),
        };
    } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
    }
}

/** How many runs the gate refuses, each held to the run before it, at the default limits. */
function refusedInTurn(figures: readonly ServingFigures[]): number {
    const limits = { acceptLengthDropLimit: DEFAULT_ACCEPT_LENGTH_DROP_LIMIT, throughputDropLimit: DEFAULT_THROUGHPUT_DROP_LIMIT };
    return figures.slice(1).filter((f, i) => !judgeServing(f, { lastGood: figures[i]!, limits }).ok).length;
}

export interface ServingSpread {
    runs: number;
    sampled: number[];
    measured: number[];
    refusedSampled: number;
    refusedMeasured: number;
}

export async function servingSpread(runs: number): Promise<ServingSpread> {
    const sampled: ServingFigures[] = [];
    const measured: ServingFigures[] = [];
    for (let i = 0; i < runs; i++) {
        const r = await oneStart();
        sampled.push(r.sampled);
        measured.push(r.measured);
    }
    return {
        runs,
        sampled: sampled.map((f) => f.throughput!),
        measured: measured.map((f) => f.throughput!),
        refusedSampled: refusedInTurn(sampled),
        refusedMeasured: refusedInTurn(measured),
    };
}

/** The figures' summary (bench/lib/stats.ts) and their range as a share of the median. */
const spread = (v: readonly number[]) => {
    const s = summarize([...v]);
    return { ...s, range: (s.max - s.min) / s.median };
};

export async function phaseServing(report: Report, runs: number): Promise<void> {
    log(
        `serving-quality gate: ${runs} fresh starts of one unchanged config, the throughput figure sampled (one cold pass) and measured ` +
            `(a warm-up pass, the median of three), cold kernels up to ${COLD_KERNEL_SECONDS} s, latency jitter +-${LATENCY_JITTER * 100}%`,
    );
    const r = await servingSpread(runs);
    const s = spread(r.sampled);
    const m = spread(r.measured);
    log(
        `  sampled: ${s.min.toFixed(1)}-${s.max.toFixed(1)} tok/s (range ${(100 * s.range).toFixed(1)}% of the median), ${r.refusedSampled} of ${runs - 1} refused`,
    );
    log(
        `  measured: ${m.min.toFixed(1)}-${m.max.toFixed(1)} tok/s (range ${(100 * m.range).toFixed(1)}% of the median), ${r.refusedMeasured} of ${runs - 1} refused`,
    );
    report.figure(
        "serving.sampled",
        "gate throughput, one cold pass (before), / its median",
        "x",
        r.sampled.map((v) => v / s.median),
        `${r.refusedSampled} of ${runs - 1} refused at 10%`,
    );
    report.figure(
        "serving.measured",
        "gate throughput, warm-up + median of 3 (now), / its median",
        "x",
        r.measured.map((v) => v / m.median),
        `${r.refusedMeasured} of ${runs - 1} refused at 10%`,
    );
    report.extra.serving = { coldKernelSeconds: COLD_KERNEL_SECONDS, latencyJitter: LATENCY_JITTER, ...r };
}
