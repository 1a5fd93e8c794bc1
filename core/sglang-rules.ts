/**
 * Facts about SGLang that the config rules, the argv renderer and the drift
 * check depend on. Each fact names where it comes from; see
 * /work/shared/sglang-facts.md (SGLang 0.5.9 .. 0.5.11 sources).
 */

/** A release as `major.minor.patch`; SGLang's own tags carry no suffix we rely on. */
export type Version = readonly [number, number, number];

export function parseVersion(text: string): Version | undefined {
    const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Negative when a < b, 0 when equal, positive when a > b. Throws on a malformed version. */
export function compareVersions(a: string, b: string): number {
    const va = mustParseVersion(a);
    const vb = mustParseVersion(b);
    for (let i = 0; i < 3; i++) {
        if (va[i] !== vb[i]) return va[i] - vb[i];
    }
    return 0;
}

export function versionAtLeast(version: string, minimum: string): boolean {
    return compareVersions(version, minimum) >= 0;
}

function mustParseVersion(text: string): Version {
    const v = parseVersion(text);
    if (!v) throw new Error(`not a major.minor.patch version: ${JSON.stringify(text)}`);
    return v;
}

/** The releases whose behaviour these rules were checked against; others get a warning. */
export const VERIFIED_VERSIONS = { oldest: "0.5.9", newest: "0.5.11" } as const;

/**
 * From 0.5.10 SGLang refuses speculative decoding on hybrid linear-attention
 * models with the radix cache on under `--mamba-scheduler-strategy no_buffer`
 * (0.5.9 silently disabled the radix cache instead).
 */
export const RADIX_SPECULATIVE_RULE_SINCE = "0.5.10";

/** `sglang serve` is the recommended entrypoint from here on; `launch_server` prints a deprecation warning. */
export const SERVE_LAUNCHER_SINCE = "0.5.10";

/**
 * Architectures (config.json `architectures[0]`) with linear-attention / Mamba
 * layers, for which SGLang keeps recurrent state per request: the radix-cache
 * rule below applies to them.
 */
export const HYBRID_LINEAR_ATTENTION_ARCHITECTURES: readonly string[] = [
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3NextForCausalLM",
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
];

export function isHybridLinearAttention(architecture: string): boolean {
    return HYBRID_LINEAR_ATTENTION_ARCHITECTURES.includes(architecture);
}

/** argparse choices of `--speculative-algorithm` in 0.5.9 .. 0.5.11 (case-sensitive). */
export const SPECULATIVE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"] as const;
export type SpeculativeAlgorithm = (typeof SPECULATIVE_ALGORITHMS)[number] | "DFLASH";

/**
 * DFLASH was added to the choices in a 0.5.x release after 0.5.11; the exact
 * release is not verified, so no version accepts it yet. Set this to the first
 * release that lists it (check `--speculative-algorithm` choices in
 * server_args.py) to allow `algorithm: DFLASH`.
 */
export const DFLASH_SINCE: string | undefined = undefined;

export function speculativeAlgorithmsFor(version: string): readonly string[] {
    const withDflash = DFLASH_SINCE !== undefined && versionAtLeast(version, DFLASH_SINCE);
    return withDflash ? [...SPECULATIVE_ALGORITHMS, "DFLASH"] : SPECULATIVE_ALGORITHMS;
}

/** Algorithms whose drafter is a separate checkpoint: `--speculative-draft-model-path` is required. */
export const DRAFT_MODEL_ALGORITHMS: readonly string[] = ["EAGLE", "EAGLE3", "STANDALONE", "DFLASH"];

/**
 * NEXTN drafts with the checkpoint's own MTP layers and NGRAM with n-gram
 * lookup: a draft model path would be ignored or would mean something else.
 */
export const NO_DRAFT_MODEL_ALGORITHMS: readonly string[] = ["NEXTN", "NGRAM"];

export const MAMBA_SCHEDULER_STRATEGIES = ["auto", "no_buffer", "extra_buffer"] as const;
export type MambaSchedulerStrategy = (typeof MAMBA_SCHEDULER_STRATEGIES)[number];

/** `auto` resolves to no_buffer in 0.5.10 / 0.5.11. */
export function resolvedMambaStrategy(strategy: MambaSchedulerStrategy | undefined): "no_buffer" | "extra_buffer" {
    return strategy === "extra_buffer" ? "extra_buffer" : "no_buffer";
}

/** The environment switch for the V2 speculative worker (overlap scheduler); only topk 1 works with it on. */
export const SPEC_V2_ENV = "SGLANG_ENABLE_SPEC_V2";

/**
 * How SGLang's `EnvBool` reads a variable (srt/environ.py): case-insensitive
 * true/1/yes/y and false/0/no/n; anything else warns and falls back to the
 * default (off). `undefined` means "not a boolean SGLang accepts".
 */
export function parseSglangBool(value: string): boolean | undefined {
    const v = value.toLowerCase();
    if (["true", "1", "yes", "y"].includes(v)) return true;
    if (["false", "0", "no", "n"].includes(v)) return false;
    return undefined;
}

export function specV2Enabled(environment: Readonly<Record<string, string>>): boolean {
    const raw = environment[SPEC_V2_ENV];
    return raw !== undefined && parseSglangBool(raw) === true;
}

/** SGLang's startup error for the radix-cache rule, verbatim (note the missing space after "no_buffer."). */
export function radixSpeculativeError(architecture: string): string {
    return (
        `ValueError: Speculative decoding for ${architecture} is not compatible with radix cache when using ` +
        `--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use ` +
        `--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`
    );
}

/** SGLang 0.5.9's log line for the same situation (it disables the cache and carries on). */
export function radixDisabledWarning(architecture: string): string {
    return `Disabling radix cache since speculative decoding for ${architecture} is not supported with radix cache yet.`;
}

/** `SGLANG_HEALTH_CHECK_TIMEOUT` default: /health answers 503 after this long. */
export const HEALTH_CHECK_TIMEOUT_SECONDS = 20;
/** A probe must outlast SGLang's own health-check timeout, plus a margin for the network and the 1-token generation. */
export const MIN_PROBE_TIMEOUT_SECONDS = HEALTH_CHECK_TIMEOUT_SECONDS + 5;

export const DEFAULT_PORT = 30000;
/** SGLang binds here when `--host` is not given. */
export const DEFAULT_LISTEN_HOST = "127.0.0.1";
/**
 * `--mem-fraction-static` is picked automatically when unset; about 0.85 on a
 * 48 GB card. Used only to judge whether the weights fit when the config does
 * not set it.
 */
export const ASSUMED_AUTO_MEM_FRACTION = 0.85;

/** The environment variable the EnvironmentFile defines and ExecStart expands into `--api-key`. */
export const API_KEY_ENV = "SGLANG_API_KEY";

/**
 * Flags the typed service config renders, with their argparse aliases, mapped
 * to the config key that owns them: extraArgs may not set these, and a unit
 * read back maps them to typed fields.
 */
export const OWNED_FLAGS: Readonly<Record<string, string>> = {
    "--model-path": "service.model.path",
    "--model": "service.model.path",
    "--served-model-name": "service.model.servedName",
    "--tp-size": "service.tensorParallelSize",
    "--tp": "service.tensorParallelSize",
    "--tensor-parallel-size": "service.tensorParallelSize",
    "--host": "service.listenHost",
    "--port": "service.port",
    "--mem-fraction-static": "service.memFractionStatic",
    "--max-running-requests": "service.maxRunningRequests",
    "--speculative-algorithm": "service.speculative.algorithm",
    "--speculative-draft-model-path": "service.speculative.draftModelPath",
    "--speculative-draft-model": "service.speculative.draftModelPath",
    "--speculative-num-steps": "service.speculative.numSteps",
    "--speculative-eagle-topk": "service.speculative.eagleTopk",
    "--speculative-num-draft-tokens": "service.speculative.numDraftTokens",
    "--mamba-scheduler-strategy": "service.mambaSchedulerStrategy",
    "--disable-radix-cache": "service.disableRadixCache",
    "--api-key": "sglang-serve:apiKey (secret)",
};
