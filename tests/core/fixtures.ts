/**
 * Shared test material for the core tests: the field's working config as raw
 * stack config, generators of valid service configs for property tests, and
 * `systemd-analyze verify` in a throwaway root.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import * as yaml from "js-yaml";
import { CONFIG_NAMESPACE } from "../../core/config/namespace";
import { ServiceConfig, ServiceSchema, SpeculativeConfig } from "../../core/config/schema";
import { isRecord } from "../../core/is-record";
import { OWNED_FLAGS } from "../../core/sglang/settings";

const repo = path.join(__dirname, "..", "..");

/**
 * A committed stack file's settings: its `config:` map (namespaced keys)
 * without `secure:` values. The files are committed without secrets, but a
 * checkout where an operator set them (docs/secrets.md) holds ciphertext
 * under that stack's own salt, which no test can read.
 */
export function committedStackSettings(stack: string): Record<string, unknown> {
    const doc = yaml.load(fs.readFileSync(path.join(repo, `Pulumi.${stack}.yaml`), "utf8")) as { config?: Record<string, unknown> };
    return Object.fromEntries(Object.entries(doc.config ?? {}).filter(([, v]) => !(isRecord(v) && "secure" in v)));
}

/** The raw config sections, as validateStackConfig takes them (editable in tests; the values come from a stack file). */
export interface FieldRaw {
    host: {
        name: string;
        address: string;
        port?: number;
        user?: string;
        hostKey: string;
        topology: string;
        sshPrivateKeyPath?: string;
        gpus: { count: number; name: string; memoryMiB: number };
    };
    container: { vmid: number; hostname: string; adopt: boolean; allowDelete?: boolean; gpus: number[] };
    service: {
        name: string;
        sglangVersion: string;
        python?: string;
        venv?: Record<string, unknown>;
        launcher?: string;
        model: { path: string; architecture: string; weightsGB: number; servedName: string };
        tensorParallelSize: number;
        speculative: SpeculativeConfig;
        mambaSchedulerStrategy: string;
        environment: { SGLANG_ENABLE_SPEC_V2: string };
        disableRadixCache?: boolean;
        memFractionStatic: number;
        listenHost: string;
        port: number;
        endpointHost: string;
        extraArgs?: string[];
        requireApiKey?: boolean;
        allowUnauthenticated?: boolean;
        secretEnvironment?: string[];
    };
    readiness?: Record<string, unknown>;
}

/**
 * kpro5 as the field runs it (Pulumi.kpro5.yaml, the one example config:
 * Qwen3.6-27B BF16, TP 2, NEXTN one draft step, extra_buffer + SPEC_V2), as
 * raw sections: the field listens on 0.0.0.0 and requires an API key, whose
 * value only the deploy run gives (core/secrets/deploy-secrets.ts).
 */
export function fieldConfig(): FieldRaw {
    const prefix = `${CONFIG_NAMESPACE}:`;
    const sections = Object.entries(committedStackSettings("kpro5"))
        .filter(([key]) => key.startsWith(prefix))
        .map(([key, value]) => [key.slice(prefix.length), value]);
    return Object.fromEntries(sections) as unknown as FieldRaw;
}

/** The field config with `edit` applied to a fresh copy (tests mutate freely). */
export function withField(edit: (raw: FieldRaw) => void): FieldRaw {
    const raw = fieldConfig();
    edit(raw);
    return raw;
}

export function fieldService(): ServiceConfig {
    return ServiceSchema.parse(fieldConfig().service);
}

// ---------------------------------------------------------------------------
// Generators (shape-valid service configs, with hostile-but-valid characters)
// ---------------------------------------------------------------------------

const segment = fc.stringMatching(/^[A-Za-z0-9_@+-][A-Za-z0-9._@+-]{0,8}$/);
export const absolutePath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join("/")}`);
/** Values allowed in env values and --flag=values: `%`, `=`, `,`, `:` need escaping or care in units. */
const safeValue = fc.stringMatching(/^[A-Za-z0-9._/@+,=:%-]{0,16}$/);
const ownedFlags = Object.keys(OWNED_FLAGS);
const extraFlag = fc
    .stringMatching(/^[a-z0-9][a-z0-9-]{0,12}$/)
    .map((name) => `--extra-${name}`)
    .filter((flag) => !ownedFlags.some((owned) => owned.startsWith(flag)));
/**
 * Printable text as extraArgs values and environment values may hold it:
 * quotes, `\`, `$`, `${NAME}`, `%`, `;`, spaces, JSON, non-ASCII; never
 * control characters other than tab (the config refuses those).
 */
const printableChar = fc.oneof(
    fc.constantFrom(" ", "\t", '"', "'", "\\", "$", "%", "{", "}", ";", "#", "=", "`", "*", "&", "|", "<", ">", "é", "字", "😀"),
    fc.string({ minLength: 1, maxLength: 1, unit: "grapheme-ascii" }),
);
const printableText = fc.oneof(
    fc.string({ unit: printableChar, maxLength: 16 }),
    fc.constantFrom("${SGLANG_API_KEY}", "$HOME", "%n", ";", "\\;", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}'),
);
/** A value token: what the config takes after a --flag (not starting with -, but negative numbers). */
const extraValue = fc.oneof(
    printableText.filter((v) => !v.startsWith("-")),
    fc.constantFrom("-1", "-0.5"),
);
/** One flag of extraArgs in one of its forms: `--flag`, `--flag=value`, `--flag v1 v2...`. */
const extraGroup = fc.oneof(
    extraFlag.map((flag) => [flag]),
    fc.tuple(extraFlag, printableText).map(([flag, value]) => [`${flag}=${value}`]),
    fc.tuple(extraFlag, fc.array(extraValue, { minLength: 1, maxLength: 4 })).map(([flag, values]) => [flag, ...values]),
);
const extraArgs = fc.uniqueArray(extraGroup, { maxLength: 4, selector: (group) => group[0].split("=")[0] }).map((groups) => groups.flat());
const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/).filter((n) => n !== "SGLANG_API_KEY");
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join("."));

