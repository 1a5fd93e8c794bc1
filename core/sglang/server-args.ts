/**
 * What an SGLang release's ServerArgs does with the settings the stack owns:
 * refuses them (the exception SGLang raises at startup, and the config key it
 * is about) or runs them (the values it will run, and what it logs on the
 * way). A transcription of the release's own code paths, in their order,
 * for these settings only; the differential test holds it to the real
 * releases (tests/lab/releases/differential.ts).
 *
 * The paths, in ServerArgs.__post_init__ order (0.5.11 line numbers):
 *   argparse choices (5367, 5742)
 *   -> `auto` strategy resolved to no_buffer (1079-1082)
 *   -> _handle_model_specific_adjustments: _handle_mamba_radix_cache for the
 *      hybrid architectures (2138-2297, 2366-2456)
 *   -> _handle_speculative_decoding (3286-3600)
 */
import { SglangRelease } from "./releases";
import { flagOf, settingOfKey } from "./settings";
import {
    EXTRA_BUFFER_LAZY_SINCE,
    MAMBA_SCHEDULER_STRATEGIES,
    parseSglangBool,
    radixSpeculativeError,
    readsSpecV2Env,
    SPEC_V2_ENV,
    versionAtLeast,
} from "./rules";

/** The settings of a command line that ServerArgs judges. */
export interface ServerArgsInput {
    /** config.json `architectures[0]`. */
    architecture: string;
    /** config.json `layer_types` (GraniteMoeHybrid is hybrid only with "mamba" layers). */
    layerTypes?: readonly string[];
    speculative?: {
        algorithm: string;
        draftModelPath?: string;
        numSteps?: number;
        eagleTopk?: number;
        numDraftTokens?: number;
    };
    mambaSchedulerStrategy?: string;
    disableRadixCache: boolean;
    maxRunningRequests?: number;
    /** `--mamba-track-interval` (default 256). */
    mambaTrackInterval?: number;
    environment: Readonly<Record<string, string>>;
    /** `--served-model-name`; absent where only the box's facts are judged. */
    servedModelName?: string;
}

/** A config key a refusal is about, as the stack names it. */
export type ServerArgsKey =
    | "service.speculative.algorithm"
    | "service.speculative.draftModelPath"
    | "service.speculative.numSteps"
    | "service.speculative.eagleTopk"
    | "service.speculative.numDraftTokens"
    | "service.mambaSchedulerStrategy"
    | "service.mambaTrackInterval"
    | "service.environment"
    | "service.model.servedName";

export interface ServerArgsRefusal {
    key: ServerArgsKey;
    /** What SGLang prints, `Type: message` (argparse errors as `sglang serve: error: ...`). */
    error: string;
    fix: string;
}

export interface ServerArgsVerdict {
    /**
     * What SGLang refuses, the exception it raises first; then what it would
     * refuse once that is fixed, where the checks do not depend on each other
     * (the argparse choices, the hybrid-model radix rules, the speculative
     * settings), so that one preview names every problem. Empty when it starts.
     */
    refusals: ServerArgsRefusal[];
    /** What SGLang logs about the settings (changes it makes, advice). */
    warnings: string[];
    /** Values SGLang will run that differ from, or fill in, the declared ones. */
    runs: {
        mambaSchedulerStrategy: string;
        disableRadixCache: boolean;
        speculativeAlgorithm?: string;
        numSteps?: number;
        eagleTopk?: number;
        numDraftTokens?: number;
        maxRunningRequests?: number;
    };
}

/** Hybrid architectures whose recurrent state has a radix cache with extra_buffer support (2184-2241). */
const MAMBA_CACHE_WITH_EXTRA_BUFFER = ["Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"];
/** Hybrid architectures with a radix cache but no extra_buffer (2143-2183, 2267-2297). */
const MAMBA_CACHE_NO_EXTRA_BUFFER = [
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
    "JetNemotronForCausalLM",
    "JetVLMForConditionalGeneration",
    "Lfm2ForCausalLM",
];
/** Hybrid architectures SGLang serves without a radix cache at all (2138-2142). */
const NO_MAMBA_CACHE = ["KimiLinearForCausalLM", "BailingMoeV2_5ForCausalLM"];
export const MAMBA_TRACK_INTERVAL_DEFAULT = 256;

