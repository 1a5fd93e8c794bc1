// The serving-quality gate (issue 21): a change is kept only if it serves at
// least as well as the last good config. After ready, the prompt set
// (core/serving/serving-prompts.ts) goes to SGLang's native /generate one prompt at a
// time, at temperature 0: once as a warm-up, then three measured passes whose
// median throughput is the figure (issue 37); each answer's meta_info gives the completion tokens,
// SGLang's own e2e_latency and, on speculative releases that report it, the
// verify steps (spec_verify_ct). The figures (core/serving/serving-figures.ts) are
// judged by core/serving/serving-quality.ts. With readiness.servingCheck off, the
// accept length /server_info reports is held to the last good one alone.
// A restart would measure the same config again: no retry.

import { checkSpeculativeActive } from "../../core/serving/chat-check";
import { isRecord } from "../../core/is-record";
import {
    figuresOfPasses,
    type PromptMeasurement,
    SERVING_MEASURED_PASSES,
    SERVING_WARMUP_PASSES,
    type ServingFigures,
} from "../../core/serving/serving-figures";
import type { ServingPrompt } from "../../core/serving/serving-prompts";
import { draftShapeOf, judgeServing } from "../../core/serving/serving-quality";
import { endpointUrl, getServerInfo } from "../probe";
import { checkFailed, type CheckContext, type CheckOutcome, type PostReadyCheck } from "./post-ready-check";

const NAME = "serving-quality";

/** A prompt this long (at 3 characters a token, a generous estimate) cannot fit the server's input limit: it is left out, and said. */
const estimatedTokens = (text: string) => Math.ceil(text.length / 3);

/** One prompt's /generate, its meta_info read; a string says why it could not be measured. */
async function measure(ctx: CheckContext, prompt: ServingPrompt): Promise<PromptMeasurement | string> {
    const res = await ctx.http.post(
        endpointUrl(ctx.endpoint, "/generate"),
        { text: prompt.text, sampling_params: { temperature: 0, max_new_tokens: prompt.maxNewTokens } },
        ctx.withKey,
    );
    if ("error" in res) return `POST /generate: ${res.error}`;
    if (res.status !== 200) return `POST /generate answered HTTP ${res.status}: ${res.text.trim().slice(0, 300)}`;
    const meta = isRecord(res.body) ? res.body.meta_info : undefined;
    if (!isRecord(meta) || typeof meta.completion_tokens !== "number" || typeof meta.e2e_latency !== "number") {
        return `POST /generate answered without meta_info.completion_tokens and e2e_latency: ${res.text.trim().slice(0, 300)}`;
    }
    return {
        bucket: prompt.bucket,
        completionTokens: meta.completion_tokens,
        e2eLatencySeconds: meta.e2e_latency,
        ...(typeof meta.spec_verify_ct === "number" ? { verifyCount: meta.spec_verify_ct } : {}),
    };
}

/** The prompts that fit the server's input limit (a prompt longer than it is left out, and said). */
function fittingPrompts(ctx: CheckContext, prompts: readonly ServingPrompt[], info: Record<string, unknown>): readonly ServingPrompt[] {
    const inputLimit = typeof info.max_req_input_len === "number" ? info.max_req_input_len : Infinity;
    const fitting = prompts.filter((p) => estimatedTokens(p.text) + p.maxNewTokens <= inputLimit);
    if (fitting.length < prompts.length) {
        ctx.say(
            `[readiness] ${prompts.length - fitting.length} of ${prompts.length} serving prompts left out: longer than the server's input limit ` +
                `(max_req_input_len ${inputLimit}); readiness.servingPrompts replaces the set`,
        );
    }
    return fitting;
}

/**
 * The prompt set's passes as the gate takes them (core/serving/serving-figures.ts):
 * SERVING_WARMUP_PASSES warm-up passes then SERVING_MEASURED_PASSES measured
 * ones, each prompt once a pass, one at a time; every pass's measurements,
 * the warm-up's first. The bench (bench/phases/serving.ts) reads them all.
 */
