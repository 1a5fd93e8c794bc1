/**
 * The differential test's machinery: stack configs generated with fast-check
 * (biased to the speculative / mamba / radix / architecture corners), each
 * judged twice: by the stack as its preview judges it (validateStackConfig,
 * then SGLang's own verdict on the rendered unit: core/sglang/verdict.ts, as
 * providers/sglang-server/verdict.ts asks it, with the key it files a refusal under),
 * and by the real SGLang release (sglang-release/oracle.py: the release's own
 * `sglang serve` CLI, ServerArgs and check_server_args, hardware stubbed) on
 * the command line the stack renders. Where the stack's own rules refuse, the
 * release judges the command line rendered without them: the rules must never
 * refuse what the release accepts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { validateStackConfig } from "../../core/config/config";
import type { ServerConfig } from "../../core/config/schema";
import { argparseTable, type ArgparseOption } from "../../core/sglang/argparse";
import { OWNED_FLAGS } from "../../core/sglang/settings";
import { renderArgv } from "../../core/sglang/args";
import { renderUnit } from "../../core/unit/systemd-unit";
import { verdictCase, verdictFailures, verdictOf, VerdictRequest, verdictRequest } from "../../core/sglang/verdict";
import { verdictFit } from "../../core/box/resolved-fit";
import { boxExpectations, BoxExpectations } from "../../core/box/box-facts";
import { cudaDevices } from "../../lab/gpu/cuda-visible";
import { fieldConfig, FieldRaw } from "../core/fixtures";
import { OracleResult, runOracle } from "../../sglang-release/oracle";
import { fixtureModelPath } from "../../lab/sglang/fixtures";

const QWEN_CONFIG = path.join(fixtureModelPath("qwen3.6-27b"), "config.json");
const MOE_CONFIG = path.join(fixtureModelPath("qwen3-30b-a3b"), "config.json");
/** The MoE the generator draws for the offload cases: Qwen3-30B-A3B, 61 GB in BF16. */
const MOE_ARCHITECTURE = "Qwen3MoeForCausalLM";

/**
 * Architectures of the branches of SGLang's hybrid-model handling, and plain
 * ones. Not here: KimiLinear and BailingMoeV2_5 (SGLang serves them without a
 * radix cache, 2138-2142), whose config classes need fields (MLA, rope
 * parameters) a re-labelled Qwen config.json does not have; that branch is
 * tested in tests/core/sglang-server-args.test.ts.
 */
export const ARCHITECTURES = [
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3NextForCausalLM",
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
    "JetNemotronForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "Lfm2ForCausalLM",
    "Qwen3ForCausalLM",
    "LlamaForCausalLM",
] as const;

/** A folder per architecture with a config.json SGLang reads (the Qwen3.6-27B one, re-labelled; Granite with mamba layers). */
export function modelFolders(root: string): Record<string, string> {
    const base = JSON.parse(fs.readFileSync(QWEN_CONFIG, "utf8")) as Record<string, unknown>;
    const out: Record<string, string> = {};
    for (const arch of ARCHITECTURES) {
        const dir = path.join(root, arch);
        fs.mkdirSync(dir, { recursive: true });
        const config: Record<string, unknown> = { ...base, architectures: [arch] };
        if (arch === "GraniteMoeHybridForCausalLM") config.layer_types = ["mamba", "attention", "mamba", "attention"];
        fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config, null, 2));
        out[arch] = dir;
    }
    const moe = path.join(root, MOE_ARCHITECTURE);
    fs.mkdirSync(moe, { recursive: true });
    fs.copyFileSync(MOE_CONFIG, path.join(moe, "config.json"));
    out[MOE_ARCHITECTURE] = moe;
    const drafter = path.join(root, "drafter");
    fs.mkdirSync(drafter, { recursive: true });
    fs.writeFileSync(path.join(drafter, "config.json"), JSON.stringify({ ...base, architectures: ["Qwen3_5ForConditionalGeneration"] }, null, 2));
    out.drafter = drafter;
    return out;
}

export interface Case {
    service: Record<string, unknown>;
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });

/**
 * Flags of real launch commands (issue 18's survey: SGLang's docs and
 * cookbook, model cards), as written there: some a release has, some it
 * refuses (a choice it lacks, a flag it renamed or never had), some
 * ServerArgs refuses (a context length above the model's 262,144 tokens).
 */
