/**
 * The SGLang server's command line: rendered from the typed service config,
 * parsed back from a unit on the box, and compared with what a running server
 * reports in `/server_info`.
 *
 * API key: SGLang takes the key as `--api-key` (ServerArgs.api_key; no
 * environment variable reads it). The unit passes `--config <0600 yaml>`
 * instead, a file that holds `api-key: "<key>"`: every supported release's
 * prepare_server_args (0.5.9 on) merges a YAML file given as `--config` into
 * argv before argparse (srt/server_args_config_parser.py: each key becomes
 * `--<key> <value>`, placed before the command line's own flags, so the
 * command line wins). The key so stays off the command line:
 * /proc/<pid>/cmdline and `systemctl status` show only the file's path
 * (issue 19).
 */
import { z } from "zod";
import type { ServiceConfig } from "../config/schema";
import { servicePython } from "../venv/venv-layout";
import { diffFields, FieldDiff } from "../drift/diff";
import { SERVE_LAUNCHER_SINCE, versionAtLeast } from "./rules";
import type { ArgvFields, ArgvSpeculative, Launcher } from "./argv-fields";
import { flagOf, OWNED_SETTINGS, SERVER_INFO_FIELDS, settingOfFlag, type OwnedSetting, type SettingValue } from "./settings";

export interface RenderArgvOptions {
    /** The 0600 YAML file holding the API key; renders `--config <file>`. Omit for no key. */
    configFile?: string;
}

export class ArgvError extends Error {}

/** `sglang serve` from 0.5.10 (launch_server is deprecated there), launch_server before, unless the config picks. */
export function resolveLauncher(service: Pick<ServiceConfig, "launcher" | "sglangVersion">): Launcher {
    if (service.launcher !== "auto") return service.launcher;
    return versionAtLeast(service.sglangVersion, SERVE_LAUNCHER_SINCE) ? "serve" : "launch_server";
}

/** The `sglang` console script installed beside the venv's python. */
export function serveExecutable(python: string): string {
    return `${python.slice(0, python.lastIndexOf("/"))}/sglang`;
}