export type MambaRadixSupport = "extra-buffer" | "no-extra-buffer" | "none" | "not-hybrid";

/** How SGLang's _handle_model_specific_adjustments treats the architecture's recurrent state. */
export function mambaRadixSupport(architecture: string, layerTypes?: readonly string[]): MambaRadixSupport {
    if (MAMBA_CACHE_WITH_EXTRA_BUFFER.includes(architecture)) return "extra-buffer";
    if (MAMBA_CACHE_NO_EXTRA_BUFFER.includes(architecture)) return "no-extra-buffer";
    // Hybrid only with mamba layers (2279-2290); without the model's config.json at hand, assume it has them.
    if (architecture === "GraniteMoeHybridForCausalLM") return !layerTypes || layerTypes.includes("mamba") ? "no-extra-buffer" : "not-hybrid";
    if (NO_MAMBA_CACHE.includes(architecture)) return "none";
    return "not-hybrid";
}

/** `SGLANG_ENABLE_SPEC_V2` as SGLang's EnvBool reads it: a value it cannot read warns and falls back to the default. */
export function specV2On(release: SglangRelease, environment: Readonly<Record<string, string>>): boolean {
    if (!readsSpecV2Env(release.version)) return true;
    const raw = environment[SPEC_V2_ENV];
    const parsed = raw === undefined ? undefined : parseSglangBool(raw);
    return parsed ?? release.specV2Default;
}

class Refused extends Error {
    constructor(readonly refusal: ServerArgsRefusal) {
        super(refusal.error);
    }
}

function refuse(key: ServerArgsKey, error: string, fix: string): never {
    throw new Refused({ key, error, fix });
}

/** What `release` does with `input` (see the file comment). */
export function judgeServerArgs(release: SglangRelease, input: ServerArgsInput): ServerArgsVerdict {
    const warnings: string[] = [];
    const refusals: ServerArgsRefusal[] = [];
    const runs: ServerArgsVerdict["runs"] = {
        mambaSchedulerStrategy: input.mambaSchedulerStrategy ?? "auto",
        disableRadixCache: input.disableRadixCache,
        maxRunningRequests: input.maxRunningRequests,
    };
    const phase = (run: () => void): boolean => {
        try {
            run();
            return true;
        } catch (e) {
            if (!(e instanceof Refused)) throw e;
            refusals.push(e.refusal);
            return false;
        }
    };
    const choicesOk = phase(() => argparseChoices(release, input));
    if (runs.mambaSchedulerStrategy === "auto") runs.mambaSchedulerStrategy = settingOfKey("service.mambaSchedulerStrategy").auto!;
    phase(() => mambaRadixCache(release, input, runs, warnings));
    if (choicesOk) phase(() => speculativeDecoding(release, input, runs, warnings));
    phase(() => launchChecks(input));
    return { refusals, warnings, runs };
}

/**
 * What `check_server_args` asserts when the launcher starts, after ServerArgs
 * is built (0.5.9 5155-5160, 0.5.10 6088-6094, 0.5.11 6803-6809; 0.5.23 in
 * arg_groups/validation_hook.py): the served name, whose colon is SGLang's
 * `model:adapter` syntax for LoRA. (A Run:ai object URI is exempt from
 * 0.5.10 on; a served name is never one here.)
 */
function launchChecks(input: ServerArgsInput): void {
    const name = input.servedModelName;
    if (name !== undefined && name.includes(":")) {
        refuse(
            "service.model.servedName",
            "AssertionError: served_model_name cannot contain a colon (':') character. " +
                "The colon is reserved for the 'model:adapter' syntax used in LoRA adapter specification. " +
                `Invalid value: '${name}'`,
            `name the model without ':' (for example ${name.replaceAll(":", "-")})`,
        );
    }
}