const REAL_COMMAND_FLAGS: readonly (readonly string[])[] = [
    ["--reasoning-parser", "qwen3"],
    ["--tool-call-parser", "qwen3_coder"],
    ["--trust-remote-code"],
    ["--enable-metrics"],
    ["--cuda-graph-bs", "1", "2", "4", "8"],
    ["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'],
    ["--context-length", "32768"],
    ["--context-length", "300000"],
    ["--kv-cache-dtype", "fp8_e4m3"],
    ["--chunked-prefill-size", "4096"],
    ["--attention-backend", "triton"],
    ["--enable-ep-moe"],
    ["--disable-log-requests"],
    ["--kv-cache-dtype=fp9"],
    ["--enable-metrics=true"],
];

/** The release's own options a generated extraArgs element may use: not owned by the typed config, not one that ends argparse (help, version). */
function extraOptions(version: string): ArgparseOption[] {
    const table = argparseTable(version);
    if (!table) throw new Error(`no argparse table for SGLang ${version}`);
    return table.options.filter(
        (o) =>
            o.flags[0]!.startsWith("--") &&
            !o.flags.some((f) => f in OWNED_FLAGS || Object.keys(OWNED_FLAGS).some((owned) => owned.startsWith(f))) &&
            !o.flags.includes("--help") &&
            !o.flags.includes("--version"),
    );
}

/**
 * One extraArgs flag with its values, as separate elements: from real
 * commands, or drawn from the release's own options, mostly the ways argparse
 * refuses (a value outside the choices, a value that is not a number, a
 * value given to a switch, a missing value) and some it takes (a choice).
 */
function extraArgArbitrary(version: string): fc.Arbitrary<string[]> {
    const options = extraOptions(version);
    const oneValue = options.filter((o) => o.nargs === null && !o.append);
    const withChoices = oneValue.filter((o) => (o.choices ?? []).some((c) => typeof c === "string"));
    const numeric = oneValue.filter((o) => (o.type === "int" || o.type === "float") && o.choices === null);
    const switches = options.filter((o) => o.nargs === 0);
    const flag = (o: ArgparseOption) => o.flags.find((f) => f.startsWith("--"))!;
    return fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...REAL_COMMAND_FLAGS).map((a) => [...a]) },
        { weight: 1, arbitrary: fc.constantFrom(...withChoices).map((o) => [flag(o), "not-a-choice"]) },
        { weight: 1, arbitrary: fc.constantFrom(...numeric).map((o) => [flag(o), "many"]) },
        { weight: 1, arbitrary: fc.constantFrom(...switches).map((o) => [`${flag(o)}=true`]) },
        { weight: 1, arbitrary: fc.constantFrom(...oneValue).map((o) => [flag(o)]) },
        {
            weight: 2,
            arbitrary: fc
                .constantFrom(...withChoices)
                .chain((o) => fc.constantFrom(...(o.choices ?? []).filter((c) => typeof c === "string")).map((c) => [flag(o), String(c)])),
        },
    );
}

/**
 * A group given again (issue 37: argparse keeps the last occurrence, and
 * SGLang starts): the group itself, the same flag with another value from the
 * real commands (`--context-length 32768` then `300000`, `--kv-cache-dtype
 * fp8_e4m3` then `=fp9`), or in the other form (`--x v` as `--x=v`).
 */
function repeatsOf(group: readonly string[]): string[][] {
    const [head, ...values] = group;
    const flag = head!.split("=")[0]!;
    if (flag === "--mamba-track-interval") return [2, 8, 256].map((n) => [`${flag}=${n}`]);
    const sameFlag = REAL_COMMAND_FLAGS.filter((a) => a[0]!.split("=")[0] === flag).map((a) => [...a]);
    const otherForm = head!.includes("=") ? [[flag, head!.slice(flag.length + 1)]] : values.length === 1 ? [[`${flag}=${values[0]}`]] : [];
    return [[...group], ...sameFlag, ...otherForm];
}

/** The repeat a case draws: which group, which of its repeats, and whether it goes after the last element or before the first. */
interface RepeatDraw {
    group: number;
    variant: number;
    before: boolean;
}

/**
 * extraArgs groups with one of them given again as `repeat` says: one of the
 * drawn flags, or the track interval where none was drawn (it is in most
 * cases, and would crowd the others out); no repeat without a group.
 */
function withRepeat(track: readonly string[][], drawn: readonly string[][], repeat: RepeatDraw | undefined): string[][] {
    const groups = [...track, ...drawn];
    const from = drawn.length > 0 ? drawn : track;
    if (repeat === undefined || from.length === 0) return groups;
    const repeats = repeatsOf(from[repeat.group % from.length]!);
    const again = repeats[repeat.variant % repeats.length]!;
    return repeat.before ? [again, ...groups] : [...groups, again];
}

/**
 * The boxes a generated server runs on (issue 37): two GPUs of one model each,
 * as host.gpus declares them and nvidia-smi's compute_cap reads them.
 */
export const BOXES = {
    a6000: { name: "NVIDIA RTX A6000", memoryMiB: 49140, computeCapability: "8.6" },
    rtx4090: { name: "NVIDIA GeForce RTX 4090", memoryMiB: 24564, computeCapability: "8.9" },
    h100: { name: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, computeCapability: "9.0" },
} as const;
export type BoxName = keyof typeof BOXES;

/** The box a generated service runs on (not a key of the service section: kept beside it). */
const BOX = Symbol("box");

export function boxOf(service: Record<string, unknown>): (typeof BOXES)[BoxName] {
    return BOXES[((service as Record<symbol, unknown>)[BOX] as BoxName | undefined) ?? "a6000"];
}

/**
 * The corners of issue 37 the fit and the verdict's filing get wrong when
 * they go wrong, one per case at most (most cases none, so that both
 * verdicts stay common): a CUDA_VISIBLE_DEVICES in service.environment (2);
 * the fraction the release picks, memFractionStatic unset, with 18 or 30 GB
 * on a 24 or 48 GB card (3); the GPU's compute capability with the
 * Hopper-only trtllm_mha backend (4); Qwen3-30B-A3B's 61 GB with
 * --cpu-offload-gb or KTransformers' experts in CPU memory (5); pipeline
 * parallelism beside speculative decoding and --disable-overlap-schedule,
 * checks whose messages name no flag (6). Each has draws that fit and draws
 * that do not.
 */
export interface FitDraw {
    box: BoxName;
    visible?: string;
    tp1?: boolean;
    /** Declared weights (GB), or the MoE. */
    model?: number | "moe";
    /** memFractionStatic left to the release. */
    autoFraction?: boolean;
    /** Without speculative decoding. */
    noSpec?: boolean;
    /** On the generated service (its other corners too), not the field's (which every release accepts): the corner alone. */
    onDrawn?: boolean;
    flags: readonly string[];
}

const KT = (gpuExperts: number) => ["--kt-weight-path", "/models/Qwen3-30B-A3B-amx", "--kt-num-gpu-experts", String(gpuExperts), "--kt-cpuinfer", "16"];

