// A post-ready check: once the readiness machine says ready, the readiness wait runs the
// registered checks (registry.ts) in order, each one small and in its own
// file, and the first failure fails the start. Like Nomad's health tracker,
// the runner counts checks without knowing what any of them looks at.
//
// A new check is one file exporting a PostReadyCheck, plus its line in
// registry.ts. It fails with `checkFailed` (its own name, the reason, and
// whether a new start could pass it); nothing else needs a case for it.

import type { FailureCause } from "../../core/readiness/readiness";
import type { ServingFigures } from "../../core/serving/serving-figures";
import type { FiguresOrigin } from "../../core/serving/serving-history";
import type { ServingPrompt } from "../../core/serving/serving-prompts";
import type { QualityLimits } from "../../core/serving/serving-quality";
import type { HttpResult, ProbeOptions } from "../probe";

/** The server under check, as the readiness wait was told about it. */
export interface CheckedServer {
    /** http://host:port of the OpenAI-compatible API, as reachable from this machine. */
    endpoint: string;
    /** SGLang --api-key: sent as a Bearer token to the chat completion and /server_info (not /health, which is open). */
    apiKey?: string;
    servedModelName: string;
    /** readiness.chatCheck: send one short chat completion and judge its text. */
    chatCheck: boolean;
    /** The configured algorithm (NEXTN, EAGLE3, ...) when speculative decoding is on. */
    expectedSpeculative?: string;
    /** Per HTTP probe; >= SGLang's 20 s health-check timeout plus a margin. */
    probeTimeoutMs: number;
    /** The serving-quality gate's settings (serving-quality.ts): present for a rollout's new config only, which the gate judges. */
    quality?: ServingQualitySettings;
    /** A new config's start: the last good config's figures, which it must serve at least as well as (serving-quality.ts). */
    lastGood?: ServingFigures;
    /** Whose figures lastGood are (core/serving/serving-history.ts): the config's own from an earlier rollout, or (absent) the current last good. */
    lastGoodOrigin?: FiguresOrigin;
}

export interface ServingQualitySettings {
    /** The prompt set to measure (readiness.servingCheck); null: none, the accept length from /server_info only. */
    prompts: readonly ServingPrompt[] | null;
    limits: QualityLimits;
}

export interface CheckContext extends CheckedServer {
    http: {
        get: (url: string, opts: ProbeOptions) => Promise<HttpResult>;
        post: (url: string, payload: unknown, opts: ProbeOptions) => Promise<HttpResult>;
    };
    /** Probe options that send the API key (when there is one). */
    withKey: ProbeOptions;
    /** GET /server_info with the key: read once per readiness wait, shared by the checks and the wait's result. */
    serverInfo: () => Promise<{ body: Record<string, unknown> } | { error: string }>;
    /** A progress line while a check runs long (the prompt set). */
    say: (message: string) => void;
}

/** What checks found that the readiness wait reports (ReadinessResult). */
export interface CheckFindings {
    /** The chat check's text. */
    chatText?: string;
    /** Lowest avg_spec_accept_length reported, when speculation is checked and reported. */
    acceptLength?: number | null;
    /** What the serving-quality gate measured. */
    servingFigures?: ServingFigures;
}

export type CheckOutcome = { ok: true; said: string; findings?: CheckFindings } | { ok: false; cause: FailureCause };

export interface PostReadyCheck {
    /** Short and unique among the registered checks: it names the check in a failure. */
    readonly name: string;
    /** Whether the server's settings call for this check. */
    appliesTo(server: CheckedServer): boolean;
    /** Never throws for server problems: they are failures. */
    run(ctx: CheckContext): Promise<CheckOutcome>;
}

/** A check's failure for a check without a failure kind of its own. `retry`: whether a new start of the same config could pass it. */
export function checkFailed(check: string, reason: string, opts: { retry: boolean }): CheckOutcome {
    return { ok: false, cause: { kind: "post-ready-check", check, reason, retry: opts.retry } };
}

/** Runs the checks that apply, in order, until one fails. Each pass is said as one progress line. */
export async function runPostReadyChecks(
    checks: readonly PostReadyCheck[],
    ctx: CheckContext,
): Promise<{ ok: true; findings: CheckFindings } | { ok: false; cause: FailureCause }> {
    let findings: CheckFindings = {};
    for (const check of checks) {
        if (!check.appliesTo(ctx)) continue;
        const outcome = await check.run(ctx);
        if (!outcome.ok) return outcome;
        ctx.say(`[readiness] ${outcome.said}`);
        findings = { ...findings, ...outcome.findings };
    }
    return { ok: true, findings };
}