function compact<T extends object>(value: T): T {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The fields the declared service puts on its command line. */
export function argvFieldsOf(service: ServiceConfig, opts: RenderArgvOptions = {}): ArgvFields {
    const launcher = resolveLauncher(service);
    const spec = service.speculative;
    return compact<ArgvFields>({
        launcher,
        executable: launcher === "serve" ? serveExecutable(servicePython(service)) : servicePython(service),
        modelPath: service.model.path,
        servedName: service.model.servedName,
        tensorParallelSize: service.tensorParallelSize,
        listenHost: service.listenHost,
        port: service.port,
        memFractionStatic: service.memFractionStatic,
        maxRunningRequests: service.maxRunningRequests,
        speculative: spec
            ? compact<ArgvSpeculative>({
                  algorithm: spec.algorithm,
                  draftModelPath: spec.draftModelPath,
                  numSteps: spec.numSteps,
                  eagleTopk: spec.eagleTopk,
                  numDraftTokens: spec.numDraftTokens,
              })
            : undefined,
        mambaSchedulerStrategy: service.mambaSchedulerStrategy,
        mambaStrategyFlag: service.mambaSchedulerStrategy === undefined ? undefined : flagOf("service.mambaSchedulerStrategy", service.sglangVersion),
        disableRadixCache: service.disableRadixCache,
        configFile: opts.configFile,
        apiKeyInline: false,
        extraArgs: [...service.extraArgs],
    });
}

/**
 * The ExecStart argv, flags in a fixed order, only those the config asks
 * for (SGLang's defaults are not spelled out; port and tensor parallel size
 * are always given because the stack probes and sizes by them).
 */
export function renderArgv(service: ServiceConfig, opts: RenderArgvOptions = {}): string[] {
    return argvFromFields(argvFieldsOf(service, opts));
}

/**
 * The command line of the typed fields, owned settings in the table's order
 * (core/sglang/settings.ts), then extraArgs; every word is literal (the API
 * key is in the --config file, never expanded by systemd).
 */
export function argvFromFields(fields: ArgvFields): string[] {
    const argv = fields.launcher === "serve" ? [fields.executable, "serve"] : [fields.executable, "-m", "sglang.launch_server"];
    for (const setting of OWNED_SETTINGS) {
        const value = setting.get(fields);
        if (value === undefined) continue;
        const flag = (setting.flagField && fields[setting.flagField]) ?? setting.flags[0]!.flag;
        if (setting.kind !== "switch") argv.push(flag, String(value));
        else if (value === true) argv.push(flag);
    }
    argv.push(...fields.extraArgs);
    return argv;
}

function checkValue(flag: string, kind: OwnedSetting["kind"], value: string): void {
    const ok = kind === "string" || (kind === "int" && /^-?\d+$/.test(value)) || (kind === "float" && value.trim() !== "" && Number.isFinite(Number(value)));
    if (!ok) throw new ArgvError(`${flag} needs ${kind === "int" ? "a whole number" : "a number"}, got ${JSON.stringify(value)}`);
}

/** Launcher and argv position of the first flag, from the command's head. */
function parseHead(argv: readonly string[]): { launcher: Launcher; next: number } {
    if (argv[1] === "serve") return { launcher: "serve", next: 2 };
    if (argv[1] === "-m" && argv[2] === "sglang.launch_server") return { launcher: "launch_server", next: 3 };
    throw new ArgvError(
        `not an SGLang server command line (expected "<venv>/sglang serve ..." or "<python> -m sglang.launch_server ..."): ${argv.slice(0, 3).join(" ")}`,
    );
}

/**
 * The typed fields of a server command line (the inverse of renderArgv).
 * Accepts `--flag value` and `--flag=value`, argparse aliases of owned flags
 * (`--tp`, `--model`), and `sglang serve`'s positional model path. Tokens the
 * config does not own (a flag and the values after it) are kept in extraArgs
 * as they are. A repeated owned flag keeps the last value, as argparse does.
 * Throws ArgvError on a command that is not an SGLang server or an owned
 * flag with a bad value.
 */
export function parseArgv(argv: readonly string[]): ArgvFields {
    if (argv.length < 2) throw new ArgvError("empty command line");
    const head = parseHead(argv);
    const fields: ArgvFields = {
        launcher: head.launcher,
        executable: argv[0],
        modelPath: "",
        disableRadixCache: false,
        apiKeyInline: false,
        extraArgs: [],
    };
    let i = head.next;
    if (head.launcher === "serve" && i < argv.length && !argv[i].startsWith("-")) {
        fields.modelPath = argv[i];
        i++;
    }
    while (i < argv.length) {
        const token = argv[i];
        i++;
        if (!token.startsWith("--")) {
            fields.extraArgs.push(token);
            continue;
        }
        const eq = token.indexOf("=");
        const flag = eq === -1 ? token : token.slice(0, eq);
        const inline = eq === -1 ? undefined : token.slice(eq + 1);
        const setting = settingOfFlag(flag);
        if (setting) {
            if (setting.kind === "switch") {
                if (inline !== undefined) throw new ArgvError(`${flag} takes no value, got ${JSON.stringify(inline)}`);
                setting.set(fields, true);
            } else {
                const value = inline ?? argv[i];
                if (inline === undefined) i++;
                if (value === undefined) throw new ArgvError(`${flag} needs a value`);
                checkValue(flag, setting.kind, value);
                setting.set(fields, value);
            }
            if (setting.flagField) fields[setting.flagField] = flag;
            continue;
        }
        // Not owned: the flag and its values stay as written (the value tokens follow on the next turns).
        fields.extraArgs.push(token);
    }
    if (fields.modelPath === "") throw new ArgvError("no --model-path in the command line");
    return fields;
}

// ---------------------------------------------------------------------------
// /server_info
// ---------------------------------------------------------------------------

/** The owned fields of a command line as a running server reports them (SGLang's defaults filled in), and its version. */
export type LiveServerArgs = Partial<
    Pick<
        ArgvFields,
        | "modelPath"
        | "servedName"
        | "tensorParallelSize"
        | "listenHost"
        | "port"
        | "memFractionStatic"
        | "maxRunningRequests"
        | "speculative"
        | "mambaSchedulerStrategy"
        | "disableRadixCache"
    >
> & { version?: string };

const NULLABLE = { string: z.string().nullish(), number: z.number().nullish(), boolean: z.boolean().nullish() } as const;

/** The keys of `/server_info` this stack reads (core/sglang/settings.ts); everything else is ignored. */
const ServerInfoSchema = z.object(Object.fromEntries(Object.entries(SERVER_INFO_FIELDS).map(([key, type]) => [key, NULLABLE[type]])));
type ServerInfo = Record<string, SettingValue | null | undefined>;

/** What `/server_info` reports for a setting: the value of the newest of its keys the answer has. */
function reported(info: ServerInfo, setting: OwnedSetting): SettingValue | undefined {
    const values = setting.serverInfo.map((key) => info[key]).filter((v): v is SettingValue => v !== null && v !== undefined);
    return values[values.length - 1];
}

/**
 * The owned fields from `/server_info` JSON. NEXTN shows there as EAGLE with
 * no draft model or the served model itself as the draft: that is mapped back
 * to NEXTN, so the declared NEXTN is not reported as drift. Accepts the flat
 * shape SGLang returns and one nested under `server_args`.
 */
export function normalizeServerInfo(json: unknown): LiveServerArgs {
    const source =
        json !== null && typeof json === "object" && "server_args" in json && typeof json.server_args === "object"
            ? { ...(json.server_args as object), version: (json as { version?: unknown }).version }
            : json;
    const parsed = ServerInfoSchema.safeParse(source);
    if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
        throw new ArgvError(`/server_info is not the expected JSON object: ${problems}`);
    }
    const info = parsed.data as ServerInfo;
    const live: LiveServerArgs = {};
    for (const setting of OWNED_SETTINGS) {
        const value = reported(info, setting);
        if (value !== undefined) setting.set(live, value);
    }
    live.speculative = speculativeAsReported(live.speculative, live.modelPath);
    live.version = typeof info.version === "string" ? info.version : undefined;
    return compact(live);
}