const fitArbitrary: fc.Arbitrary<FitDraw> = fc
    .oneof(
        { weight: 14, arbitrary: fc.constant<FitDraw>({ box: "a6000", flags: [] }) },
        {
            weight: 1,
            arbitrary: fc.record({ box: fc.constant<BoxName>("a6000"), visible: fc.constantFrom("1,0", "0,1", "0", "0,0", "0,2"), flags: fc.constant([]) }),
        },
        {
            weight: 1,
            arbitrary: fc.record({
                box: fc.constantFrom<BoxName>("rtx4090", "a6000"),
                tp1: fc.boolean(),
                model: fc.constantFrom(18, 30),
                autoFraction: fc.constant(true),
                flags: fc.constant([]),
            }),
        },
        {
            weight: 1,
            arbitrary: fc.record({
                box: fc.constantFrom<BoxName>("h100", "h100", "a6000"),
                flags: fc.constantFrom<readonly string[]>(["--attention-backend", "trtllm_mha"], []),
            }),
        },
        {
            weight: 1,
            arbitrary: fc.record({
                box: fc.constantFrom<BoxName>("rtx4090", "rtx4090", "rtx4090", "h100"),
                tp1: fc.constant(true),
                model: fc.constant<"moe">("moe"),
                flags: fc.constantFrom<readonly string[]>(KT(8), KT(8), KT(128), ["--cpu-offload-gb", "40"], ["--cpu-offload-gb=45"], []),
            }),
        },
        {
            weight: 1,
            arbitrary: fc.record({
                box: fc.constant<BoxName>("a6000"),
                tp1: fc.constant(true),
                noSpec: fc.boolean(),
                flags: fc.constantFrom<readonly string[]>(["--pp-size", "2"], ["--pp-size", "2", "--disable-overlap-schedule"], ["--disable-overlap-schedule"]),
            }),
        },
    )
    .chain((fit: FitDraw) =>
        // A corner goes on the field's service twice in three cases (its refusals are the corner's own), else on the drawn one.
        fit.flags.length === 0 && fit.box === "a6000" && fit.visible === undefined
            ? fc.constant(fit)
            : fc.oneof({ weight: 2, arbitrary: fc.constant(fit) }, { weight: 1, arbitrary: fc.constant({ ...fit, onDrawn: true }) }),
    );

/** A fit draw on a generated service: the box beside it, the service's keys it changes. */
function withFit(drawn: Record<string, unknown>, fit: FitDraw): Record<string, unknown> {
    const corner = fit.box !== "a6000" || fit.visible !== undefined || fit.tp1 === true || fit.model !== undefined || fit.flags.length > 0;
    const service =
        corner && !fit.onDrawn
            ? { ...(structuredClone(fieldConfig().service) as unknown as Record<string, unknown>), sglangVersion: drawn.sglangVersion, extraArgs: [] }
            : drawn;
    (service as Record<symbol, unknown>)[BOX] = fit.box;
    if (fit.noSpec) delete service.speculative;
    if (fit.visible !== undefined) service.environment = { ...(service.environment as object), CUDA_VISIBLE_DEVICES: fit.visible };
    if (fit.tp1) service.tensorParallelSize = 1;
    if (fit.autoFraction) delete service.memFractionStatic;
    const model = service.model as Record<string, unknown>;
    if (fit.model === "moe") {
        service.model = { ...model, path: "/models/Qwen3-30B-A3B", architecture: MOE_ARCHITECTURE, weightsGB: 61, servedName: model.servedName };
    } else if (fit.model !== undefined) service.model = { ...model, weightsGB: fit.model };
    // A drawn flag the service gives already (an extraArgs draw of the same option) is left to it: a repeat is another draw's corner.
    const given = new Set((service.extraArgs as string[]).filter((a) => a.startsWith("--")).map((a) => a.split("=")[0]!));
    const groups: string[][] = [];
    for (const a of fit.flags) {
        if (a.startsWith("--")) groups.push([a]);
        else groups[groups.length - 1]!.push(a);
    }
    service.extraArgs = [...(service.extraArgs as string[]), ...groups.filter((g) => !given.has(g[0]!.split("=")[0]!)).flat()];
    return service;
}

