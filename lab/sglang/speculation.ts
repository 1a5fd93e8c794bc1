// The lab's speculative decoding and decode speed: how many tokens a verify
// step accepts and how fast the server decodes, by the prompt's bucket, the
// algorithm, the step count and the drafter. A simulation (the real figures
// come from the GPUs, the model and the drafter), in SGLang's own terms:
// accept length = completion tokens / verify steps (the bonus token
// included), reported per request in /generate's meta_info, in total by
// /server_info's avg_spec_accept_length and /metrics, and in the decode log line.
//
// Model: a drafter accepts each proposed token with probability p (its accept
// rate for the bucket), so a chain of k draft tokens accepts on average
// 1 + p + ... + p^k tokens a step. A verify step costs one target forward
// plus `stepCost` of one per draft step; the lab's target decodes
// BASE_TOKENS_PER_SECOND without speculation.
import * as fs from "fs";
import * as path from "path";
import type { ServerArgs } from "./server-args";

export type Bucket = "code" | "prose" | "long-context";

/** The lab target's decode speed without speculation (about a 27B model over two A6000s at batch 1). */
export const BASE_TOKENS_PER_SECOND = 30;
/** The lab's prefill speed, for e2e_latency. */
const PREFILL_TOKENS_PER_SECOND = 4000;

/**
 * The checkpoint's own MTP head and a drafter folder without `sglang-lab.json`:
 * code drafts best, long context worst. Prose's 0.7 keeps the lab's old
 * single figure (1 + 0.7 per draft token for one step).
 */
const DEFAULT_ACCEPT_RATES: Record<Bucket, number> = { code: 0.8, prose: 0.7, "long-context": 0.6 };
const DEFAULT_STEP_COST = 0.05;

/**
 * Which bucket a prompt is in, as the lab guesses it: long context from about
 * 1,500 tokens (4 characters a token), code when it asks for or shows code.
 */