/** The speculative settings `/server_info` reports, as the stack declares them: none for no algorithm, NEXTN for EAGLE on the model's own head. */
function speculativeAsReported(spec: ArgvSpeculative | undefined, modelPath: string | undefined): ArgvSpeculative | undefined {
    if (spec?.algorithm === undefined || spec.algorithm === "" || spec.algorithm === "NONE") return undefined;
    // SGLang rewrites NEXTN to EAGLE and drafts with the checkpoint's MTP layers.
    if (spec.algorithm === "EAGLE" && (spec.draftModelPath === undefined || spec.draftModelPath === modelPath)) {
        spec.algorithm = "NEXTN";
        delete spec.draftModelPath;
    }
    return spec;
}

/**
 * The one comparison of a declared command line (the stack's, or the unit's
 * on the box) with what the running server reports: the owned fields where
 * they differ, as config keys. The declared values are first put the way
 * SGLang itself puts them, so that nothing declared shows as drift forever:
 *
 * - only what the command line sets is compared: a value SGLang picked itself
 *   (a mem fraction, 48 max running requests, auto-picked draft steps, the
 *   strategy `auto` resolves to) is not drift;
 * - NEXTN, and EAGLE without a draft path, draft from the model's own MTP
 *   layers: `/server_info` shows EAGLE with a null (or the model's) draft path,
 *   which normalizeServerInfo reads as NEXTN; NEXTN with a draft path runs as
 *   EAGLE with that drafter;
 * - with eagleTopk 1, SGLang runs numSteps + 1 draft tokens whatever was
 *   declared (it warns "speculative_num_draft_tokens is adjusted ...");
 *   DFLASH runs one step with topk 1; NGRAM's topk is its BFS breadth;
 * - `--disable-radix-cache` is compared only when set: SGLang disables the
 *   cache by itself for some models (0.5.9 with speculation on hybrid models,
 *   KimiLinear, ...), which is not a change on the box.
 *
 * Speculation running where none is declared is drift.
 */
export function liveArgsDrift(declared: ArgvFields, live: LiveServerArgs): FieldDiff[] {
    const want: Record<string, unknown> = {};
    const got: Record<string, unknown> = {};
    const compare = (field: string, declaredValue: unknown, liveValue: unknown) => {
        if (declaredValue === undefined) return;
        want[field] = declaredValue;
        got[field] = liveValue;
    };
    for (const setting of OWNED_SETTINGS) {
        const value = setting.get(declared);
        if (setting.drift === "compared") compare(setting.key, value === "auto" && setting.auto !== undefined ? undefined : value, setting.get(live));
        if (setting.drift === "when-set") compare(setting.key, value, setting.get(live) ?? false);
    }

    const spec = declared.speculative?.algorithm ? speculativeAsRun(declared.speculative, declared.modelPath) : undefined;
    const liveSpec = live.speculative;
    want["service.speculative.algorithm"] = spec?.algorithm;
    got["service.speculative.algorithm"] = liveSpec?.algorithm;
    if (spec) {
        compare("service.speculative.draftModelPath", spec.draftModelPath, liveSpec?.draftModelPath);
        compare("service.speculative.numSteps", spec.numSteps, liveSpec?.numSteps);
        compare("service.speculative.eagleTopk", spec.eagleTopk, liveSpec?.eagleTopk);
        compare("service.speculative.numDraftTokens", spec.numDraftTokens, liveSpec?.numDraftTokens);
    }
    return diffFields(want, got);
}

/** The declared speculative settings as SGLang runs them (see liveArgsDrift). */
function speculativeAsRun(spec: ArgvSpeculative, modelPath: string): ArgvSpeculative {
    let { algorithm, draftModelPath, numSteps, eagleTopk, numDraftTokens } = spec;
    if (algorithm === "NEXTN" || algorithm === "EAGLE") {
        const ownHead = draftModelPath === undefined || draftModelPath === modelPath;
        algorithm = ownHead ? "NEXTN" : "EAGLE";
        if (ownHead) draftModelPath = undefined;
    }
    if (algorithm === "DFLASH") {
        numSteps = 1;
        eagleTopk = 1;
    } else if (algorithm === "NGRAM") {
        eagleTopk = undefined;
    } else if (eagleTopk === 1 && numSteps !== undefined) {
        numDraftTokens = numSteps + 1;
    }
    return compact<ArgvSpeculative>({ algorithm, draftModelPath, numSteps, eagleTopk, numDraftTokens });
}