/** Service sections over the corners SGLang judges; everything else as the field config has it. */
export function serviceArbitrary(version: string): fc.Arbitrary<Record<string, unknown>> {
    const algorithm = fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom("NEXTN", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM", "DFLASH") },
        { weight: 1, arbitrary: fc.constantFrom("MTP", "nextn", "MEDUSA") },
    );
    const speculative = fc.record(
        {
            algorithm,
            draftModelPath: maybe(fc.constant("/models/drafter")),
            numSteps: maybe(fc.constantFrom(1, 2, 3, 5)),
            eagleTopk: maybe(fc.constantFrom(1, 2, 4)),
            numDraftTokens: maybe(fc.constantFrom(2, 3, 4, 6, 16, 300)),
        },
        { requiredKeys: ["algorithm"] },
    );
    return fc
        .record({
            architecture: fc.constantFrom(...ARCHITECTURES),
            speculative: fc.option(speculative, { nil: undefined, freq: 6 }),
            mambaSchedulerStrategy: maybe(fc.constantFrom("auto", "no_buffer", "extra_buffer")),
            disableRadixCache: fc.boolean(),
            specV2: maybe(fc.constantFrom("1", "0", "true", "false")),
            trackInterval: fc.option(fc.constantFrom(2, 8, 256), { nil: undefined, freq: 4 }),
            maxRunningRequests: fc.option(fc.constantFrom(8, 64), { nil: undefined, freq: 4 }),
            // Each flag once here; `repeat` gives one again.
            extraArgs: fc.oneof(
                { weight: 2, arbitrary: fc.constant([]) },
                { weight: 1, arbitrary: fc.uniqueArray(extraArgArbitrary(version), { minLength: 1, maxLength: 2, selector: (a) => a[0]!.split("=")[0]! }) },
            ),
            servedName: fc.oneof({ weight: 9, arbitrary: fc.constant("qwen3.6-27b") }, { weight: 1, arbitrary: fc.constant("qwen3.6:27b") }),
            port: fc.constantFrom(30000, 8000, 40123),
            // What fits is the stack's fit rule's to judge (SGLang's own check is at weight loading, past the oracle): values that fit.
            memFractionStatic: fc.option(fc.constantFrom(0.7, 0.85, 0.93), { nil: undefined, freq: 3 }),
            // Last, so that the keys above draw what they drew before it was added (fast-check draws a record's keys in order).
            repeat: fc.oneof(
                { weight: 3, arbitrary: fc.constant(undefined) },
                { weight: 1, arbitrary: fc.record({ group: fc.nat(7), variant: fc.nat(7), before: fc.boolean() }) },
            ),
            // Issue 37's corners, after the repeat for the same reason.
            fit: fitArbitrary,
        })
        .map((g) => {
            const field = fieldConfig().service as Record<string, unknown>;
            const service: Record<string, unknown> = {
                ...field,
                sglangVersion: version,
                model: { ...(field.model as object), architecture: g.architecture, servedName: g.servedName },
                port: g.port,
                disableRadixCache: g.disableRadixCache,
                environment: g.specV2 === undefined ? {} : { SGLANG_ENABLE_SPEC_V2: g.specV2 },
                extraArgs: withRepeat(g.trackInterval === undefined ? [] : [[`--mamba-track-interval=${g.trackInterval}`]], g.extraArgs, g.repeat).flat(),
            };
            if (g.speculative) service.speculative = Object.fromEntries(Object.entries(g.speculative).filter(([, v]) => v !== undefined));
            else delete service.speculative;
            if (g.mambaSchedulerStrategy) service.mambaSchedulerStrategy = g.mambaSchedulerStrategy;
            else delete service.mambaSchedulerStrategy;
            if (g.maxRunningRequests !== undefined) service.maxRunningRequests = g.maxRunningRequests;
            if (g.memFractionStatic !== undefined) service.memFractionStatic = g.memFractionStatic;
            else delete service.memFractionStatic;
            return withFit(service, g.fit);
        });
}

/** Config keys whose problems are SGLang's to judge (the rest of the schema is the stack's own business). */
const SGLANG_KEYS =
    /^service\.(speculative|mambaSchedulerStrategy|disableRadixCache|environment\.SGLANG_ENABLE_SPEC_V2|extraArgs|model\.servedName|tensorParallelSize)/;

export interface StackVerdict {
    /** The stack's own rules and, where they accept, SGLang's verdict (after runDifferential asked it). */
    accepted: boolean;
    /** How the rendered command starts the server: `sglang serve`, or `python -m sglang.launch_server` (before 0.5.10). */
    entry?: "sglang-serve" | "launch-server";
    keys: string[];
    /** Problems outside what SGLang judges: the case is outside the comparison's domain. */
    otherKeys: string[];
    argv?: string[];
    /** Where the rules accept: what the preview asks the release, the local stand-ins of the box's folders, and what the server expects of the box (the fit). */
    verdict?: { request: VerdictRequest; standIns: { model: string; drafter: string }; extraArgs: string[]; expect: BoxExpectations };
    /** Where the rules refuse for the fit alone (GPUs, memory): what the preview asks the release once that is fixed. */
    fitFirst?: NonNullable<StackVerdict["verdict"]>;
}

/** The stack's own rules on the service; where they accept, the request the preview sends to the release. */
export function stackVerdict(service: Record<string, unknown>, folders: Record<string, string>): StackVerdict {
    const raw = fieldConfig() as FieldRaw & Record<string, unknown>;
    (raw as Record<string, unknown>).service = service;
    const box = boxOf(service);
    raw.host.gpus = { count: 2, name: box.name, memoryMiB: box.memoryMiB };
    const result = validateStackConfig(raw);
    if (!result.ok) {
        const keys = result.issues.map((i) => i.path);
        const refused = { accepted: false, keys: keys.filter((k) => SGLANG_KEYS.test(k)), otherKeys: keys.filter((k) => !SGLANG_KEYS.test(k)) };
        // Refused by the fit alone (the config passes on a box with GPUs enough and to spare)? Then what the preview asks
        // the release next, once the fit is fixed, is this command line: kept to compare with what the release says first.
        const roomy = structuredClone(raw);
        roomy.host.gpus = { count: 16, name: box.name, memoryMiB: 10_000_000 };
        roomy.container.gpus = Array.from({ length: 16 }, (_, i) => i);
        const visible = (service.environment as Record<string, string> | undefined)?.CUDA_VISIBLE_DEVICES;
        const { CUDA_VISIBLE_DEVICES: _, ...environment } = (service.environment as Record<string, string> | undefined) ?? {};
        (roomy as Record<string, unknown>).service = { ...service, environment };
        const relaxed = validateStackConfig(roomy);
        if (!relaxed.ok) return refused;
        const next = askRelease(relaxed.config.servers[0]!, box, folders).verdict;
        // The same command line, with the GPUs the unit really gives it.
        if (visible !== undefined) next.request.env = { ...next.request.env, CUDA_VISIBLE_DEVICES: visible };
        return { ...refused, fitFirst: next };
    }
    return askRelease(result.config.servers[0]!, box, folders);
}

