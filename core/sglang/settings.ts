/**
 * The one table of the SGLang settings the typed service config owns: for
 * each, its stack key, its flag per release (renames included) and the other
 * spellings argparse reads as it, its kind, the `/server_info` keys that
 * report it, what `auto` resolves to, and how drift compares it. Rendering
 * and parsing a command line (core/sglang/args.ts), normalising
 * `/server_info`, the drift comparison, the owned-flag list extraArgs may not
 * set (core/config/rules.ts) and the fields the read on the box copies
 * (core/sglang/server-info-read.ts, and so the read-only gate) all derive from it.
 * A new release that renames or adds an owned setting changes this table;
 * tests/core/sglang-settings.test.ts holds it against each release's own
 * argparse (core/sglang/argparse-tables.json).
 */
import type { ArgvFields, ArgvSpeculative } from "./argv-fields";
import { versionAtLeast } from "./rules";

/** How argparse reads the flag's value: one token of a type, or none (a switch). */
export type SettingKind = "string" | "int" | "float" | "switch";

/** A value of the typed fields as the command line and `/server_info` carry it. */
export type SettingValue = string | number | boolean;

/** The fields a setting lives in: a command line's (ArgvFields) or a running server's (LiveServerArgs), which has a subset. */
type Fields = Partial<ArgvFields>;

/**
 * How the drift comparison treats a setting declared on a command line
 * against what the running server reports:
 * - `compared`: whenever the command line sets it (and not to `auto`);
 * - `when-set`: a switch, compared only when on (SGLang turns some on by itself);
 * - `speculative`: compared as SGLang runs the speculative settings together (core/sglang/args.ts speculativeAsRun);
 * - `not-compared`: not reported by `/server_info` (or never read from it, as the API key).
 */
export type DriftRule = "compared" | "when-set" | "speculative" | "not-compared";

export interface OwnedSetting {
    /** The stack key that sets it (what a refusal or a drift line names). */
    key: string;
    /** Its flag by release, oldest first: the last whose `since` a release reaches is the one rendered for it. Each is read back. */
    flags: readonly { flag: string; since?: string }[];
    /** Other spellings argparse reads as the same option in every release: its aliases, or a unique abbreviation (`--tp`). */
    aliases: readonly string[];
    kind: SettingKind;
    /** `/server_info` keys that report it, oldest release's first: the last one an answer has wins. */
    serverInfo: readonly string[];
    /** What SGLang runs when the stack declares `auto` (ServerArgs' own pick, in the releases core/sglang/releases.ts lists); absent where `auto` is not a value. */
    auto?: string;
    drift: DriftRule;
    /**
     * The ArgvFields field that records which of `flags` a command line used,
     * so that a unit reads back and renders again as it was written.
     */
    flagField?: "mambaStrategyFlag";
    /** Its value in the fields; undefined when the command line does not set it (never rendered then). */
    get(fields: Fields): SettingValue | undefined;
    /** Puts a value read from a command line or from `/server_info` into the fields. */
    set(fields: Fields, value: SettingValue): void;
}

function speculativeOf(fields: Fields): ArgvSpeculative {
    fields.speculative ??= {};
    return fields.speculative;
}

const asString = (v: SettingValue) => String(v);
const asNumber = (v: SettingValue) => Number(v);

