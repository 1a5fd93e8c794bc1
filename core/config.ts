/**
 * The stack's config: one zod schema for its shape and defaults, then the
 * SGLang rules that span fields (the ones that crashed the server in the
 * field, caught at preview). Every problem is reported at once, each naming
 * the Pulumi key, the bad value and the fix (t3-env style).
 */
import { z } from "zod";
import { fromBooleanString, fromNumericString } from "./config-scalars";
import { isPlaceholderHostKey, parseHostKey } from "./host-key";
import { SGLANG_RELEASES, sglangRelease } from "./sglang-releases";
import {
    API_KEY_ENV,
    ASSUMED_AUTO_MEM_FRACTION,
    DEFAULT_LISTEN_HOST,
    DEFAULT_PORT,
    HEALTH_CHECK_TIMEOUT_SECONDS,
    MAMBA_SCHEDULER_STRATEGIES,
    MIN_PROBE_TIMEOUT_SECONDS,
    OWNED_FLAGS,
    parseSglangBool,
    SPEC_V2_ENV,
} from "./sglang-rules";
import { judgeServerArgs, ServerArgsKey, specV2On } from "./sglang-server-args";
import { isRecord } from "./is-record";

export const CONFIG_NAMESPACE = "sglang-serve";

/** The Pulumi config key for a path inside the stack config: `sglang-serve:service.port`. */
export function pulumiKey(path: string): string {
    return `${CONFIG_NAMESPACE}:${path}`;
}

// ---------------------------------------------------------------------------
// Safe-value patterns. Values end up in a systemd unit and in shell commands
// sent over SSH; rather than trust escaping alone, anything outside these
// conservative alphabets is rejected with the fix (no quotes, `$`, `\`,
// spaces, `;`, backticks, newlines, NUL or other control characters).
// ---------------------------------------------------------------------------