/** What the preview asks the release for a server the rules accept, on the drawn box. */
function askRelease(
    server: ServerConfig,
    box: (typeof BOXES)[BoxName],
    folders: Record<string, string>,
): StackVerdict & { verdict: NonNullable<StackVerdict["verdict"]> } {
    const argv = renderArgv(server);
    const arch = server.model.architecture ?? "";
    const entry = argv.includes("sglang.launch_server") ? "launch-server" : "sglang-serve";
    const standIns = { model: folders[arch]!, drafter: folders.drafter! };
    const request = verdictRequest({
        version: server.sglangVersion,
        unitText: renderUnit(server, { hasSecrets: true }),
        gpus: { count: 2, memoryMiB: box.memoryMiB, name: box.name, computeCapability: box.computeCapability },
        modelConfigJson: fs.readFileSync(path.join(standIns.model, "config.json"), "utf8"),
        drafterConfigJson: fs.readFileSync(path.join(standIns.drafter, "config.json"), "utf8"),
    });
    if ("unavailable" in request) throw new Error(`no verdict request for ${JSON.stringify(server)}: ${request.unavailable}`);
    return {
        accepted: true,
        entry,
        keys: [],
        otherKeys: [],
        argv: localPaths(argv, server.model.path, standIns.model, standIns.drafter),
        verdict: { request, standIns, extraArgs: server.extraArgs, expect: boxExpectations(server, box.memoryMiB) },
    };
}

/** The rendered flags with the box's model folders replaced by local ones with the same config.json. */
function localPaths(rendered: string[], modelPath: string, modelDir: string, drafterDir: string): string[] {
    // The flags after the launcher (`<venv>/bin/sglang serve` or `<python> -m sglang.launch_server`).
    const argv = rendered.slice(rendered.findIndex((a) => a.startsWith("--")));
    return argv.map((a) => (a === modelPath ? modelDir : a === "/models/drafter" ? drafterDir : a));
}

/**
 * The extraArgs elements an SGLang message names: the elements of a flag
 * (the flag's, its values') the message names as `--flag`, as its ServerArgs
 * field (`context_length`), or by a value of it (`backend 'triton'`; words of
 * three letters or more, not numbers or paths).
 */
function extraArgsNamed(message: string, extraArgs: readonly string[]): string[] {
    const word = (w: string) => new RegExp(`(^|[^A-Za-z0-9_-])${w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^A-Za-z0-9_-])`);
    const groups: { flag: string; indices: number[]; values: string[] }[] = [];
    extraArgs.forEach((element, i) => {
        if (element.startsWith("--")) {
            const eq = element.indexOf("=");
            groups.push({ flag: eq === -1 ? element : element.slice(0, eq), indices: [i], values: eq === -1 ? [] : [element.slice(eq + 1)] });
        } else if (groups.length > 0) {
            groups[groups.length - 1]!.indices.push(i);
            groups[groups.length - 1]!.values.push(element);
        }
    });
    return groups
        .filter(
            (g) =>
                word(g.flag).test(message) ||
                word(g.flag.slice(2).replace(/-/g, "_")).test(message) ||
                g.values.some((v) => v.length >= 3 && !/^[\d.]+$/.test(v) && !v.includes("/") && word(v).test(message)),
        )
        .flatMap((g) => g.indices.map((i) => `service.extraArgs[${i}]`));
}

/** The config keys a real SGLang error is about (any of them counts as the stack naming it). */
export function keysOfSglangError(r: OracleResult, extraArgs: readonly string[]): string[] {
    const text = `${r.exceptionType ?? ""}: ${r.message ?? ""} ${r.stderr ?? ""}`;
    const message = `${r.exceptionType ?? ""}: ${r.message ?? ""}`;
    if (r.status === "argparse-error") {
        // The message, not stderr: argparse's usage line there lists every option.
        if (/--speculative-algorithm/.test(message)) return ["service.speculative.algorithm"];
        if (/--mamba-(scheduler|radix-cache)-strategy/.test(message)) return ["service.mambaSchedulerStrategy"];
        const named = extraArgsNamed(r.message ?? "", extraArgs);
        return named.length > 0 ? named : ["(argparse)"];
    }
    if (/served_model_name cannot contain a colon/.test(text)) return ["service.model.servedName"];
    if (/is not compatible with radix cache|extra_buffer is not supported|extra_buffer is not compatible with --disable-radix-cache/.test(text)) {
        return ["service.mambaSchedulerStrategy", "service.disableRadixCache"];
    }
    // 0.5.23 asserts it without a message; the traceback shows the assertion.
    if (/mamba_track_interval \d+ must be greater|assert view\.mamba_track_interval >= view\.speculative_num_draft_tokens/.test(text)) {
        // The last of a repeated flag is the one SGLang judged.
        const last = extraArgs.map((a, i) => (a.startsWith("--mamba-track-interval") ? i : -1)).reduce((a, b) => Math.max(a, b), -1);
        return ["service.speculative.numDraftTokens", `service.extraArgs[${last}]`];
    }
    if (/no_buffer do not support overlap schedule|--mamba-radix-cache-strategy extra_buffer needs mamba state/.test(text))
        return ["service.mambaSchedulerStrategy"];
    // Issue 37: checks whose messages name no flag, keyed by what they read (the test's own reading of the releases' source).
    // 0.5.9-0.5.11 check_server_args: `if self.pp_size > 1: assert self.disable_overlap_schedule and self.speculative_algorithm is None`;
    // 0.5.23 arg_groups/validation_hook.py: `if cfg.pp_size > 1: check_pipeline_parallel_compat(cfg)`, which asserts
    // disable_overlap_schedule and, with an algorithm, EAGLE on prefill nodes only.
    const every = everyKeyOf(r, extraArgs);
    if (every.length > 0) return every;
    // 0.5.23 checks the algorithm's name in ServerArgs, older releases in argparse's choices.
    if (/Unknown speculative algorithm name/.test(text)) return ["service.speculative.algorithm"];
    if (/DFLASH speculative decoding requires/.test(text)) return ["service.speculative.draftModelPath"];
    if (/Spec v2 currently only supports topk/.test(text)) return ["service.speculative.eagleTopk", "service.environment.SGLANG_ENABLE_SPEC_V2"];
    if (r.exceptionType === "TypeError" && /NoneType/.test(text)) return ["service.speculative.eagleTopk"];
    // 0.5.23: without numSteps, topk and draft tokens must be left unset too (SGLang chooses all three); the
    // assertion shows one line of the three settings' condition.
    if (
        r.exceptionType === "AssertionError" &&
        (r.message ?? "") === "" &&
        /in _handle_eagle_family\s+and cfg\.speculative_num_draft_tokens is None/.test(text)
    ) {
        return ["service.speculative.numSteps", "service.speculative.eagleTopk", "service.speculative.numDraftTokens"];
    }
    if (r.exceptionType === "AssertionError" && (r.message ?? "") === "") return ["service.speculative.numSteps"];
    const named = extraArgsNamed(message, extraArgs);
    if (named.length > 0) return named;
    // Past the cases above, a message that names no setting (`TRTLLM MHA backend for prefill is only supported on
    // Blackwell GPUs`) is about the command line as a whole, the key the preview files it under (core/sglang/verdict.ts).
    if (!/--[a-z0-9]|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/.test(r.message ?? "")) return ["service"];
    return [`(unmapped: ${r.exceptionType}: ${(r.message ?? "").slice(0, 120)})`];
}

