/**
 * SGLang's own verdict on the rendered server (issue 18 item 1): what goes to
 * the declared release's code (sglang-release/oracle.py, run on the machine
 * running pulumi by providers/sglang-server/verdict.ts, the hardware stubbed by the
 * box's declared GPUs, the model folder by the box's config.json), and what
 * its answer means for the preview: a refusal is SGLang's own text filed under
 * the stack key (or the extraArgs element) it is about; what SGLang says it
 * changes is a notice naming what it will run.
 */
import { sha256 } from "../digest";
import { ExtraFlag, extraFlags } from "./extra-args";
import { flagMap } from "./flag-map";
import { OWNED_FLAGS, settingOfFlag } from "./settings";
import { argparseOption, argparseTable } from "./argparse";
import { serviceFromUnit } from "../unit/systemd-unit";
import { parserArgvOf } from "../venv/venv-layout";
import type { OracleCase } from "../../sglang-release/oracle";

export type VerdictEntry = "sglang-serve" | "launch-server";

/** One run of the release's code, as the cache keys it. */
export interface VerdictRequest {
    version: string;
    entry: VerdictEntry;
    /** The arguments after the program, as the unit runs them, less `--config <file>` (the API key, which no rule reads). */
    argv: string[];
    /** The unit's Environment= lines. */
    env: Record<string, string>;
    /** The box's GPUs: how many, one's memory and name (host.gpus), and the compute capability nvidia-smi reads on the box (GpuHost's facts). */
    gpus: { count: number; memoryMiB?: number; name?: string; computeCapability?: string };
    /** The box's model folder, and its config.json, which the release reads in place of the folder. */
    model: { path: string; configJson: string };
    /** The drafter's folder and config.json, when the server loads a separate one. */
    drafter?: { path: string; configJson: string };
}

/** What the release said, kept small (the verdict cache holds it). */
export interface ReleaseVerdict {
    /** ok: the release got to where it starts the server; refused: argparse or an exception on the way. */
    status: "ok" | "refused";
    /** argparse's message (`sglang serve: error: ...`), or `<ExceptionType>: <message>` as Python prints it. */
    error?: string;
    /** The release's own warnings on the way (server_args and the like), with the local stand-in folders named as the box's. */
    warnings: string[];
    /** What the release resolved that the fit reads (ok only; core/box/resolved-fit.ts). */
    resolved?: ResolvedServer;
    /** For a refusal raised by a check: the settings it reads, from the release's source (oracle.py checkReads: ServerArgs fields, `env:VAR`). */
    reads?: string[];
}

/** The settings of the release's resolved ServerArgs the fit reads: the memory fraction it picks when none is declared, the parallel sizes. */
export interface ResolvedServer {
    memFractionStatic: number;
    tpSize: number;
    ppSize: number;
    dpSize: number;
    /** `enable_dp_attention`: the data parallel ranks share the tp x pp GPUs. */
    dpAttention: boolean;
}

/** The fields of the release's ServerArgs dump (dataclasses.asdict, or 0.5.2x's resolved_dict) the fit reads; undefined when one is missing. */
export function resolvedServerOf(serverArgs: Record<string, unknown> | null | undefined): ResolvedServer | undefined {
    if (!serverArgs) return undefined;
    const n = (key: string, otherwise?: number) => {
        const v = serverArgs[key];
        return typeof v === "number" ? v : v === null || v === undefined ? otherwise : undefined;
    };
    const memFractionStatic = n("mem_fraction_static");
    const tpSize = n("tp_size");
    if (memFractionStatic === undefined || tpSize === undefined) return undefined;
    return { memFractionStatic, tpSize, ppSize: n("pp_size", 1) ?? 1, dpSize: n("dp_size", 1) ?? 1, dpAttention: serverArgs.enable_dp_attention === true };
}

/** What the preview needs to ask the release, from the unit the stack would write. */
export interface VerdictInputs {
    version: string;
    unitText: string;
    gpus: VerdictRequest["gpus"];
    modelConfigJson?: string;
    drafterConfigJson?: string;
}