/** Absolute path of plain characters. */
const ABSOLUTE_PATH = /^\/[A-Za-z0-9._/@+-]*$/;
/** An SSH private key file: absolute or under the home directory. */
const KEY_PATH = /^(~\/|\/)[A-Za-z0-9._/@+-]*$/;
/** Environment values and `--flag=value` values: `%` and `=` are allowed (systemd escaping is tested for them). */
const SAFE_VALUE = /^[A-Za-z0-9._/@+,=:%-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const EXTRA_ARG = /^--[a-z0-9][a-z0-9-]*(=[A-Za-z0-9._/@+,=:%-]*)?$/;
const SERVICE_NAME = /^[a-z][a-z0-9-]{0,39}$/;
const LABEL = /^[a-z0-9][a-z0-9-]{0,62}$/;
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const DNS_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const IPV6 = /^[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:]*$/;
const SERVED_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$/;
const ARCHITECTURE = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;
const VERSION = /^\d+\.\d+\.\d+$/;
const INTERFACE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;
const GPU_NAME = /^[A-Za-z0-9 ._()+-]{1,64}$/;
/** API keys go into the EnvironmentFile unquoted and into argv through `${SGLANG_API_KEY}`. */
const API_KEY_ALPHABET = /^[A-Za-z0-9._~+/=-]*$/;
export const API_KEY_MIN_LENGTH = 16;
export const API_KEY_MAX_LENGTH = 256;
/** A Pulumi stack name, optionally with its project (`<project>/<stack>`), as `service.takeOverFrom` names it. */
const STACK_REF = /^([A-Za-z0-9_.-]{1,100}\/)?[A-Za-z0-9_.-]{1,100}$/;

function isIpv4(s: string): boolean {
    const m = IPV4.exec(s);
    return m !== null && m.slice(1).every((octet) => Number(octet) <= 255);
}

function isHostAddress(s: string): boolean {
    if (/^[\d.]+$/.test(s)) return isIpv4(s);
    return DNS_NAME.test(s) || IPV6.test(s);
}

export function isLoopback(host: string): boolean {
    return host === "localhost" || host === "::1" || /^127\./.test(host);
}

const API_KEY_SET_HELP = "`openssl rand -hex 32 | npm run pulumi -- config set --secret sglang-serve:apiKey`";

/**
 * Why `key` cannot be the server's API key, or undefined when it can. The
 * value itself is never part of the answer. An empty key matters most:
 * SGLang adds its auth middleware only for a non-empty `--api-key`, so
 * `SGLANG_API_KEY=` would serve without authentication.
 */
export function apiKeyProblem(key: string): string | undefined {
    if (key === "") {
        return (
            "is empty, and SGLang treats an empty --api-key as no key: the server would answer without authentication. " +
            `Set a key of ${API_KEY_MIN_LENGTH}-${API_KEY_MAX_LENGTH} characters (${API_KEY_SET_HELP}), or remove it (\`npm run pulumi -- config rm sglang-serve:apiKey\`)`
        );
    }
    if (key.length < API_KEY_MIN_LENGTH || key.length > API_KEY_MAX_LENGTH) {
        return `is ${key.length} characters long but must be ${API_KEY_MIN_LENGTH}-${API_KEY_MAX_LENGTH}: set a longer key (${API_KEY_SET_HELP})`;
    }
    if (!API_KEY_ALPHABET.test(key)) {
        return (
            "has characters other than letters, digits and ._~+/=- (it goes unquoted into the 0600 EnvironmentFile and into --api-key): " +
            `set a key of those characters only (${API_KEY_SET_HELP})`
        );
    }
    return undefined;
}

const HOST_ADDRESS_HELP = "must be an IPv4 address, an IPv6 address or a DNS name (letters, digits, '-' and '.'); nothing else, so it is safe in commands";

const absolutePath = () =>
    z.string().regex(ABSOLUTE_PATH, {
        error: "must be an absolute path of letters, digits and ._/@+- only (no spaces, quotes, $ or control characters): rename or symlink it to such a path",
    });

const hostAddress = () => z.string().refine(isHostAddress, { error: HOST_ADDRESS_HELP });

const port = () =>
    fromNumericString(
        z
            .int({ error: "must be a whole number from 1 to 65535" })
            .min(1, { error: "must be a port from 1 to 65535" })
            .max(65535, { error: "must be a port from 1 to 65535" }),
    );

/** Why `text` is not a pinned host key (core/host-key.ts), or undefined when it is. */
export function hostKeyProblem(text: string): string | undefined {
    const parsed = parseHostKey(text);
    return "problem" in parsed ? parsed.problem : undefined;
}

// ---------------------------------------------------------------------------
// The schema
// ---------------------------------------------------------------------------

const GpuSpecSchema = z.strictObject({
    count: fromNumericString(z.int().min(1).max(64)),
    name: z.string().regex(GPU_NAME, { error: "must be the GPU name as nvidia-smi prints it (letters, digits, spaces, ._()+-)" }).optional(),
    memoryMiB: fromNumericString(z.int().min(1024, { error: "must be one GPU's memory in MiB as nvidia-smi prints it (e.g. 49140 for an RTX A6000)" })),
});

export const HostSchema = z.strictObject({
    /** Label used in resource names. */
    name: z.string().regex(LABEL, { error: "must be a lowercase label (letters, digits, '-'), used in resource names" }),
    address: hostAddress(),
    port: port().default(22),
    user: z.string().regex(USER_NAME, { error: "must be a Unix user name (lowercase letters, digits, _ and -)" }).default("root"),
    /** Pinned host key, `<type> <base64>` as in known_hosts without the host name. */
    hostKey: z.string().superRefine((value, ctx) => {
        const problem = hostKeyProblem(value);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
    topology: z.enum(["pct-exec", "direct"], {
        error: 'must be "pct-exec" (commands go through the Proxmox host with `pct exec`) or "direct" (ssh straight into the container)',
    }),
    sshPrivateKeyPath: z.string().regex(KEY_PATH, { error: "must be an absolute path or one under ~/ of letters, digits and ._/@+- only" }).optional(),
    gpus: GpuSpecSchema,
});

const ContainerNetworkSchema = z.strictObject({
    name: z.string().regex(INTERFACE_NAME, { error: "must be an interface name such as eth0" }),
    bridge: z.string().regex(INTERFACE_NAME, { error: "must be a bridge name such as vmbr0" }),
    ip: z.string().refine((s) => s === "dhcp" || s === "manual" || isIpv4Cidr(s), {
        error: 'must be an IPv4 address with prefix length (10.1.230.172/24), "dhcp" or "manual"',
    }),
    gateway: z.string().refine(isIpv4, { error: "must be an IPv4 address" }).optional(),
});

function isIpv4Cidr(s: string): boolean {
    const [ip, prefix, ...rest] = s.split("/");
    return rest.length === 0 && isIpv4(ip) && /^\d{1,2}$/.test(prefix ?? "") && Number(prefix) <= 32;
}

export const ContainerSchema = z.strictObject({
    vmid: fromNumericString(z.int().min(100, { error: "must be a Proxmox VMID from 100 to 999999999" }).max(999999999)),
    hostname: z.string().regex(DNS_NAME, { error: "must be a DNS host name (letters, digits, '-' and '.')" }),
    /** The container exists: adopt it, never recreate or restart it to adopt. */
    adopt: fromBooleanString(z.boolean()).default(false),
    /** `pulumi destroy` deletes the container only when true. */
    allowDelete: fromBooleanString(z.boolean()).default(false),
    // Settings below are managed when declared and left alone when omitted.
    cores: fromNumericString(z.int().min(1).max(8192)).optional(),
    memoryMiB: fromNumericString(z.int().min(16)).optional(),
    swapMiB: fromNumericString(z.int().min(0)).optional(),
    onboot: fromBooleanString(z.boolean()).optional(),
    features: z.strictObject({ nesting: fromBooleanString(z.boolean()).optional(), keyctl: fromBooleanString(z.boolean()).optional() }).optional(),
    network: ContainerNetworkSchema.optional(),
    /** Indices of the host GPUs passed through (device nodes bind-mounted, cgroup-allowed). */
    gpus: z.array(fromNumericString(z.int().min(0).max(63))).min(1, { error: "must list at least one host GPU index to pass through (e.g. [0, 1])" }),
});

export const SpeculativeSchema = z.strictObject({
    /** Checked against the SGLang version by the rules (case-sensitive, like argparse). */
    algorithm: z.string().regex(/^[A-Za-z0-9_]{1,32}$/, { error: "must be an algorithm name such as NEXTN or EAGLE3" }),
    draftModelPath: absolutePath().optional(),
    numSteps: fromNumericString(z.int().min(1).max(64)).optional(),
    eagleTopk: fromNumericString(z.int().min(1).max(64)).optional(),
    numDraftTokens: fromNumericString(z.int().min(1).max(1024)).optional(),
});

export const ModelSchema = z.strictObject({
    path: absolutePath(),
    /** config.json `architectures[0]`: decides which SGLang rules apply. Left out: read from the box's config.json. */
    architecture: z
        .string()
        .regex(ARCHITECTURE, {
            error: "must be the class name from the model's config.json `architectures` (e.g. Qwen3_5ForConditionalGeneration)",
        })
        .optional(),
    /** Size of the weights in GB (1e9 bytes), for the memory check. Left out: read from the box's safetensors index. */
    weightsGB: fromNumericString(z.number().positive().max(100000)).optional(),
    /** The name clients send as `model`; served with --served-model-name. */
    servedName: z.string().regex(SERVED_NAME, { error: "must be letters, digits and ._:/+- (starting with a letter or digit)" }),
});

export const ServiceSchema = z.strictObject({
    /** Unit sglang-<name>.service, environment file /etc/sglang/<name>.env. */
    name: z.string().regex(SERVICE_NAME, { error: "must be a lowercase name (letters, digits, '-'), at most 40 characters; it names sglang-<name>.service" }),
    sglangVersion: z.string().regex(VERSION, { error: "must be an installed SGLang release as major.minor.patch (e.g. 0.5.11)" }),
    /** The venv's python; `sglang` is taken from beside it. */
    python: absolutePath(),
    launcher: z.enum(["auto", "serve", "launch_server"]).default("auto"),
    model: ModelSchema,
    tensorParallelSize: fromNumericString(z.int().min(1).max(64)).default(1),
    speculative: SpeculativeSchema.optional(),
    mambaSchedulerStrategy: z.enum(MAMBA_SCHEDULER_STRATEGIES).optional(),
    disableRadixCache: fromBooleanString(z.boolean()).default(false),
    memFractionStatic: fromNumericString(
        z.number().gt(0, { error: "must be a fraction between 0 and 1 (e.g. 0.88)" }).lt(1, { error: "must be a fraction between 0 and 1 (e.g. 0.88)" }),
    ).optional(),
    /** SGLang resets this to 48 with speculative decoding when unset. */
    maxRunningRequests: fromNumericString(z.int().min(1)).optional(),
    /** `--host`; SGLang listens on 127.0.0.1 when unset. */
    listenHost: hostAddress().optional(),
    port: port().default(DEFAULT_PORT),
    /** Where the stack reaches the HTTP API. */
    endpointHost: hostAddress(),
    extraArgs: z
        .array(
            z.string().regex(EXTRA_ARG, {
                error: "must be one token, --flag or --flag=value, with a lowercase flag name and a value of letters, digits and ._/@+,=:%- only",
            }),
        )
        .default([]),
    /** Plain environment for the server (secrets never: use sglang-serve:apiKey). */
    environment: z.record(z.string(), z.string()).default({}),
    /** Says that a server on a non-loopback address without sglang-serve:apiKey is intended. */
    allowUnauthenticated: fromBooleanString(z.boolean()).default(false),
    /** The stack (`<stack>` or `<project>/<stack>`) whose unit on the box this stack may take over. */
    takeOverFrom: z
        .string()
        .regex(STACK_REF, { error: "must be the stack that owns the unit now, as `<stack>` or `<project>/<stack>` (the name the refusal message gives)" })
        .optional(),
});

export const ReadinessSchema = z.strictObject({
    /** Budget from start to ready: weight loading (30-90 s) plus CUDA-graph capture (minutes). */
    startupTimeoutSeconds: fromNumericString(z.int().min(30).max(86400)).default(900),
    pollIntervalSeconds: fromNumericString(z.number().positive().max(60)).default(1),
    probeTimeoutSeconds: fromNumericString(
        z.number().min(MIN_PROBE_TIMEOUT_SECONDS, {
            error:
                `must be at least ${MIN_PROBE_TIMEOUT_SECONDS} s: SGLang's /health waits up to SGLANG_HEALTH_CHECK_TIMEOUT ` +
                `(${HEALTH_CHECK_TIMEOUT_SECONDS} s) before answering 503, so a shorter probe calls a healthy server down`,
        }),
    ).default(30),
    gpuReleaseTimeoutSeconds: fromNumericString(z.int().min(0).max(3600)).default(120),
    chatCheck: fromBooleanString(z.boolean()).default(true),
    /**
     * After ready and the checks, the server must stay healthy this long (same
     * MainPID, unit active, no fatal journal line, GET /health = 200 on every
     * poll) before the rollout succeeds; 0 turns the window off. Default 30:
     * SGLang's /health needs up to SGLANG_HEALTH_CHECK_TIMEOUT (20 s) to call
     * a hung scheduler down, plus 10 s (Nomad's min_healthy_time) for the
     * crashes seconds after ready. README "Readiness and the healthy window".
     */
    minHealthySeconds: fromNumericString(
        z
            .int({ error: "must be a whole number of seconds (0 turns the healthy window off)" })
            .min(0, { error: "must be 0 (no healthy window) or more seconds" })
            .max(3600, { error: "must be at most 3600 s: a longer wait belongs in monitoring, not in pulumi up" }),
    ).default(30),
    /**
     * Starts of a new config (and of the previous one on rollback) before the
     * rollout gives up, for failures that can pass on retry (not an argument
     * or ServerArgs error, not out of memory). Default 2: one retry.
     */
    startAttempts: fromNumericString(
        z
            .int({ error: "must be a whole number of starts: 1 (no retry) or more" })
            .min(1, { error: "must be at least 1 (1 starts once and never retries)" })
            .max(10, { error: "must be at most 10: each attempt may take the whole startupTimeoutSeconds" }),
    ).default(2),
});

export const StackConfigSchema = z.strictObject({
    host: HostSchema,
    /** Secret; alternative to host.sshPrivateKeyPath. */
    sshPrivateKey: z.string().min(1).optional(),
    /** Required for topology pct-exec, absent for direct. */
    container: ContainerSchema.optional(),
    service: ServiceSchema,
    /** Secret; written only to the 0600 EnvironmentFile. */
    apiKey: z
        .string()
        .superRefine((value, ctx) => {
            const problem = apiKeyProblem(value);
            if (problem) ctx.addIssue({ code: "custom", message: problem });
        })
        .optional(),
    /** A key made by @pulumi/random instead of sglang-serve:apiKey. */
    generateApiKey: fromBooleanString(z.boolean()).optional(),
    readiness: ReadinessSchema.prefault({}),
});

export type StackConfig = z.output<typeof StackConfigSchema>;
export type StackConfigInput = z.input<typeof StackConfigSchema>;
export type HostConfig = z.output<typeof HostSchema>;
export type ContainerConfig = z.output<typeof ContainerSchema>;
export type ServiceConfig = z.output<typeof ServiceSchema>;
export type ModelConfig = z.output<typeof ModelSchema>;
export type SpeculativeConfig = z.output<typeof SpeculativeSchema>;
export type ReadinessConfig = z.output<typeof ReadinessSchema>;
export type Topology = HostConfig["topology"];

type SectionName = keyof typeof StackConfigSchema.shape;
const SECTION_NAMES = Object.keys(StackConfigSchema.shape) as SectionName[];

/** Config keys that hold secrets: their values are never printed. */
export const SECRET_CONFIG_KEYS: readonly string[] = ["sshPrivateKey", "apiKey"];

// ---------------------------------------------------------------------------
// Issues
// ---------------------------------------------------------------------------

export interface ConfigIssue {
    /** Dotted path inside the stack config, e.g. `service.speculative.numDraftTokens`. */
    path: string;
    /** The offending value as given (undefined when missing). */
    value: unknown;
    /** A sentence naming the key, what is wrong, and the fix. */
    message: string;
}

export type ValidationResult = { ok: true; config: StackConfig; warnings: string[] } | { ok: false; issues: ConfigIssue[]; warnings: string[] };

/** `["service", "extraArgs", 2]` -> `service.extraArgs[2]`. */
export function formatPath(path: readonly PropertyKey[]): string {
    let out = "";
    for (const part of path) {
        if (typeof part === "number") out += `[${part}]`;
        else out += out === "" ? String(part) : `.${String(part)}`;
    }
    return out;
}

function isSecretPath(path: string): boolean {
    return SECRET_CONFIG_KEYS.some((key) => path === key || path.startsWith(`${key}.`));
}

function describeValue(path: string, value: unknown): string {
    if (value === undefined) return "(not set)";
    if (isSecretPath(path)) return "[secret]";
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * One message listing every problem: the Pulumi key, the value given, and
 * the fix. Secret values are shown as `[secret]`.
 */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    const lines = [`Invalid ${CONFIG_NAMESPACE} stack config (${count}); fix these keys in Pulumi.<stack>.yaml:`];
    issues.forEach((issue, i) => {
        lines.push(`  ${i + 1}. ${pulumiKey(issue.path)} = ${describeValue(issue.path, issue.value)}`);
        lines.push(`     ${issue.message}`);
    });
    return lines.join("\n");
}

// ---------------------------------------------------------------------------
// Zod issues -> ConfigIssues
// ---------------------------------------------------------------------------

function describeType(value: unknown): string {
    if (value === null) return "null";
    if (Array.isArray(value)) return "a list";
    return typeof value === "object" ? "a map" : `${typeof value} ${JSON.stringify(value)}`;
}

function expectedText(expected: string): string {
    switch (expected) {
        case "int":
            return "a whole number";
        case "object":
            return "a map of keys";
        case "array":
            return "a list";
        default:
            return `a ${expected}`;
    }
}

/** Generic messages for issues whose schema did not set its own; each says what to write instead. */
const errorMap: z.core.$ZodErrorMap = (issue) => {
    switch (issue.code) {
        case "invalid_type":
            return issue.input === undefined
                ? `is required: add it (${expectedText(issue.expected)})`
                : `must be ${expectedText(issue.expected)}, not ${describeType(issue.input)}`;
        case "too_small":
            return issue.origin === "array"
                ? `must have at least ${String(issue.minimum)} entries`
                : `must be ${issue.inclusive ? "at least" : "more than"} ${String(issue.minimum)}`;
        case "too_big":
            return issue.origin === "array"
                ? `must have at most ${String(issue.maximum)} entries`
                : `must be ${issue.inclusive ? "at most" : "less than"} ${String(issue.maximum)}`;
        case "invalid_value":
            return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
        default:
            return undefined;
    }
};

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
    let current: unknown = root;
    for (const part of path) {
        if (current === null || typeof current !== "object") return undefined;
        current = (current as Record<PropertyKey, unknown>)[part];
    }
    return current;
}

/** Keys a schema at `path` accepts, for "did you mean" hints on unknown keys. */
function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
    let current: z.core.$ZodType | undefined = schema;
    const unwrap = (s: z.core.$ZodType): z.core.$ZodType => {
        const def = s._zod.def as { type: string; innerType?: z.core.$ZodType };
        return ["optional", "default", "prefault", "nullable"].includes(def.type) && def.innerType ? unwrap(def.innerType) : s;
    };
    for (const part of path) {
        if (!current) return [];
        const def = unwrap(current)._zod.def as {
            type: string;
            shape?: Record<string, z.core.$ZodType>;
            element?: z.core.$ZodType;
            valueType?: z.core.$ZodType;
        };
        if (def.type === "object" && def.shape) current = def.shape[String(part)];
        else if (def.type === "array") current = def.element;
        else if (def.type === "record") current = def.valueType;
        else return [];
    }
    if (!current) return [];
    const def = unwrap(current)._zod.def as { type: string; shape?: Record<string, unknown> };
    return def.type === "object" && def.shape ? Object.keys(def.shape) : [];
}

function unknownKeyIssue(parentPath: readonly PropertyKey[], key: string, known: readonly string[], raw: unknown): ConfigIssue {
    const path = formatPath([...parentPath, key]);
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase() || editDistance(k, key) <= 2);
    const hint = near ? `did you mean ${near}? ` : "";
    return {
        path,
        value: valueAt(raw, [...parentPath, key]),
        message: `${path} is not a known key: ${hint}remove it or fix its spelling (known here: ${known.join(", ")}).`,
    };
}