/** The extraArgs elements that give any of `flags` (the last occurrence of each, the one argparse keeps), as keys. */
function elementsOf(extraArgs: readonly string[], flags: readonly string[]): string[] {
    return flags
        .map((flag) => extraArgs.map((a, i) => (a === flag || a.startsWith(`${flag}=`) ? i : -1)).reduce((a, b) => Math.max(a, b), -1))
        .filter((i) => i >= 0)
        .map((i) => `service.extraArgs[${i}]`);
}

/**
 * Qwen3-30B-A3B's routed experts over all its parameters: 48 MoE layers x
 * 128 experts x 3 x 2048 x 768 = 28.99 B of the 30.53 B its model card and
 * safetensors index give.
 */
const MOE_EXPERT_SHARE = 28.99 / 30.53;

/** The fit rule's floor for the KV cache and Mamba state (core/box/config-rules.ts STATIC_POOL_RESERVE_GIB): its premise, which this test does not judge. */
const RESERVE_GIB = 2;

/**
 * Whether the server the release resolved (its ServerArgs, the oracle's
 * `ok`) starts on the drawn box: the test's own reading of SGLang's start
 * past where the oracle stops. Every rank needs a GPU of its own
 * (tp x pp x dp, dp attention sharing them) among those CUDA gives the
 * process (lab/gpu/cuda-visible.ts, the lab's reading of
 * CUDA_VISIBLE_DEVICES); else torch's "invalid device ordinal", as the lab's
 * simulator says. The static pool is --mem-fraction-static of a GPU as the
 * release resolved it; the weights a GPU holds are the drawn model's over
 * tp x pp, halved by online 8-bit quantization, less the resolved
 * --cpu-offload-gb and the experts KTransformers keeps in CPU memory (its
 * resolved kt_num_gpu_experts of 128 on the GPU); they must leave the
 * reserve, else "Not enough memory".
 */
export function startFailure(service: Record<string, unknown>, r: OracleResult): { message: string; keys: string[] } | undefined {
    const a = r.serverArgs;
    if (r.status !== "ok" || !a) return undefined;
    const box = boxOf(service);
    const extraArgs = (service.extraArgs as string[]) ?? [];
    const env = (service.environment as Record<string, string> | undefined) ?? {};
    const num = (k: string, otherwise: number) => (typeof a[k] === "number" ? (a[k] as number) : otherwise);
    const devices = cudaDevices(
        [0, 1].map((index) => ({ index, uuid: `GPU-${index}` })),
        env.CUDA_VISIBLE_DEVICES,
    ).length;
    const tp = num("tp_size", 1);
    const pp = num("pp_size", 1);
    const ranks = tp * pp * (a.enable_dp_attention === true ? 1 : num("dp_size", 1));
    if (ranks > devices) {
        return {
            message: "RuntimeError: CUDA error: invalid device ordinal",
            keys: ["service.tensorParallelSize", ...elementsOf(extraArgs, ["--pp-size", "--pipeline-parallel-size", "--dp-size", "--data-parallel-size"])],
        };
    }
    const model = service.model as { weightsGB: number };
    const online8bit = ["fp8", "w8a8_fp8", "w8a8_int8"].includes(String(a.quantization));
    // KTransformers offloads experts: the MoE's, none of a dense model's.
    const moe = (service.model as { architecture?: string }).architecture === MOE_ARCHITECTURE;
    const kt = moe && a.kt_weight_path !== null && a.kt_weight_path !== undefined && typeof a.kt_num_gpu_experts === "number";
    const onCpu = kt ? MOE_EXPERT_SHARE * Math.max(0, 1 - (a.kt_num_gpu_experts as number) / 128) : 0;
    const weightsGiB = (model.weightsGB * 1e9 * (online8bit ? 0.5 : 1) * (1 - onCpu)) / (tp * pp) / 2 ** 30 - num("cpu_offload_gb", 0);
    const poolGiB = (num("mem_fraction_static", 0) * box.memoryMiB) / 1024;
    if (Math.max(0, weightsGiB) + RESERVE_GIB > poolGiB) {
        return {
            message: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            keys: ["service.tensorParallelSize", "service.memFractionStatic", "service.model.weightsGB"],
        };
    }
    return undefined;
}