export async function measurePasses(ctx: CheckContext, prompts: readonly ServingPrompt[]): Promise<PromptMeasurement[][] | { failed: CheckOutcome }> {
    const started = Date.now();
    const passes: PromptMeasurement[][] = [];
    const total = SERVING_WARMUP_PASSES + SERVING_MEASURED_PASSES;
    for (let pass = 0; pass < total; pass++) {
        const warmup = pass < SERVING_WARMUP_PASSES;
        const which = warmup ? "warm-up pass (not measured)" : `measured pass ${pass - SERVING_WARMUP_PASSES + 1} of ${SERVING_MEASURED_PASSES}`;
        const measurements: PromptMeasurement[] = [];
        for (const [i, prompt] of prompts.entries()) {
            ctx.say(
                `[readiness] serving check, ${which}: prompt ${i + 1} of ${prompts.length} (${prompt.bucket}), ${Math.round((Date.now() - started) / 1000)} s elapsed`,
            );
            const m = await measure(ctx, prompt);
            if (typeof m === "string") return { failed: checkFailed(NAME, `${which}, prompt ${i + 1} (${prompt.bucket}): ${m}`, { retry: true }) };
            measurements.push(m);
        }
        passes.push(measurements);
    }
    return passes;
}

async function measurePromptSet(
    ctx: CheckContext,
    prompts: readonly ServingPrompt[],
    info: Record<string, unknown>,
): Promise<{ figures: ServingFigures } | { failed: CheckOutcome }> {
    const fitting = fittingPrompts(ctx, prompts, info);
    if (fitting.length === 0)
        return { failed: checkFailed(NAME, "no serving prompt fits the server's input limit: set readiness.servingPrompts to shorter ones", { retry: false }) };
    const passes = await measurePasses(ctx, fitting);
    if ("failed" in passes) return passes;
    const measured = passes.slice(SERVING_WARMUP_PASSES);
    // A release that reports no verify steps per request: /server_info's running figure, read after the set.
    let serverAcceptLength: number | null = null;
    if (ctx.expectedSpeculative && measured.flat().some((m) => m.verifyCount === undefined)) {
        const after = await getServerInfo(ctx.endpoint, ctx.withKey, ctx.http.get);
        if ("error" in after) return { failed: checkFailed(NAME, after.error, { retry: true }) };
        const active = checkSpeculativeActive(after.body, ctx.expectedSpeculative);
        serverAcceptLength = active.ok ? active.acceptLength : null;
    }
    return { figures: figuresOfPasses(measured, ctx.expectedSpeculative, serverAcceptLength) };
}

export const servingQualityCheck: PostReadyCheck = {
    name: NAME,
    // A rollout's new config (the one the gate's settings come with): measured by the prompt set, or held by /server_info's figure alone.
    appliesTo: ({ quality, expectedSpeculative, lastGood }) => quality !== undefined && (quality.prompts !== null || Boolean(expectedSpeculative && lastGood)),
    async run(ctx) {
        const { expectedSpeculative: algorithm, lastGood, lastGoodOrigin: origin, quality } = ctx;
        if (!quality) throw new Error("the serving-quality check runs only with the gate's settings (appliesTo)");
        const info = await ctx.serverInfo();
        if ("error" in info) return checkFailed(this.name, info.error, { retry: true });
        let figures: ServingFigures;
        if (quality.prompts !== null) {
            const measured = await measurePromptSet(ctx, quality.prompts, info.body);
            if ("failed" in measured) return measured.failed;
            figures = measured.figures;
        } else {
            if (!algorithm) throw new Error("without the prompt set the serving-quality check runs only with speculation (appliesTo)");
            const active = checkSpeculativeActive(info.body, algorithm);
            if (!active.ok) return checkFailed(this.name, active.reason, { retry: false });
            if (active.acceptLength === null) {
                return { ok: true, said: "no avg accept length reported yet: nothing to hold against the last good figures" };
            }
            figures = { algorithm, acceptLength: active.acceptLength };
        }
        const shape = algorithm ? draftShapeOf(info.body, algorithm) : undefined;
        const verdict = judgeServing(figures, {
            ...(shape ? { shape } : {}),
            ...(lastGood ? { lastGood } : {}),
            ...(origin ? { origin } : {}),
            limits: quality.limits,
        });
        return verdict.ok ? { ok: true, said: verdict.said, findings: { servingFigures: figures } } : checkFailed(this.name, verdict.reason, { retry: false });
    },
};