function editDistance(a: string, b: string): number {
    const row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
        let previous = row[0];
        row[0] = i;
        for (let j = 1; j <= b.length; j++) {
            const saved = row[j];
            row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
            previous = saved;
        }
    }
    return row[b.length];
}

function fromZodIssues(zodIssues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[], raw: unknown): ConfigIssue[] {
    const out: ConfigIssue[] = [];
    for (const issue of zodIssues) {
        const fullPath = [...prefix, ...issue.path];
        if (issue.code === "unrecognized_keys") {
            const known = knownKeysAt(StackConfigSchema, fullPath);
            for (const key of issue.keys) out.push(unknownKeyIssue(fullPath, key, known, raw));
            continue;
        }
        const path = formatPath(fullPath);
        out.push({ path, value: valueAt(raw, fullPath), message: `${path} ${issue.message}.` });
    }
    return out;
}

// ---------------------------------------------------------------------------
// Cross-field rules
// ---------------------------------------------------------------------------

/** What the rules see: each section that parsed, and which keys were given at all. */
interface RuleInput {
    host?: HostConfig;
    container?: ContainerConfig;
    containerGiven: boolean;
    service?: ServiceConfig;
    readiness?: ReadinessConfig;
    sshPrivateKeyGiven: boolean;
    /** sglang-serve:apiKey is set (valid or not) or generateApiKey is true. */
    apiKeyGiven: boolean;
    /** SSH_AUTH_SOCK is set where the program runs; undefined when not known (render). */
    sshAgentAvailable?: boolean;
}