/** The oracle's run of a command line the rules refused: on the drawn box's GPUs, with the service's environment. */
function truthCase(service: Record<string, unknown>, argv: string[], entry: "sglang-serve" | "launch-server") {
    const box = boxOf(service);
    return {
        argv,
        entry,
        env: { ...((service.environment as Record<string, string>) ?? {}), SGLANG_LAB_GPU_NAME: box.name, SGLANG_LAB_GPU_CAPABILITY: box.computeCapability },
        gpuCount: 2,
        gpuMemoryMiB: box.memoryMiB,
    };
}

/**
 * For the checks issue 37 is about, whose messages name no flag: every key
 * the refusal must be filed under, the settings the check reads that the
 * config sets (the test's own reading of the releases' source, below); a
 * stack that names only some of them disagrees. Empty for other errors.
 */
export function everyKeyOf(r: OracleResult, extraArgs: readonly string[]): string[] {
    const text = `${r.exceptionType ?? ""}: ${r.message ?? ""}`;
    // 0.5.9-0.5.11 check_server_args: `if self.pp_size > 1: assert self.disable_overlap_schedule and self.speculative_algorithm is None`;
    // 0.5.23 arg_groups/validation_hook.py: `if cfg.pp_size > 1: check_pipeline_parallel_compat(cfg)`, which asserts
    // disable_overlap_schedule and, with an algorithm, EAGLE on prefill nodes only (the algorithm, the disaggregation mode).
    if (/Pipeline parallelism is not compatible with overlap schedule, speculative decoding/.test(text)) {
        return [...elementsOf(extraArgs, ["--pp-size", "--pipeline-parallel-size", "--disable-overlap-schedule"]), "service.speculative.algorithm"];
    }
    if (/PP \+ speculative decoding|Pipeline parallelism currently only supports EAGLE/.test(text)) {
        return [...elementsOf(extraArgs, ["--pp-size", "--pipeline-parallel-size"]), "service.speculative.algorithm"];
    }
    if (/Pipeline parallelism is not compatible with overlap schedule/.test(text)) return elementsOf(extraArgs, ["--pp-size", "--pipeline-parallel-size"]);
    // attention_hook.py (0.5.23) and server_args.py (0.5.9-0.5.11): `prefill_backend, decode_backend = attention_backends_of(...)`
    // (or the fields themselves), which read --attention-backend and the prefill and decode ones; the GPU's capability is no setting.
    if (/TRTLLM MHA backend/.test(text)) return elementsOf(extraArgs, ["--attention-backend", "--prefill-attention-backend", "--decode-attention-backend"]);
    return [];
}

export interface Disagreement {
    service: Record<string, unknown>;
    stack: StackVerdict;
    sglang: OracleResult;
}

export interface DifferentialResult {
    version: string;
    cases: number;
    compared: number;
    outOfDomain: number;
    agreed: number;
    acceptedBoth: number;
    rejectedBoth: number;
    /**
     * Of rejectedBoth: the stack's own rules refused, and SGLang's ServerArgs
     * refused first an extraArgs setting (the rules replay only the release's
     * argparse for extraArgs; its ServerArgs checks, such as a context length
     * above the model's, are the verdict's, asked where the rules accept). The
     * key was compared on the command line without those extraArgs, which is
     * what the preview judges next once the rules' problems are fixed.
     */
    rejectedBothExtraArgsFirst: number;
    /** Of rejectedBoth: the release's code accepts, and the server it resolves cannot start on the box (startFailure: its GPUs, its memory). */
    rejectedBothAtStart: number;
    /**
     * Of rejectedBoth: the rules refused the fit alone, and the release's code
     * refuses something else first; the key was compared on the preview's
     * next verdict, SGLang's own on the same command line once the fit is fixed.
     */
    rejectedBothFitFirst: number;
    disagreements: Disagreement[];
}

/** A service's extraArgs the stack's own rules judge beyond argparse: the mamba track interval (core/config/rules.ts). */
function rulesJudgedExtraArgs(extraArgs: readonly string[]): string[] {
    return extraArgs.filter((a) => a.startsWith("--mamba-track-interval"));
}