/** The request, or why the verdict cannot be asked (shown as a notice). */
export function verdictRequest(inputs: VerdictInputs): VerdictRequest | { unavailable: string } {
    const unit = serviceFromUnit(inputs.unitText);
    const { fields } = unit;
    if (inputs.modelConfigJson === undefined) {
        return { unavailable: `the box's ${fields.modelPath}/config.json was not read (a first preview, or a folder without one)` };
    }
    const drafterPath = fields.speculative?.draftModelPath;
    const separateDrafter = drafterPath !== undefined && drafterPath !== fields.modelPath;
    if (separateDrafter && inputs.drafterConfigJson === undefined) {
        return { unavailable: `the drafter's ${drafterPath}/config.json could not be read` };
    }
    // The flags after the program (`<venv>/bin/sglang serve`, `<python> -m sglang.launch_server`), as the preview shows them.
    const argv = parserArgvOf(unit.argv);
    return {
        version: inputs.version,
        entry: fields.launcher === "serve" ? "sglang-serve" : "launch-server",
        argv,
        env: unit.environment,
        gpus: inputs.gpus,
        model: { path: fields.modelPath, configJson: inputs.modelConfigJson },
        ...(separateDrafter ? { drafter: { path: drafterPath, configJson: inputs.drafterConfigJson! } } : {}),
    };
}

/** The cache key of a request: everything the release's answer depends on, and the code that asks it (`judge`: a digest of sglang-release/'s files). */
export function verdictKey(request: VerdictRequest, judge: string): string {
    return sha256(JSON.stringify({ request, judge })).slice(0, 40);
}

/** The request's argv with the box's folders replaced by the local stand-ins (their config.json). */
export function standInArgv(request: VerdictRequest, modelDir: string, drafterDir?: string): string[] {
    const folders = new Map<string, string>([[request.model.path, modelDir]]);
    if (request.drafter && drafterDir) folders.set(request.drafter.path, drafterDir);
    return request.argv.map((a, i) => (i > 0 && request.argv[i - 1]!.startsWith("--") && folders.has(a) ? folders.get(a)! : a));
}

/** The run of the release's code a request asks for (sglang-release/oracle.ts OracleCase), its folders the local stand-ins. */
export function verdictCase(request: VerdictRequest, standIns: { model: string; drafter?: string }): OracleCase {
    return {
        argv: standInArgv(request, standIns.model, standIns.drafter),
        entry: request.entry,
        // The GPUs' name and compute capability reach the stubs as the lab's driver would report them
        // (torch.cuda.get_device_capability, pynvml, nvidia-smi's compute_cap): a Hopper-only backend is judged on 9.0.
        env: {
            ...request.env,
            ...(request.gpus.name !== undefined ? { SGLANG_LAB_GPU_NAME: request.gpus.name } : {}),
            ...(request.gpus.computeCapability !== undefined ? { SGLANG_LAB_GPU_CAPABILITY: request.gpus.computeCapability } : {}),
        },
        gpuCount: request.gpus.count,
        ...(request.gpus.memoryMiB !== undefined ? { gpuMemoryMiB: request.gpus.memoryMiB } : {}),
    };
}

/** The oracle's answer (sglang-release/oracle.ts OracleResult), the fields read here. */
export interface ReleaseAnswer {
    status: "ok" | "argparse-error" | "exception" | "exit";
    exitCode: number;
    exceptionType: string | null;
    message: string | null;
    logs: { level: string; logger: string; message: string }[];
    /** What the release printed on stderr: for an exception, Python's traceback. */
    stderr?: string;
    /** The resolved ServerArgs, when the release got to the launcher. */
    serverArgs?: Record<string, unknown> | null;
    /** For an exception: the settings the check that raised it reads (ServerArgs fields, `env:VAR`), from the release's source. */
    checkReads?: string[] | null;
}

/**
 * The source lines of the last traceback in `stderr`, one per frame,
 * innermost first (what follows each `File "...", line N, in ...`, without
 * the `^^^` markers); empty when there is none.
 */
export function tracebackLinesOf(stderr: string | undefined): string[] {
    if (!stderr) return [];
    const lines = stderr.split("\n");
    const start = lines.map((l) => l.startsWith("Traceback (most recent call last):")).lastIndexOf(true);
    if (start < 0) return [];
    const frames: string[] = [];
    let source: string[] | undefined;
    for (const l of lines.slice(start + 1)) {
        if (/^\s+File ".*", line \d+, in /.test(l)) {
            if (source?.length) frames.push(source.join(" "));
            source = [];
        } else if (/^\s/.test(l)) {
            if (!/^\s*[\^~]+\s*$/.test(l)) source?.push(l.trim());
        } else break;
    }
    if (source?.length) frames.push(source.join(" "));
    return frames.reverse();
}