class Findings {
    readonly issues: ConfigIssue[] = [];
    readonly warnings: string[] = [];
    /** Per issue, the other keys its verdict rests on (to drop it when one of them was invalid). */
    readonly dependsOn = new Map<ConfigIssue, readonly string[]>();
    issue(path: string, value: unknown, message: string, dependsOn: readonly string[] = []): void {
        const issue = { path, value, message };
        this.issues.push(issue);
        this.dependsOn.set(issue, dependsOn);
    }
    warn(message: string): void {
        this.warnings.push(message);
    }
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
/**
 * Room the static pool (`--mem-fraction-static` of each GPU) must keep after
 * the weights, for the KV cache and the Mamba/GDN state pools SGLang carves
 * out of the same budget. SGLang aborts at startup ("Not enough memory ...
 * increase --mem-fraction-static") when too little is left; 2 GiB is a floor
 * that lets a server start with a small cache, not a performance target.
 * Activations and CUDA graphs live outside the static pool (the remaining
 * 1 - fraction), so they are not counted here.
 */
export const STATIC_POOL_RESERVE_GIB = 2;

function topologyRule(input: RuleInput, f: Findings): void {
    const { host } = input;
    if (!host) return;
    if (host.topology === "pct-exec" && !input.containerGiven) {
        f.issue(
            "container",
            undefined,
            "container is required when host.topology is pct-exec: declare the LXC container (vmid, hostname, gpus) that `pct exec` runs the server in.",
        );
    }
    if (host.topology === "direct" && input.containerGiven) {
        f.issue(
            "container",
            "(set)",
            "container must be absent when host.topology is direct (commands go straight to host.address): remove sglang-serve:container, or set host.topology: pct-exec.",
        );
    }
}

function sshKeyRule(input: RuleInput, f: Findings): void {
    const { host } = input;
    if (!host) return;
    if (host.sshPrivateKeyPath !== undefined && input.sshPrivateKeyGiven) {
        f.issue(
            "host.sshPrivateKeyPath",
            host.sshPrivateKeyPath,
            "host.sshPrivateKeyPath and the secret sglang-serve:sshPrivateKey are both set: keep one (`pulumi config rm sglang-serve:sshPrivateKey` or remove host.sshPrivateKeyPath).",
        );
    }
    // Without either, the providers use ssh-agent (SSH_AUTH_SOCK): only a known absence of one is worth a word.
    if (host.sshPrivateKeyPath === undefined && !input.sshPrivateKeyGiven && input.sshAgentAvailable === false) {
        f.warn(
            `Neither ${pulumiKey("host.sshPrivateKeyPath")} nor the secret ${pulumiKey("sshPrivateKey")} is set, and no ssh-agent runs (SSH_AUTH_SOCK is not set): ` +
                `preview works, but \`pulumi up\` cannot log in to ${host.address}. Start ssh-agent and \`ssh-add\` the key, or set one of them.`,
        );
    }
    if (isPlaceholderHostKey(host.hostKey)) {
        f.warn(
            `${pulumiKey("host.hostKey")} is the placeholder key: preview works, but \`pulumi up\` will refuse to connect to ${host.address}. ` +
                `Replace it with \`ssh-keyscan -t ed25519 ${host.address}\` output (without the host name), verified out of band.`,
        );
    }
}

function versionRule(service: ServiceConfig, f: Findings): void {
    if (!sglangRelease(service.sglangVersion).verified) {
        f.warn(
            `${pulumiKey("service.sglangVersion")} is ${service.sglangVersion}; the SGLang rules here were checked against the releases ` +
                `${SGLANG_RELEASES.map((r) => r.version).join(", ")} only (newer releases renamed --mamba-scheduler-strategy and dropped ` +
                `${SPEC_V2_ENV}): the rules of ${sglangRelease(service.sglangVersion).version === service.sglangVersion ? "the nearest one" : "the nearest older one"} are applied; check core/sglang-releases.ts before relying on them.`,
        );
    }
}

/** `--mamba-track-interval=N` in extraArgs, with its index. */
function mambaTrackInterval(service: ServiceConfig): { value: number; index: number } | undefined {
    const index = service.extraArgs.findIndex((a) => /^--mamba-track-interval=\d+$/.test(a));
    return index === -1 ? undefined : { value: Number(service.extraArgs[index]!.split("=")[1]), index };
}

const SERVER_ARGS_INPUTS = [
    "service.speculative",
    "service.disableRadixCache",
    "service.model.architecture",
    "service.sglangVersion",
    "service.mambaSchedulerStrategy",
];

/**
 * SGLang's own verdict on the settings (core/sglang-server-args.ts, per
 * release): the exception it would raise at startup fails the preview under
 * the key it is about, with SGLang's text and the fix; what it would change
 * silently is a warning naming the value it will run.
 */
function serverArgsRule(service: ServiceConfig, f: Findings): void {
    const release = sglangRelease(service.sglangVersion);
    const spec = service.speculative;
    const interval = mambaTrackInterval(service);
    // Without a declared architecture the hybrid-model rules wait for the box's config.json (core/box-facts.ts).
    const verdict = judgeServerArgs(release, {
        architecture: service.model.architecture ?? "(from the box)",
        speculative: spec,
        mambaSchedulerStrategy: service.mambaSchedulerStrategy,
        disableRadixCache: service.disableRadixCache,
        maxRunningRequests: service.maxRunningRequests,
        mambaTrackInterval: interval?.value,
        environment: service.environment,
    });
    for (const refusal of verdict.refusals) {
        const key = refusal.key === "service.mambaTrackInterval" ? `service.extraArgs[${interval!.index}]` : refusal.key;
        const value = valueOfKey(service, refusal.key, interval);
        let message = `${key} is ${shownValue(value)}: SGLang ${service.sglangVersion} refuses it at startup with\n       ${refusal.error}\n       Fix: ${refusal.fix}.`;
        if (refusal.key === "service.speculative.algorithm" && spec) message += algorithmHint(spec.algorithm, release.speculativeAlgorithms);
        f.issue(key, value, message, SERVER_ARGS_INPUTS);
    }
    if (verdict.refusals.length > 0) return;
    if (spec) {
        const runs = verdict.runs;
        const changed = (name: "numSteps" | "eagleTopk" | "numDraftTokens") =>
            spec[name] !== undefined && runs[name] !== undefined && runs[name] !== spec[name];
        for (const name of ["numSteps", "eagleTopk", "numDraftTokens"] as const) {
            if (!changed(name)) continue;
            f.warn(
                `${pulumiKey(`service.speculative.${name}`)} is ${spec[name]}, but SGLang ${service.sglangVersion} runs ${runs[name]} ` +
                    `(${spec.algorithm === "DFLASH" ? "DFLASH runs one step with topk 1" : "with eagleTopk 1 it runs numSteps + 1 draft tokens"}): declare ${runs[name]}.`,
            );
        }
        if ((spec.algorithm === "NEXTN" || spec.algorithm === "EAGLE") && spec.draftModelPath !== undefined) {
            f.warn(
                spec.draftModelPath === service.model.path
                    ? `${pulumiKey("service.speculative.draftModelPath")} is the served model itself: ${spec.algorithm} drafts with the model's own MTP head without it; remove it.`
                    : `${pulumiKey("service.speculative.draftModelPath")} is set with ${spec.algorithm}: SGLang runs EAGLE with that drafter, not the model's own MTP head.`,
            );
        }
    }
    if (verdict.runs.disableRadixCache && !service.disableRadixCache) {
        f.warn(
            `SGLang ${service.sglangVersion} serves ${service.model.architecture} without the radix cache here (it logs "${verdict.warnings.find((w) => /radix cache/i.test(w)) ?? "Disabling radix cache"}"): ` +
                `set ${pulumiKey("service.disableRadixCache")}: true to say so.`,
        );
    }
    const specV2Value = service.environment[SPEC_V2_ENV];
    if (specV2Value !== undefined && parseSglangBool(specV2Value) === undefined) {
        f.warn(
            `${pulumiKey(`service.environment.${SPEC_V2_ENV}`)} is "${specV2Value}", which SGLang cannot read: it warns and uses its default (${release.specV2Default ? "on" : "off"} in ${release.version}); write "1" or "0".`,
        );
    }
    if (spec && !release.specV2Default && ["NEXTN", "EAGLE", "EAGLE3", "STANDALONE"].includes(spec.algorithm) && !specV2On(release, service.environment)) {
        f.warn(
            `SGLang ${release.version} runs speculative decoding without the overlap scheduler unless ${SPEC_V2_ENV} is on: set ${pulumiKey(`service.environment.${SPEC_V2_ENV}`)}: "1" for it (advice, not required).`,
        );
    }
    if (spec && DRAFTER_ALGORITHMS.includes(spec.algorithm) && spec.draftModelPath === undefined) {
        f.warn(
            `${pulumiKey("service.speculative.draftModelPath")} is not set with ${spec.algorithm}: SGLang loads the served model as the drafter; set the drafter's folder.`,
        );
    }
}

/** Algorithms that draft with a separate checkpoint (EAGLE and NEXTN draft with the model's own MTP head without one). */
const DRAFTER_ALGORITHMS = ["EAGLE3", "STANDALONE"];

function valueOfKey(service: ServiceConfig, key: ServerArgsKey, interval: { value: number; index: number } | undefined): unknown {
    switch (key) {
        case "service.mambaSchedulerStrategy":
            return service.mambaSchedulerStrategy;
        case "service.mambaTrackInterval":
            return interval ? service.extraArgs[interval.index] : undefined;
        case "service.environment":
            return service.environment[SPEC_V2_ENV];
        default:
            return service.speculative?.[key.slice("service.speculative.".length) as keyof NonNullable<ServiceConfig["speculative"]>];
    }
}

function shownValue(value: unknown): string {
    if (value === undefined) return "unset";
    return typeof value === "string" ? value : JSON.stringify(value);
}

/** The stack's own hints for a refused algorithm: MTP is not a value, choices are case-sensitive. */
function algorithmHint(algorithm: string, allowed: readonly string[]): string {
    if (algorithm.toUpperCase() === "MTP") return "\n       MTP is not a value: NEXTN uses the model's own MTP head.";
    const caseFix = allowed.find((a) => a.toLowerCase() === algorithm.toLowerCase());
    if (caseFix) return `\n       SGLang's choices are case-sensitive: write ${caseFix}.`;
    if (algorithm === "DFLASH") return "\n       DFLASH is a choice from SGLang 0.5.11 on: upgrade, or serve the drafter with EAGLE3.";
    return "";
}

function environmentRule(service: ServiceConfig, f: Findings): void {
    for (const [name, value] of Object.entries(service.environment)) {
        const path = `service.environment.${name}`;
        if (!ENV_NAME.test(name)) {
            f.issue(path, value, `${path}: the variable name must be letters, digits and _ (not starting with a digit): rename it.`);
            continue;
        }
        if (name === API_KEY_ENV) {
            f.issue(
                path,
                "[secret]",
                `${path} must not be set here: the API key is a secret, set it with \`pulumi config set --secret ${pulumiKey("apiKey")}\` (it goes to the 0600 EnvironmentFile, never into the unit).`,
            );
            continue;
        }
        if (!SAFE_VALUE.test(value)) {
            f.issue(
                path,
                value,
                `${path} must be letters, digits and ._/@+,=:%- only (no spaces, quotes, $, \\ or control characters), so it is safe in the unit file: change the value.`,
            );
            continue;
        }
    }
}

function extraArgsRule(service: ServiceConfig, f: Findings): void {
    const seen = new Set<string>();
    service.extraArgs.forEach((arg, i) => {
        const path = `service.extraArgs[${i}]`;
        const flag = arg.split("=")[0];
        const owner = OWNED_FLAGS[flag];
        if (owner) {
            f.issue(path, arg, `${path} sets ${flag}, which the typed config owns: use ${owner} instead and remove it from extraArgs.`);
            return;
        }
        // argparse accepts unambiguous prefixes, so `--mem-frac` would still set an owned flag.
        const shadowed = Object.keys(OWNED_FLAGS).find((owned) => owned.startsWith(flag));
        if (shadowed) {
            f.issue(
                path,
                arg,
                `${path}: SGLang's argparse reads ${flag} as an abbreviation of ${shadowed}, which the typed config owns: use ${OWNED_FLAGS[shadowed]} instead.`,
            );
            return;
        }
        if (seen.has(flag)) {
            f.issue(path, arg, `${path} repeats ${flag}: keep one (argparse silently keeps the last).`);
        }
        seen.add(flag);
    });
}

function gpuCountRule(input: RuleInput, f: Findings): number | undefined {
    const { host, container, service } = input;
    if (!host) return undefined;
    if (container) {
        const seen = new Set<number>();
        container.gpus.forEach((index, i) => {
            const path = `container.gpus[${i}]`;
            if (index >= host.gpus.count) {
                f.issue(
                    path,
                    index,
                    `${path} is GPU ${index} but host.gpus.count is ${host.gpus.count} (indices 0..${host.gpus.count - 1}): pass through an existing GPU.`,
                );
            }
            if (seen.has(index)) f.issue(path, index, `${path} lists GPU ${index} twice: remove the duplicate.`);
            seen.add(index);
        });
    }
    const usable = host.topology === "pct-exec" ? container?.gpus.length : host.gpus.count;
    if (!service || usable === undefined) return usable;
    if (service.tensorParallelSize > usable) {
        const where = host.topology === "pct-exec" ? `container.gpus passes ${usable} GPU(s) to the container` : `host.gpus.count is ${usable}`;
        f.issue(
            "service.tensorParallelSize",
            service.tensorParallelSize,
            `service.tensorParallelSize is ${service.tensorParallelSize} but ${where}: lower tensorParallelSize or pass more GPUs through.`,
            ["host.gpus", "container.gpus"],
        );
    }
    return usable;
}

/** Whether the weights over `tp` GPUs plus the reserve fit each GPU's static pool. */
export function staticPoolFit(
    weightsGB: number,
    memFractionStatic: number | undefined,
    memoryMiB: number,
    tp: number,
): { needGiB: number; budgetGiB: number; fits: boolean } {
    const fraction = memFractionStatic ?? ASSUMED_AUTO_MEM_FRACTION;
    const weightsGiB = (weightsGB * 1e9) / tp / GIB;
    const needGiB = weightsGiB + STATIC_POOL_RESERVE_GIB;
    const budgetGiB = (fraction * memoryMiB * MIB) / GIB;
    return { needGiB, budgetGiB, fits: needGiB <= budgetGiB };
}

function memoryRule(input: RuleInput, usableGpus: number | undefined, f: Findings): void {
    const { host, service } = input;
    if (!host || !service) return;
    const tp = service.tensorParallelSize;
    const weightsGB = service.model.weightsGB;
    if (weightsGB === undefined) return; // taken from the box: the service provider checks it there (core/box-facts.ts)
    const { needGiB, budgetGiB, fits } = staticPoolFit(weightsGB, service.memFractionStatic, host.gpus.memoryMiB, tp);
    if (fits) return;
    const fractionText =
        service.memFractionStatic === undefined
            ? `SGLang's automatic mem fraction (about ${ASSUMED_AUTO_MEM_FRACTION})`
            : `memFractionStatic ${service.memFractionStatic}`;
    const maxTp = usableGpus ?? host.gpus.count;
    let suggestion = "use a smaller or quantized model, or GPUs with more memory";
    for (let candidate = tp + 1; candidate <= maxTp; candidate++) {
        if (staticPoolFit(weightsGB, service.memFractionStatic, host.gpus.memoryMiB, candidate).fits) {
            suggestion = `set tensorParallelSize: ${candidate}`;
            break;
        }
    }
    f.issue(
        "service.tensorParallelSize",
        tp,
        `service.model.weightsGB ${service.model.weightsGB} GB over tensorParallelSize ${tp} does not fit: each GPU needs ${needGiB.toFixed(1)} GiB ` +
            `(weights plus the ${STATIC_POOL_RESERVE_GIB} GiB reserve for the KV cache and Mamba state) but ${fractionText} of one ` +
            `${(host.gpus.memoryMiB / 1024).toFixed(1)} GiB GPU (host.gpus.memoryMiB ${host.gpus.memoryMiB}) is ${budgetGiB.toFixed(1)} GiB: ${suggestion}.`,
        ["service.memFractionStatic", "service.model.weightsGB", "host.gpus", "container.gpus"],
    );
}

function listenRule(service: ServiceConfig, f: Findings): void {
    const listen = service.listenHost ?? DEFAULT_LISTEN_HOST;
    if (isLoopback(listen) && !isLoopback(service.endpointHost)) {
        f.issue(
            "service.listenHost",
            service.listenHost,
            `service.listenHost is ${service.listenHost ?? `unset (SGLang listens on ${DEFAULT_LISTEN_HOST})`}, so the server is unreachable at endpointHost ${service.endpointHost}: set listenHost: 0.0.0.0 or the container's address.`,
            ["service.endpointHost"],
        );
    }
}

/** A server other machines can reach must authenticate, unless the config says it need not. */
function authenticationRule(input: RuleInput, f: Findings): void {
    const { service } = input;
    if (!service) return;
    const listen = service.listenHost ?? DEFAULT_LISTEN_HOST;
    if (input.apiKeyGiven) {
        if (service.allowUnauthenticated) {
            f.warn(`${pulumiKey("service.allowUnauthenticated")} is true but an API key is set: the key is used and the server authenticates.`);
        }
        return;
    }
    if (isLoopback(listen)) return;
    if (service.allowUnauthenticated) {
        f.warn(
            `The server listens on ${listen}:${service.port} without an API key (${pulumiKey("service.allowUnauthenticated")}: true): ` +
                "anyone who reaches that port can use it.",
        );
        return;
    }
    f.issue(
        "apiKey",
        undefined,
        `apiKey is not set but service.listenHost is ${listen}: the server would answer anyone who reaches port ${service.port} without authentication. ` +
            `Set the secret (${API_KEY_SET_HELP}) or ${pulumiKey("generateApiKey")}: true; or listen on 127.0.0.1; ` +
            "or, if an open endpoint is really intended, set service.allowUnauthenticated: true.",
        ["service.listenHost", "service.allowUnauthenticated", "service.port"],
    );
}

function readinessRule(readiness: ReadinessConfig, f: Findings): void {
    if (readiness.startupTimeoutSeconds < readiness.probeTimeoutSeconds) {
        f.issue(
            "readiness.startupTimeoutSeconds",
            readiness.startupTimeoutSeconds,
            `readiness.startupTimeoutSeconds (${readiness.startupTimeoutSeconds}) is shorter than one probe (probeTimeoutSeconds ${readiness.probeTimeoutSeconds}): allow about 900 s for loading and CUDA-graph capture.`,
        );
    }
    const { minHealthySeconds: window, pollIntervalSeconds: poll } = readiness;
    if (window > 0 && window < 2 * poll) {
        f.issue(
            "readiness.minHealthySeconds",
            window,
            `readiness.minHealthySeconds (${window}) is shorter than two polls (pollIntervalSeconds ${poll}): the healthy window would see one poll at most. ` +
                `Use at least ${2 * poll} s (the default 30 covers SGLang's 20 s health-check timeout), or 0 to turn the window off.`,
            ["readiness.pollIntervalSeconds"],
        );
    }
}

function applyRules(input: RuleInput, f: Findings): void {
    topologyRule(input, f);
    sshKeyRule(input, f);
    const { service, readiness } = input;
    if (service) {
        versionRule(service, f);
        environmentRule(service, f);
        serverArgsRule(service, f);
        extraArgsRule(service, f);
        listenRule(service, f);
    }
    authenticationRule(input, f);
    const usable = gpuCountRule(input, f);
    memoryRule(input, usable, f);
    if (readiness) readinessRule(readiness, f);
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

/**
 * A section with its bad values taken out (unknown keys and invalid leaves
 * removed, so defaults apply), parsed again: lets the cross-field rules run
 * on a section with a typo, so one pass reports every problem. Undefined
 * when the section still does not parse (e.g. a required key was bad).
 */
function salvageSection(schema: z.ZodType, section: unknown, issues: readonly z.core.$ZodIssue[]): { data: unknown; removed: PropertyKey[][] } | undefined {
    if (!isRecord(section)) return undefined;
    const copy: unknown = structuredClone(section);
    const removed: PropertyKey[][] = [];
    const HOLE = Symbol("removed");
    const remove = (path: readonly PropertyKey[]) => {
        const parent = valueAt(copy, path.slice(0, -1));
        if (parent === null || typeof parent !== "object") return;
        (parent as Record<PropertyKey, unknown>)[path[path.length - 1]] = HOLE;
        removed.push([...path]);
    };
    for (const issue of issues) {
        if (issue.code === "unrecognized_keys") issue.keys.forEach((key) => remove([...issue.path, key]));
        else if (issue.path.length > 0) remove(issue.path);
    }
    const result = schema.safeParse(withoutHoles(copy, HOLE));
    return result.success ? { data: result.data, removed } : undefined;
}

function withoutHoles(value: unknown, hole: symbol): unknown {
    if (Array.isArray(value)) return value.filter((v) => v !== hole).map((v) => withoutHoles(v, hole));
    if (isRecord(value)) {
        return Object.fromEntries(
            Object.entries(value)
                .filter(([, v]) => v !== hole)
                .map(([k, v]) => [k, withoutHoles(v, hole)]),
        );
    }
    return value;
}

/**
 * Validates a stack's config: `raw` holds the sections without the
 * `sglang-serve:` prefix (`{ host, container, service, readiness, apiKey?,
 * sshPrivateKey? }`). Returns every problem, never just the first.
 * `where` says what the caller knows of the machine that will run the
 * providers (whether an ssh-agent runs there).
 */
export function validateStackConfig(raw: unknown, where: { sshAgentAvailable?: boolean } = {}): ValidationResult {
    const findings = new Findings();
    if (!isRecord(raw)) {
        findings.issue("", raw, `the ${CONFIG_NAMESPACE} config must be a map of sections (host, container, service, readiness).`);
        return { ok: false, issues: findings.issues, warnings: findings.warnings };
    }
    const known: readonly string[] = SECTION_NAMES;
    for (const key of Object.keys(raw)) {
        if (!known.includes(key) && raw[key] !== undefined) findings.issues.push(unknownKeyIssue([], key, known, raw));
    }
    const parsed: Partial<Record<SectionName, unknown>> = {};
    const forRules: Partial<Record<SectionName, unknown>> = {};
    const removed: string[] = [];
    let allParsed = true;
    for (const name of SECTION_NAMES) {
        const schema = StackConfigSchema.shape[name];
        const result = schema.safeParse(raw[name], { error: errorMap });
        if (result.success) {
            parsed[name] = result.data;
            forRules[name] = result.data;
            continue;
        }
        allParsed = false;
        findings.issues.push(...fromZodIssues(result.error.issues, [name], raw));
        const salvaged = salvageSection(schema, raw[name], result.error.issues);
        if (salvaged) {
            forRules[name] = salvaged.data;
            removed.push(...salvaged.removed.map((p) => formatPath([name, ...p])));
        }
    }
    const ruleFindings = new Findings();
    applyRules(
        {
            host: forRules.host as HostConfig | undefined,
            container: forRules.container as ContainerConfig | undefined,
            containerGiven: raw.container !== undefined,
            service: forRules.service as ServiceConfig | undefined,
            readiness: forRules.readiness as ReadinessConfig | undefined,
            sshPrivateKeyGiven: raw.sshPrivateKey !== undefined,
            apiKeyGiven: raw.apiKey !== undefined || raw.generateApiKey === true,
            sshAgentAvailable: where.sshAgentAvailable,
        },
        ruleFindings,
    );
    // A rule about a value already reported (and set aside to run the rules) would only repeat it.
    const within = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`);
    const underRemoved = (path: string) => removed.some((r) => within(path, r) || within(r, path));
    const stillValid = (issue: ConfigIssue) => ![issue.path, ...(ruleFindings.dependsOn.get(issue) ?? [])].some(underRemoved);
    findings.issues.push(...ruleFindings.issues.filter(stillValid));
    findings.warnings.push(...ruleFindings.warnings);
    if (findings.issues.length > 0 || !allParsed) {
        return { ok: false, issues: findings.issues, warnings: findings.warnings };
    }
    const config = Object.fromEntries(Object.entries(parsed).filter(([, v]) => v !== undefined)) as StackConfig;
    return { ok: true, config, warnings: findings.warnings };
}