function argparseChoices(release: SglangRelease, input: ServerArgsInput): void {
    const strategy = input.mambaSchedulerStrategy;
    if (strategy === "extra_buffer_lazy" && !versionAtLeast(release.version, EXTRA_BUFFER_LAZY_SINCE)) {
        const choices = MAMBA_SCHEDULER_STRATEGIES.filter((c) => c !== "extra_buffer_lazy");
        refuse(
            "service.mambaSchedulerStrategy",
            `sglang serve: error: argument ${flagOf("service.mambaSchedulerStrategy", release.version)}: invalid choice: '${strategy}' (choose from ${choices.map((c) => `'${c}'`).join(", ")})`,
            `extra_buffer_lazy is a choice from SGLang ${EXTRA_BUFFER_LAZY_SINCE} on: use extra_buffer, or set service.sglangVersion to ${EXTRA_BUFFER_LAZY_SINCE} or later`,
        );
    }
    const algorithm = input.speculative?.algorithm;
    if (algorithm !== undefined && !release.speculativeAlgorithms.includes(algorithm)) {
        const choices = release.speculativeAlgorithms.map((a) => `'${a}'`).join(", ");
        refuse(
            "service.speculative.algorithm",
            `sglang serve: error: argument --speculative-algorithm: invalid choice: '${algorithm}' (choose from ${choices})`,
            `use one of ${release.speculativeAlgorithms.join(", ")}`,
        );
    }
}

/** _handle_mamba_radix_cache (2366-2456), for the architecture's branch of _handle_model_specific_adjustments. */
function mambaRadixCache(release: SglangRelease, input: ServerArgsInput, runs: ServerArgsVerdict["runs"], warnings: string[]): void {
    const support = mambaRadixSupport(input.architecture, input.layerTypes);
    const arch = input.architecture;
    if (support === "not-hybrid") return;
    if (support === "none") {
        warnings.push(`Disabling Radix Cache for ${arch} as it is not yet supported.`);
        runs.disableRadixCache = true;
        return;
    }
    // extra_buffer_lazy is an extra buffer too (0.5.23 arg_groups/model_override_base.py mamba_extra_buffer_of).
    const extraBuffer = runs.mambaSchedulerStrategy === "extra_buffer" || runs.mambaSchedulerStrategy === "extra_buffer_lazy";
    if (support === "no-extra-buffer" && extraBuffer) {
        refuse(
            "service.mambaSchedulerStrategy",
            `AssertionError: mamba extra_buffer is not supported for ${arch} model`,
            `SGLang supports extra_buffer only for ${MAMBA_CACHE_WITH_EXTRA_BUFFER.join(", ")}: remove mambaSchedulerStrategy` +
                (input.speculative ? " and set service.disableRadixCache: true (with speculative decoding that is the only way on this model)" : ""),
        );
    }
    if (extraBuffer) {
        if (runs.disableRadixCache && release.extraBufferRejectsDisabledRadix) {
            refuse(
                "service.mambaSchedulerStrategy",
                "ValueError: mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling is already supported with no_buffer + disable_radix_cache. Please use --mamba-scheduler-strategy no_buffer instead.",
                "remove mambaSchedulerStrategy (or set it to no_buffer), or keep extra_buffer and the radix cache (disableRadixCache: false)",
            );
        }
        const interval = input.mambaTrackInterval ?? MAMBA_TRACK_INTERVAL_DEFAULT;
        const draftTokens = input.speculative?.numDraftTokens;
        if (draftTokens !== undefined && interval < draftTokens) {
            refuse(
                input.mambaTrackInterval === undefined ? "service.speculative.numDraftTokens" : "service.mambaTrackInterval",
                `AssertionError: mamba_track_interval ${interval} must be greater than or equal to speculative_num_draft_tokens ${draftTokens}`,
                `with extra_buffer, --mamba-track-interval (${interval}) must be at least numDraftTokens (${draftTokens}): raise the interval or lower numDraftTokens`,
            );
        }
        return;
    }
    if (runs.disableRadixCache) return;
    if (!input.speculative) {
        warnings.push(
            "Disabling overlap schedule since mamba no_buffer is not compatible with overlap schedule, try to use --disable-radix-cache if overlap schedule is necessary",
        );
        return;
    }
    if (release.radixWithNoBuffer === "disable-radix") {
        warnings.push(`Disabling radix cache since speculative decoding for ${arch} is not supported with radix cache yet.`);
        runs.disableRadixCache = true;
        return;
    }
    refuse(
        "service.mambaSchedulerStrategy",
        radixSpeculativeError(arch),
        support === "extra-buffer"
            ? "set service.mambaSchedulerStrategy: extra_buffer (keeps prefix caching; SGLang checks the strategy only), or set service.disableRadixCache: true"
            : `set service.disableRadixCache: true (${arch} has no extra_buffer)`,
    );
}