/** The owned settings, in the order the stack renders them. */
export const OWNED_SETTINGS: readonly OwnedSetting[] = [
    {
        key: "service.model.path",
        flags: [{ flag: "--model-path" }],
        aliases: ["--model"],
        kind: "string",
        serverInfo: ["model_path"],
        drift: "compared",
        get: (f) => f.modelPath,
        set: (f, v) => (f.modelPath = asString(v)),
    },
    {
        key: "service.model.servedName",
        flags: [{ flag: "--served-model-name" }],
        aliases: [],
        kind: "string",
        serverInfo: ["served_model_name"],
        drift: "compared",
        get: (f) => f.servedName,
        set: (f, v) => (f.servedName = asString(v)),
    },
    {
        key: "service.tensorParallelSize",
        flags: [{ flag: "--tp-size" }],
        aliases: ["--tp", "--tensor-parallel-size"],
        kind: "int",
        serverInfo: ["tp_size"],
        drift: "compared",
        get: (f) => f.tensorParallelSize,
        set: (f, v) => (f.tensorParallelSize = asNumber(v)),
    },
    {
        key: "service.listenHost",
        flags: [{ flag: "--host" }],
        aliases: [],
        kind: "string",
        serverInfo: ["host"],
        drift: "compared",
        get: (f) => f.listenHost,
        set: (f, v) => (f.listenHost = asString(v)),
    },
    {
        key: "service.port",
        flags: [{ flag: "--port" }],
        aliases: [],
        kind: "int",
        serverInfo: ["port"],
        drift: "compared",
        get: (f) => f.port,
        set: (f, v) => (f.port = asNumber(v)),
    },
    {
        key: "service.memFractionStatic",
        flags: [{ flag: "--mem-fraction-static" }],
        aliases: [],
        kind: "float",
        serverInfo: ["mem_fraction_static"],
        drift: "compared",
        get: (f) => f.memFractionStatic,
        set: (f, v) => (f.memFractionStatic = asNumber(v)),
    },
    {
        key: "service.maxRunningRequests",
        flags: [{ flag: "--max-running-requests" }],
        aliases: [],
        kind: "int",
        serverInfo: ["max_running_requests"],
        drift: "compared",
        get: (f) => f.maxRunningRequests,
        set: (f, v) => (f.maxRunningRequests = asNumber(v)),
    },
    {
        key: "service.speculative.algorithm",
        flags: [{ flag: "--speculative-algorithm" }],
        aliases: [],
        kind: "string",
        serverInfo: ["speculative_algorithm"],
        drift: "speculative",
        get: (f) => f.speculative?.algorithm,
        set: (f, v) => (speculativeOf(f).algorithm = asString(v)),
    },
    {
        key: "service.speculative.draftModelPath",
        flags: [{ flag: "--speculative-draft-model-path" }],
        aliases: ["--speculative-draft-model"],
        kind: "string",
        serverInfo: ["speculative_draft_model_path"],
        drift: "speculative",
        get: (f) => f.speculative?.draftModelPath,
        set: (f, v) => (speculativeOf(f).draftModelPath = asString(v)),
    },
    {
        key: "service.speculative.numSteps",
        flags: [{ flag: "--speculative-num-steps" }],
        aliases: [],
        kind: "int",
        serverInfo: ["speculative_num_steps"],
        drift: "speculative",
        get: (f) => f.speculative?.numSteps,
        set: (f, v) => (speculativeOf(f).numSteps = asNumber(v)),
    },
    {
        key: "service.speculative.eagleTopk",
        flags: [{ flag: "--speculative-eagle-topk" }],
        aliases: [],
        kind: "int",
        serverInfo: ["speculative_eagle_topk"],
        drift: "speculative",
        get: (f) => f.speculative?.eagleTopk,
        set: (f, v) => (speculativeOf(f).eagleTopk = asNumber(v)),
    },
    {
        key: "service.speculative.numDraftTokens",
        flags: [{ flag: "--speculative-num-draft-tokens" }],
        aliases: [],
        kind: "int",
        serverInfo: ["speculative_num_draft_tokens"],
        drift: "speculative",
        get: (f) => f.speculative?.numDraftTokens,
        set: (f, v) => (speculativeOf(f).numDraftTokens = asNumber(v)),
    },
    {
        // 0.5.14 renamed it (server_args.py; the old name a deprecated alias there, unknown to 0.5.23's argparse),
        // and /server_info reports it under the new name from then on.
        key: "service.mambaSchedulerStrategy",
        flags: [{ flag: "--mamba-scheduler-strategy" }, { flag: "--mamba-radix-cache-strategy", since: "0.5.14" }],
        aliases: [],
        kind: "string",
        serverInfo: ["mamba_scheduler_strategy", "mamba_radix_cache_strategy"],
        // What ServerArgs resolves `auto` to in the releases the stack's own rules model (0.5.9 to 0.5.11,
        // core/sglang/releases.ts; _handle_mamba_radix_cache). 0.5.23 picks by the model and speculation; its own code judges it.
        auto: "no_buffer",
        drift: "compared",
        flagField: "mambaStrategyFlag",
        get: (f) => f.mambaSchedulerStrategy,
        set: (f, v) => (f.mambaSchedulerStrategy = asString(v)),
    },
    {
        key: "service.disableRadixCache",
        flags: [{ flag: "--disable-radix-cache" }],
        aliases: [],
        kind: "switch",
        serverInfo: ["disable_radix_cache"],
        drift: "when-set",
        get: (f) => f.disableRadixCache || undefined,
        set: (f, v) => (f.disableRadixCache = v === true),
    },
    {
        key: "service.requireApiKey (the stack's 0600 config file carries the API key)",
        flags: [{ flag: "--config" }],
        aliases: [],
        kind: "string",
        serverInfo: [],
        drift: "not-compared",
        get: (f) => f.configFile,
        set: (f, v) => (f.configFile = asString(v)),
    },
    {
        // Never rendered (the key stays off the command line); read back from a unit edited by hand or of an older version.
        key: "service.requireApiKey (the key's value comes from SGLANG_SERVE_API_KEY at deploy)",
        flags: [{ flag: "--api-key" }],
        aliases: [],
        kind: "string",
        serverInfo: [],
        drift: "not-compared",
        get: () => undefined,
        set: (f) => (f.apiKeyInline = true),
    },
];