/** How a verdict's error shows the line that raised it, after SGLang's message (not part of the message for verdictKeyOf). */
const AT = "(at `";

/** The release's answer as the verdict, the stand-in folders named as the box's in every text. */
export function verdictOf(answer: ReleaseAnswer, request: VerdictRequest, standIns: { model: string; drafter?: string }): ReleaseVerdict {
    const asBox = (text: string) => {
        let out = text.split(standIns.model).join(request.model.path);
        if (standIns.drafter && request.drafter) out = out.split(standIns.drafter).join(request.drafter.path);
        return out;
    };
    const prog = request.entry === "sglang-serve" ? "sglang serve" : "launch_server.py";
    const warnings = answer.logs
        .filter((l) => (l.level === "WARNING" || l.level === "ERROR") && l.logger.startsWith("sglang"))
        // The stand-in folder has config.json only: what SGLang says about the folder's other files is about the stand-in.
        .filter((l) => !/generation config/i.test(l.message))
        .map((l) => asBox(l.message));
    if (answer.status === "ok") {
        const resolved = resolvedServerOf(answer.serverArgs);
        return { status: "ok", warnings, ...(resolved ? { resolved } : {}) };
    }
    if (answer.status === "argparse-error") return { status: "refused", error: asBox(`${prog}: error: ${answer.message ?? ""}`), warnings };
    if (answer.status === "exception") {
        const [failing] = tracebackLinesOf(answer.stderr);
        const type = answer.exceptionType ?? "Exception";
        const message = answer.message ?? "";
        // A message that names no setting (an assertion without one, a TypeError on a value left unset) says
        // little without the line that raised it: Python's traceback shows that line, and so does the verdict.
        const namesNone = !/--[a-z0-9]|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/.test(message);
        const at = failing !== undefined && namesNone ? ` ${AT}${failing}\`)` : "";
        const reads = answer.checkReads ? { reads: answer.checkReads } : {};
        return { status: "refused", error: asBox((message ? `${type}: ${message}` : type) + at), warnings, ...reads };
    }
    return { status: "refused", error: `${prog} exited ${answer.exitCode} before starting the server`, warnings };
}

/** A refusal of the preview: the key it is about and the reason. */
export interface VerdictFailure {
    property: string;
    reason: string;
}

/**
 * The stack key a message of SGLang's is about: the first flag it names
 * (`--kv-cache-dtype`, or a ServerArgs field such as `served_model_name`)
 * that the typed config owns, or that an extraArgs element sets; else the
 * owned or extraArgs flag whose value in `argv` the message names (`no_buffer
 * do not support overlap schedule`, `Unknown speculative algorithm name:
 * MTP`, `backend 'triton' provides neither`);
 * else the command line as a whole (`service`). The traceback's line is
 * read only for a message that names nothing (verdictFailures): Python shows
 * one line of a multi-line assertion, which may name one setting of several.
 */