const speculative = fc
    .oneof(
        fc.record({
            algorithm: fc.constant("NEXTN"),
            steps: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
        }),
        fc.record({
            algorithm: fc.constantFrom("EAGLE", "EAGLE3", "STANDALONE"),
            steps: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
            draftModelPath: absolutePath,
        }),
        fc.record({ algorithm: fc.constant("NGRAM"), steps: fc.constant(undefined) }),
    )
    .map((s) => ({
        algorithm: s.algorithm,
        ...("draftModelPath" in s ? { draftModelPath: s.draftModelPath } : {}),
        ...(s.steps === undefined ? {} : { numSteps: s.steps, eagleTopk: 1, numDraftTokens: s.steps + 1 }),
    }));

/** Raw (input-shaped) service sections; parse them with ServiceSchema to get a ServiceConfig. */
export const rawService = fc.record(
    {
        name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
        sglangVersion: fc.constantFrom("0.5.9", "0.5.10", "0.5.11", "0.5.13", "0.5.14", "0.5.23"),
        python: absolutePath,
        launcher: fc.constantFrom("auto", "serve", "launch_server"),
        model: fc.record({
            path: absolutePath,
            architecture: fc.constantFrom("Qwen3_5ForConditionalGeneration", "LlamaForCausalLM", "Qwen3NextForCausalLM"),
            weightsGB: fc.integer({ min: 1, max: 400 }),
            servedName: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,20}$/),
        }),
        tensorParallelSize: fc.integer({ min: 1, max: 8 }),
        speculative,
        mambaSchedulerStrategy: fc.constantFrom("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"),
        disableRadixCache: fc.boolean(),
        memFractionStatic: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        maxRunningRequests: fc.integer({ min: 1, max: 512 }),
        listenHost: fc.oneof(ipv4, fc.constant("0.0.0.0")),
        port: fc.integer({ min: 1, max: 65535 }),
        endpointHost: ipv4,
        extraArgs,
        environment: fc.dictionary(envName, fc.oneof(safeValue, printableText), { maxKeys: 4 }),
    },
    { requiredKeys: ["name", "sglangVersion", "python", "model", "endpointHost"] },
);

export const serviceConfig: fc.Arbitrary<ServiceConfig> = rawService.map((raw) => ServiceSchema.parse(raw));

// ---------------------------------------------------------------------------
// systemd-analyze verify
// ---------------------------------------------------------------------------

/** Targets the unit names; stubs are enough for verify to resolve the dependency graph. */
const STUB_TARGETS = ["sysinit.target", "basic.target", "multi-user.target", "network-online.target", "network.target", "shutdown.target"];

export interface VerifyResult {
    status: number | null;
    output: string;
}

/**
 * Throwaway roots for `systemd-analyze verify --root`: stub targets, and
 * executable stubs at the unit's absolute ExecStart paths, so verify checks
 * the unit itself without the host's units or binaries. Each verify gets a
 * fresh root (generated paths may clash: `/x` a file in one, a folder in another).
 */
export class SystemdRoot {
    readonly dir: string;

    constructor() {
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-unit-"));
    }