export async function runDifferential(
    version: string,
    count: number,
    seed: number,
    root = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-diff-")),
): Promise<DifferentialResult> {
    const folders = modelFolders(root);
    const services = fc.sample(serviceArbitrary(version), { numRuns: count, seed });
    const judged = services.map((service) => ({ service, stack: stackVerdict(service, folders) }));
    const inDomain = judged.filter((j) => j.stack.otherKeys.length === 0);
    // What the stack refused is still run through SGLang: on the argv it would render without the rules.
    const entry = inDomain.find((j) => j.stack.entry)?.stack.entry ?? "sglang-serve";
    // Where the rules accept, one run answers both: it is the preview's verdict, and the release's judgement of the command line.
    const cases = inDomain.map((j) => {
        const asked = j.stack.verdict ?? j.stack.fitFirst;
        return asked ? verdictCase(asked.request, asked.standIns) : truthCase(j.service, unvalidatedArgv(j.service, folders), j.stack.entry ?? entry);
    });
    // On a box other than the stubs' own (the A6000), the release's judgement comes from a run of its own with the box's
    // hardware as this test describes it (BOXES), not the request's: a request that lost the GPU's memory or compute
    // capability on the way is judged against the box it does not describe. Those runs go in the same oracle run.
    const onOtherBox = inDomain.flatMap((j, i) => {
        const ran = j.stack.verdict ?? j.stack.fitFirst;
        const box = boxOf(j.service);
        if (!ran || box === BOXES.a6000) return [];
        const c = verdictCase(ran.request, ran.standIns);
        const { SGLANG_LAB_GPU_NAME: _n, SGLANG_LAB_GPU_CAPABILITY: _c, ...env } = c.env ?? {};
        return [
            {
                i,
                case: {
                    ...c,
                    env: { ...env, SGLANG_LAB_GPU_NAME: box.name, SGLANG_LAB_GPU_CAPABILITY: box.computeCapability },
                    gpuCount: 2,
                    gpuMemoryMiB: box.memoryMiB,
                },
            },
        ];
    });
    const answers = await runOracle(version, [...cases, ...onOtherBox.map((o) => o.case)]);
    const asked = answers.slice(0, cases.length);
    const ownRuns = answers.slice(cases.length);
    const truthOf = new Map(onOtherBox.map((o, n) => [o.i, ownRuns[n]!]));
    /** The release's judgement of case i (its own run on another box), and the run the preview's verdict is (`asked`). */
    const results = asked.map((r, i) => truthOf.get(i) ?? r);
    // Refused by the rules, and by SGLang's ServerArgs first for a setting of extraArgs: judged again without them.
    const extraArgsFirst = inDomain.flatMap((j, i) => {
        const r = results[i]!;
        const extraArgs = (j.service.extraArgs as string[]) ?? [];
        const judged = rulesJudgedExtraArgs(extraArgs);
        if (j.stack.verdict || j.stack.fitFirst || r.status !== "exception" || judged.length === extraArgs.length) return [];
        if (keysOfSglangError(r, extraArgs).some((k) => j.stack.keys.includes(k))) return [];
        const service = { ...j.service, extraArgs: judged };
        return [
            {
                i,
                extraArgs: judged,
                case: truthCase(service, unvalidatedArgv(service, folders), j.stack.entry ?? entry),
            },
        ];
    });
    const without =
        extraArgsFirst.length > 0
            ? await runOracle(
                  version,
                  extraArgsFirst.map((e) => e.case),
              )
            : [];
    const judgedWithout = new Map(extraArgsFirst.map((e, n) => [e.i, { result: without[n]!, extraArgs: e.extraArgs }]));
    inDomain.forEach((j, i) => {
        const v = j.stack.verdict;
        if (!v) return;
        const verdict = verdictOf(asked[i]!, v.request, v.standIns);
        const refusals = verdictFailures(verdict, v.request, v.extraArgs);
        // As the preview: where the release accepts, the fit with what it resolved (core/box/resolved-fit.ts).
        const failures = refusals.length > 0 ? refusals : verdictFit(verdict, v.request, v.expect, { configJson: v.request.model.configJson });
        j.stack.accepted = failures.length === 0;
        j.stack.keys = failures.map((f) => f.property);
    });
    const result: DifferentialResult = {
        version,
        cases: count,
        compared: inDomain.length,
        outOfDomain: count - inDomain.length,
        agreed: 0,
        acceptedBoth: 0,
        rejectedBoth: 0,
        rejectedBothExtraArgsFirst: 0,
        rejectedBothAtStart: 0,
        rejectedBothFitFirst: 0,
        disagreements: [],
    };
    inDomain.forEach((j, i) => {
        const r = results[i]!;
        // Past the oracle: whether what the release resolved starts on the box.
        const start = startFailure(j.service, r);
        const sglangAccepts = r.status === "ok" && start === undefined;
        let agree = sglangAccepts === j.stack.accepted;
        const again = judgedWithout.get(i);
        if (agree && again) {
            agree = again.result.status !== "ok" && keysOfSglangError(again.result, again.extraArgs).some((k) => j.stack.keys.includes(k));
            if (agree) result.rejectedBothExtraArgsFirst++;
        } else if (agree && start) {
            agree = start.keys.some((k) => j.stack.keys.includes(k));
            if (agree) result.rejectedBothAtStart++;
        } else if (agree && !sglangAccepts && j.stack.fitFirst) {
            // The rules refused the fit; the release's code refuses something else first: the key of what the preview says
            // next, once the fit is fixed (SGLang's verdict on this command line), or the fit's key, names what SGLang's error is about.
            const next = verdictFailures(
                verdictOf(asked[i]!, j.stack.fitFirst.request, j.stack.fitFirst.standIns),
                j.stack.fitFirst.request,
                j.stack.fitFirst.extraArgs,
            );
            const keys = [...j.stack.keys, ...next.map((f) => f.property)];
            agree = keysOfSglangError(r, (j.service.extraArgs as string[]) ?? []).some((k) => keys.includes(k));
            if (agree && !keysOfSglangError(r, (j.service.extraArgs as string[]) ?? []).some((k) => j.stack.keys.includes(k))) result.rejectedBothFitFirst++;
        } else if (agree && !sglangAccepts) {
            const extraArgs = (j.service.extraArgs as string[]) ?? [];
            agree = keysOfSglangError(r, extraArgs).some((k) => j.stack.keys.includes(k));
            // Where the preview's key is SGLang's verdict's, the checks whose messages name no flag: under every setting they read.
            if (agree && j.stack.verdict) agree = everyKeyOf(r, extraArgs).every((k) => j.stack.keys.includes(k));
        }
        if (agree) {
            result.agreed++;
            if (sglangAccepts) result.acceptedBoth++;
            else result.rejectedBoth++;
        } else result.disagreements.push({ service: j.service, stack: j.stack, sglang: r });
    });
    return result;
}

/** The command line for a service the rules refuse: rendered from the schema-valid config with the SGLang rules skipped. */
function unvalidatedArgv(service: Record<string, unknown>, folders: Record<string, string>): string[] {
    const argv = renderArgv({ ...service, launcher: "serve" } as never);
    const model = service.model as { path: string; architecture: string };
    return localPaths(argv, model.path, folders[model.architecture]!, folders.drafter!);
}