export function bucketOf(prompt: string): Bucket {
    if (prompt.length / 4 >= 1500) return "long-context";
    if (/```|\bdef |\bfunction\b|\bclass\b|\bimplement\b/i.test(prompt)) return "code";
    return "prose";
}

export interface Drafting {
    algorithm: string;
    acceptRates: Record<Bucket, number>;
    /** Draft tokens a step proposes along one path: numDraftTokens - 1 with topk 1, else the step count. */
    chain: number;
    /** Draft forward passes a step (DFLASH drafts its block in one). */
    draftPasses: number;
    stepCost: number;
}

/**
 * The drafter as the lab's drafter folder says (`sglang-lab.json`:
 * `{"acceptRate": 0.5}` or per bucket `{"acceptRate": {"code": 0.9, ...}}`,
 * and `"stepCost"`: a slow drafter), else the defaults; null without
 * speculation.
 */
export function draftingOf(a: ServerArgs): Drafting | null {
    const algorithm = a.speculative_algorithm;
    if (typeof algorithm !== "string" || algorithm === "") return null;
    let rates = { ...DEFAULT_ACCEPT_RATES };
    let stepCost = DEFAULT_STEP_COST;
    const drafter = a.speculative_draft_model_path;
    if (typeof drafter === "string" && drafter !== a.model_path) {
        try {
            const said = JSON.parse(fs.readFileSync(path.join(drafter, "sglang-lab.json"), "utf8")) as { acceptRate?: unknown; stepCost?: unknown };
            if (typeof said.acceptRate === "number") rates = { code: said.acceptRate, prose: said.acceptRate, "long-context": said.acceptRate };
            else if (said.acceptRate && typeof said.acceptRate === "object") rates = { ...rates, ...(said.acceptRate as Partial<Record<Bucket, number>>) };
            if (typeof said.stepCost === "number") stepCost = said.stepCost;
        } catch {
            // No such file: the defaults.
        }
    }
    const steps = Math.max(1, Number(a.speculative_num_steps ?? 1));
    const draftTokens = Number(a.speculative_num_draft_tokens ?? steps + 1);
    const chain = Number(a.speculative_eagle_topk ?? 1) === 1 ? Math.max(1, draftTokens - 1) : steps;
    return { algorithm, acceptRates: rates, chain, draftPasses: algorithm === "DFLASH" ? 1 : steps, stepCost };
}

/** What the lab's faults do to speculation and speed. */
export interface SpeedFaults {
    /** A repetition loop: every draft token accepted. */
    acceptPinnedAtMax?: boolean;
    /** Decode speed times this (a regression). */
    throughputFactor?: number;
    /** Acceptance collapsed to this on every bucket (the acceptLengthAfterReady fault, once due). */
    collapsedTo?: number;
    /** The first request of a bucket on a fresh server waits up to this for its kernels (lab/sglang/faults.ts). */
    coldKernelSeconds?: number;
    /** e2e_latency times a factor drawn from 1 +- this. */
    latencyJitter?: number;
}

/**
 * What one request's timing draws (http-api.ts, from SpeedFaults and whether
 * its bucket is cold): seconds of kernel compilation, and the jitter factor.
 */
export interface TimingDraw {
    coldSeconds: number;
    jitterFactor: number;
}

/** The draw for a request: `cold` (its bucket's first on this server), `random` a uniform draw in [0, 1). */
export function timingDraw(faults: SpeedFaults, cold: boolean, random: () => number = Math.random): TimingDraw {
    return {
        coldSeconds: cold && faults.coldKernelSeconds ? random() * faults.coldKernelSeconds : 0,
        jitterFactor: faults.latencyJitter ? 1 + (2 * random() - 1) * faults.latencyJitter : 1,
    };
}

const round3 = (v: number) => Math.round(v * 1000) / 1000;

/** Tokens a verify step accepts on average for a prompt of `bucket`: 1 + p + ... + p^chain. */
export function acceptLengthFor(d: Drafting, bucket: Bucket, faults: SpeedFaults): number {
    if (faults.collapsedTo !== undefined) return faults.collapsedTo;
    if (faults.acceptPinnedAtMax) return d.chain + 1;
    const p = Math.min(1, Math.max(0, d.acceptRates[bucket]));
    let sum = 1;
    for (let i = 1, term = 1; i <= d.chain; i++) sum += term *= p;
    return round3(sum);
}

/** Decode tokens per second at `acceptLength` tokens a step. */
export function decodeTokensPerSecond(d: Drafting | null, acceptLength: number, faults: SpeedFaults): number {
    const factor = faults.throughputFactor ?? 1;
    if (!d) return BASE_TOKENS_PER_SECOND * factor;
    return ((BASE_TOKENS_PER_SECOND * acceptLength) / (1 + d.stepCost * d.draftPasses)) * factor;
}

/** One request's figures as SGLang reports them in meta_info. */
export interface RequestFigures {
    /** Seconds: prefill plus decode at the simulated speed. */
    e2eLatency: number;
    /** spec_verify_ct and the figures derived from it; absent without speculation. */
    spec?: { verifyCount: number; acceptLength: number; acceptRate: number; acceptedDrafts: number; proposedDrafts: number };
    decodeTokensPerSecond: number;
}

export function requestFigures(
    d: Drafting | null,
    prompt: string,
    promptTokens: number,
    completionTokens: number,
    faults: SpeedFaults,
    timing: TimingDraw = { coldSeconds: 0, jitterFactor: 1 },
): RequestFigures {
    const length = d ? acceptLengthFor(d, bucketOf(prompt), faults) : 1;
    const speed = decodeTokensPerSecond(d, length, faults);
    const e2eLatency = round3((promptTokens / PREFILL_TOKENS_PER_SECOND + completionTokens / speed) * timing.jitterFactor + timing.coldSeconds);
    if (!d) return { e2eLatency, decodeTokensPerSecond: speed };
    // SGLang counts whole verify steps; accept length = completion tokens / steps.
    const verifyCount = Math.max(1, Math.round(completionTokens / length));
    const proposedDrafts = verifyCount * d.chain;
    const acceptedDrafts = Math.min(proposedDrafts, Math.max(0, completionTokens - verifyCount));
    return {
        e2eLatency,
        decodeTokensPerSecond: speed,
        spec: { verifyCount, acceptLength: completionTokens / verifyCount, acceptRate: acceptedDrafts / proposedDrafts, acceptedDrafts, proposedDrafts },
    };
}