/** _handle_speculative_decoding (3286-3600). */
function speculativeDecoding(release: SglangRelease, input: ServerArgsInput, runs: ServerArgsVerdict["runs"], warnings: string[]): void {
    const spec = input.speculative;
    if (!spec) return;
    const algorithm = spec.algorithm === "NEXTN" ? "EAGLE" : spec.algorithm;
    runs.speculativeAlgorithm = algorithm;
    let { numSteps, eagleTopk, numDraftTokens } = spec;
    const resetMaxRunning = () => {
        if (runs.maxRunningRequests !== undefined) return;
        runs.maxRunningRequests = 48;
        warnings.push("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.");
    };

    if (algorithm === "DFLASH") {
        if (spec.draftModelPath === undefined) {
            refuse(
                "service.speculative.draftModelPath",
                "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.",
                "set service.speculative.draftModelPath to the DFlash drafter's folder",
            );
        }
        if (numSteps !== undefined && numSteps !== 1) {
            warnings.push(`DFLASH only supports speculative_num_steps == 1; overriding speculative_num_steps=${numSteps} to 1.`);
        }
        if (eagleTopk !== undefined && eagleTopk !== 1) {
            warnings.push(`DFLASH only supports speculative_eagle_topk == 1; overriding speculative_eagle_topk=${eagleTopk} to 1.`);
        }
        numSteps = 1;
        eagleTopk = 1;
        // Without a declared count SGLang takes the drafter's block size from its config.json (16 if none).
        resetMaxRunning();
        Object.assign(runs, { numSteps, eagleTopk, numDraftTokens });
        return;
    }

    if (algorithm === "EAGLE" || algorithm === "EAGLE3" || algorithm === "STANDALONE") {
        resetMaxRunning();
        const v2 = specV2On(release, input.environment);
        if (release.topkAboveOneWithSpecV2 === "error" && v2 && eagleTopk !== undefined && eagleTopk > 1) {
            refuse(
                "service.speculative.eagleTopk",
                "ValueError: Spec v2 currently only supports topk = 1 for speculative decoding.",
                `set eagleTopk: 1, or set service.environment.${SPEC_V2_ENV}: "0" (spec v1, no overlap scheduling)`,
            );
        }
        if (numSteps === undefined) {
            if (eagleTopk !== undefined || numDraftTokens !== undefined) {
                refuse(
                    "service.speculative.numSteps",
                    "AssertionError",
                    "set numSteps together with eagleTopk and numDraftTokens, or none of the three (SGLang then picks them)",
                );
            }
            return;
        }
        if (eagleTopk === undefined) {
            refuse(
                "service.speculative.eagleTopk",
                "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
                "set eagleTopk (1 for the usual chain of draft tokens) together with numSteps",
            );
        }
        if (eagleTopk === 1 && numDraftTokens !== numSteps + 1) {
            warnings.push("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1");
            numDraftTokens = numSteps + 1;
        }
        Object.assign(runs, { numSteps, eagleTopk, numDraftTokens });
        return;
    }

    if (algorithm === "NGRAM") {
        resetMaxRunning();
        if (numDraftTokens === undefined) numDraftTokens = 12;
        // topk becomes --speculative-ngram-max-bfs-breadth (3571).
        Object.assign(runs, { numSteps, numDraftTokens, eagleTopk: undefined });
    }
}