/** The flag a release reads the setting as (the newest name it knows). */
export function settingFlag(setting: OwnedSetting, version: string): string {
    const known = setting.flags.filter((f) => f.since === undefined || versionAtLeast(version, f.since));
    return (known[known.length - 1] ?? setting.flags[0]!).flag;
}

/** The owned setting of a stack key; throws for a key the table does not have (a mistake in the stack's own code). */
export function settingOfKey(key: string): OwnedSetting {
    const setting = OWNED_SETTINGS.find((s) => s.key === key);
    if (!setting) throw new Error(`no owned SGLang setting has the key ${key}`);
    return setting;
}

/** The flag a release reads the setting of a stack key as. */
export function flagOf(key: string, version: string): string {
    return settingFlag(settingOfKey(key), version);
}

/** Every spelling of an owned setting: its flags in every release, then its aliases. */
export function settingSpellings(setting: OwnedSetting): string[] {
    return [...setting.flags.map((f) => f.flag), ...setting.aliases];
}

/** Every flag an owned setting is read from (its names in every release, its aliases), with that setting. */
const SETTING_OF_FLAG: ReadonlyMap<string, OwnedSetting> = new Map(OWNED_SETTINGS.flatMap((s) => settingSpellings(s).map((flag) => [flag, s] as const)));

/**
 * Every flag an owned setting is read from, mapped to the stack key that
 * owns it: extraArgs may not set these, and a unit read back maps them to
 * typed fields.
 */
export const OWNED_FLAGS: Readonly<Record<string, string>> = Object.fromEntries([...SETTING_OF_FLAG].map(([flag, s]) => [flag, s.key]));

/** The owned setting a flag sets, with argparse's other spellings of it. */
export function settingOfFlag(flag: string): OwnedSetting | undefined {
    return SETTING_OF_FLAG.get(flag);
}

/** The type the read on the box copies a `/server_info` value as. */
export type ServerInfoType = "string" | "number" | "boolean";

/**
 * The `/server_info` keys the stack reads, with the type it compares each as:
 * the owned settings' keys, which core/sglang/args.ts normalizeServerInfo and
 * core/serving/chat-check.ts checkSpeculativeActive look at, and the server's
 * `version`. The read on the box (core/sglang/server-info-read.ts) copies only these
 * (also from a nested `server_args` object, the shape some releases use); a
 * value of another type fails that read, naming the field, not its value;
 * null (unset) is kept.
 */
export const SERVER_INFO_FIELDS: Readonly<Record<string, ServerInfoType>> = {
    ...Object.fromEntries(
        OWNED_SETTINGS.flatMap((s) => s.serverInfo.map((k) => [k, s.kind === "switch" ? "boolean" : s.kind === "string" ? "string" : "number"])),
    ),
    version: "string",
};