export function verdictKeyOf(message: string, extraArgs: readonly string[], argv: readonly string[] = []): string {
    const word = (v: string) => new RegExp(`(^|[^A-Za-z0-9_])${v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^A-Za-z0-9_])`);
    const extra = extraFlags(extraArgs);
    const valueNamed = Object.entries(flagMap(argv).flags)
        .filter(([flag]) => OWNED_FLAGS[flag] !== undefined || extra.some((f) => f.flag === flag))
        .filter(([, v]) => v.length >= 3 && !/^[\d.]+$/.test(v) && !v.includes("/") && word(v).test(message))
        .map(([flag]) => flag);
    const named = [
        ...[...message.matchAll(/--[a-z0-9][a-z0-9-]*/g)].map((m) => m[0]),
        ...[...message.matchAll(/\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g)].map((m) => `--${m[0].replace(/_/g, "-")}`),
        ...valueNamed,
    ];
    for (const flag of named) {
        const owner = OWNED_FLAGS[flag];
        if (owner !== undefined) return owner.replace(/ \(.*$/, "");
        const given = occurrenceNamed(
            message,
            extra.filter((f) => f.flag === flag),
        );
        if (given) return `service.extraArgs[${given.index}]`;
    }
    return "service";
}

/**
 * Of a flag's occurrences in extraArgs, the one a message is about: the last,
 * the value SGLang runs with (argparse keeps the last of a repeated flag), unless the message
 * quotes a value of an earlier one, as argparse's refusal of that value does
 * (`argument --context-length: invalid human_readable_int value: 'abc'`).
 */
function occurrenceNamed(message: string, occurrences: readonly ExtraFlag[]): ExtraFlag | undefined {
    const quoted = (value: string) => message.includes(`'${value}'`) || message.includes(`"${value}"`);
    return occurrences.slice(0, -1).find((f) => f.values.some(quoted)) ?? occurrences[occurrences.length - 1];
}

/**
 * The stack keys of the settings a refusing check reads (ReleaseVerdict.reads,
 * from the release's source) that the rendered server sets: an owned setting
 * the typed config declares (its flag on the command line), the extraArgs
 * element that sets the option (its last occurrence, the one argparse keeps;
 * an alias or abbreviation counts), a variable of the unit's environment.
 * What the config leaves to SGLang's defaults has no key.
 */
export function readsKeys(reads: readonly string[], request: VerdictRequest, extraArgs: readonly string[]): string[] {
    const table = argparseTable(request.version);
    const optionOf = (flag: string) => (table ? argparseOption(table, flag) : undefined);
    const onCommandLine = Object.keys(flagMap(request.argv).flags);
    const extra = extraFlags(extraArgs);
    const keys: string[] = [];
    for (const read of reads) {
        if (read.startsWith("env:")) {
            const name = read.slice(4);
            if (request.env[name] !== undefined) keys.push(`service.environment.${name}`);
            continue;
        }
        const flag = `--${read.replace(/_/g, "-")}`;
        const option = optionOf(flag);
        const owned = settingOfFlag(flag);
        if (owned && onCommandLine.some((f) => settingOfFlag(f) === owned)) keys.push(owned.key.replace(/ \(.*$/, ""));
        const given = extra.filter((e) => e.flag === flag || (option !== undefined && optionOf(e.flag) === option)).pop();
        if (given) keys.push(`service.extraArgs[${given.index}]`);
    }
    return keys;
}

/**
 * The preview's refusal when the release refuses the rendered server; none
 * when it accepts. Filed under the key its message names (verdictKeyOf; for
 * a message that names none, the line that raised it) and under every
 * setting the refusing check reads that the config sets (readsKeys): one
 * failure per key, the same reason. `service` when there is none.
 */
export function verdictFailures(verdict: ReleaseVerdict, request: VerdictRequest, extraArgs: readonly string[]): VerdictFailure[] {
    if (verdict.status === "ok" || verdict.error === undefined) return [];
    const at = verdict.error.lastIndexOf(` ${AT}`);
    const message = at >= 0 ? verdict.error.slice(0, at) : verdict.error;
    // A message that names no setting (`AssertionError`, a TypeError on a value left unset): the line that raised it does.
    const byMessage = verdictKeyOf(message, extraArgs, request.argv);
    const named = byMessage === "service" && at >= 0 ? verdictKeyOf(verdict.error.slice(at), extraArgs, request.argv) : byMessage;
    const keys = [...new Set([...(named === "service" ? [] : [named]), ...readsKeys(verdict.reads ?? [], request, extraArgs)])];
    const properties = keys.length > 0 ? keys : ["service"];
    const about = keys.length > 0 ? keys.join(" or ") : "the rendered command line";
    const reason =
        `SGLang ${request.version}'s own code refuses the server this config renders (run here with the box's config.json, ` +
        `before anything on the box changes): ${verdict.error}; fix: change ${about} so that SGLang ${request.version} accepts it ` +
        `(\`npm run render\` shows the command line), or declare the sglangVersion that accepts it.`;
    return properties.map((property) => ({ property, reason }));
}

/** One line for the preview when the release accepts: that it does, and what it says it will run. */
export function verdictNotice(verdict: ReleaseVerdict, version: string): string | undefined {
    if (verdict.status !== "ok") return undefined;
    const accepts = `SGLang ${version}'s own code accepts this server`;
    return verdict.warnings.length === 0 ? accepts : `${accepts} and says: ${verdict.warnings.join(" | ")}`;
}