    /** Writes the unit (and stub executables) into a fresh root and runs verify on it. */
    verify(unitFileName: string, unitText: string, executables: readonly string[]): VerifyResult {
        const root = fs.mkdtempSync(path.join(this.dir, "root-"));
        try {
            const lib = path.join(root, "usr/lib/systemd/system");
            fs.mkdirSync(lib, { recursive: true });
            for (const target of STUB_TARGETS) fs.writeFileSync(path.join(lib, target), `[Unit]\nDescription=stub ${target}\n`);
            for (const exe of executables) {
                const stub = path.join(root, exe);
                fs.mkdirSync(path.dirname(stub), { recursive: true });
                fs.writeFileSync(stub, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
            }
            const units = path.join(root, "etc/systemd/system");
            fs.mkdirSync(units, { recursive: true });
            fs.writeFileSync(path.join(units, unitFileName), unitText);
            const run = spawnSync("systemd-analyze", ["verify", `--root=${root}`, `/etc/systemd/system/${unitFileName}`], {
                encoding: "utf8",
                timeout: 20000,
            });
            if (run.error) {
                throw new Error(`systemd-analyze could not run (${run.error.message}); install systemd (CI does), these tests do not skip`);
            }
            return { status: run.status, output: `${run.stdout}${run.stderr}` };
        } finally {
            fs.rmSync(root, { recursive: true, force: true });
        }
    }

    dispose(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** A DFlash drafter's speculative block as SGLang 0.5.11 runs it: one step, topk 1, its block of 16 draft tokens. */
export const DFLASH_BLOCK = { algorithm: "DFLASH", draftModelPath: "/models/dflash-drafter", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 };

// ---------------------------------------------------------------------------
// The field server's preview rows, judged as SGLang 0.5.11 judges them
// ---------------------------------------------------------------------------

/** The raw service block as a row edits it (a stack file's `sglang-serve:service`). */
export type RawServiceBlock = Record<string, unknown> & {
    speculative?: Record<string, unknown>;
    environment: Record<string, string>;
    model: Record<string, unknown>;
};

/** One row: kpro5's server with `edit` applied; `fails`: the key the refusal is printed under and SGLang's own text in it. */
export interface SglangRow {
    row: string;
    edit: (s: RawServiceBlock) => void;
    fails?: { key: string; text: RegExp };
}

/**
 * The rows of the issue's table, and extra_buffer removed (field failure 1):
 * kpro5's server with one edit, judged as SGLang 0.5.11 judges them
 * (tests/lab/releases/differential.ts holds the rules to the release).
 * With no host contacted the program's config validation judges them
 * (core/sglang/config-rules.ts, the transcribed ServerArgs rules: the
 * SglangService's check has no box facts yet, so SGLang's own verdict waits
 * for the rollout). Every row is judged under Pulumi mocks
 * (tests/components/stack.test.ts) and, for those that start, by the
 * SglangService's check at a first preview (tests/providers/sglang-service.test.ts);
 * tests/e2e/preview.test.ts previews one that starts and one that fails with
 * the real engine.
 */
export const SGLANG_0511_ROWS: readonly SglangRow[] = [
    { row: "extra_buffer without SGLANG_ENABLE_SPEC_V2 starts (0.5.11 defaults it on)", edit: (s) => delete s.environment.SGLANG_ENABLE_SPEC_V2 },
    {
        row: "DFLASH with a drafter, steps 1, topk 1, draft tokens 16 starts",
        edit: (s) => (s.speculative = { ...DFLASH_BLOCK }),
    },
    {
        row: "steps 3 and topk 1 without draft tokens starts (SGLang sets 4)",
        edit: (s) => (s.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1 }),
    },
    {
        row: "extra_buffer removed fails (SGLang's startup ValueError on the radix cache)",
        edit: (s) => delete s.mambaSchedulerStrategy,
        fails: { key: "service.mambaSchedulerStrategy", text: /is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer/ },
    },
    {
        row: "extra_buffer with disableRadixCache fails (ValueError, 0.5.10+)",
        edit: (s) => (s.disableRadixCache = true),
        fails: { key: "service.mambaSchedulerStrategy", text: /mamba extra_buffer is not compatible with --disable-radix-cache/ },
    },
    {
        row: "NemotronH with extra_buffer and speculation fails (AssertionError)",
        edit: (s) => (s.model.architecture = "NemotronHForCausalLM"),
        fails: { key: "service.mambaSchedulerStrategy", text: /AssertionError: mamba extra_buffer is not supported for NemotronHForCausalLM model/ },
    },
    {
        row: "Lfm2 with speculation and the radix cache fails (ValueError)",
        edit: (s) => {
            s.model.architecture = "Lfm2ForCausalLM";
            delete s.mambaSchedulerStrategy;
        },
        fails: { key: "service.mambaSchedulerStrategy", text: /Speculative decoding for Lfm2ForCausalLM is not compatible with radix cache/ },
    },
    {
        row: "topk 2 with SGLANG_ENABLE_SPEC_V2 on starts on 0.5.11 (spec v1 fallback)",
        edit: (s) => (s.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 2, numDraftTokens: 6 }),
    },
];

/** A row by its name (a test that previews one of them). */
export function sglangRow(row: string): SglangRow {
    const found = SGLANG_0511_ROWS.find((r) => r.row === row);
    if (!found) throw new Error(`no row ${JSON.stringify(row)}`);
    return found;
}

/** The regex a refusal's key is printed with: `sglang-serve:service.mambaSchedulerStrategy =`. */
export function refusedKeyPattern(key: string): RegExp {
    return new RegExp(`sglang-serve:${key.replace(/\./g, "\\.")} =`);
}
