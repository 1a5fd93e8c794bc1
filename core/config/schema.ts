/**
 * The shape of a stack's config: one zod schema per section, with its
 * defaults, and the types the rest of the stack reads (the parsed output).
 * The values each key accepts are core/config/values.ts; the rules that span
 * fields are core/config/rules.ts; core/config/config.ts validates with both.
 */
import { z } from "zod";
import { fromBooleanString, fromNumericString } from "./scalars";
import {
    absolutePath,
    ARCHITECTURE,
    DNS_NAME,
    GPU_NAME,
    hostAddress,
    hostKeyProblem,
    INTERFACE_NAME,
    isIpv4,
    isIpv4Cidr,
    KEY_PATH,
    LABEL,
    port,
    SERVED_NAME,
    SERVICE_NAME,
    STACK_REF,
    USER_NAME,
    VERSION,
} from "./values";
import { extraArgsShapeProblems } from "../sglang/extra-args";
import { pipArg, pipFindLinks, pipIndexUrl } from "../venv/pip-sources";
import { DEFAULT_PORT, HEALTH_CHECK_TIMEOUT_SECONDS, MAMBA_SCHEDULER_STRATEGIES, MIN_PROBE_TIMEOUT_SECONDS } from "../sglang/rules";
import { DEFAULT_ACCEPT_LENGTH_DROP_LIMIT, DEFAULT_THROUGHPUT_DROP_LIMIT } from "../serving/serving-figures";
import { FILE_PATTERN, HF_REPO_ID, hubEndpointProblem, REVISION_TEXT } from "../weights/hf-source";
import { DEFAULT_MODELS_ROOT } from "../weights/weights-layout";
import { folderShapeProblems, modelsRoot, servedFolder } from "../weights/model-folders";

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

const FilePatternsSchema = z
    .array(
        z.string().regex(FILE_PATTERN, { error: "must be a huggingface_hub file pattern (fnmatch: letters, digits and _.*?[]!/- only, e.g. *.safetensors)" }),
    )
    .min(1, { error: "must list at least one pattern, or be left out" });

/**
 * A pinned source of weights (core/weights/): a Hugging Face model repository
 * at one commit, staged by the stack on the box in
 * `<service.weights.root>/<org>--<name>/<revision>` and verified against the
 * Hub's hashes before anything stops. The token never goes here: HF_TOKEN in
 * service.secretEnvironment.
 */
export const WeightsSourceSchema = z.strictObject({
    hf: z.string().regex(HF_REPO_ID, { error: 'must be a Hugging Face model repository as "org/name" (e.g. Qwen/Qwen3-8B)' }),
    /** The full 40-hex commit id (core/weights/config-rules.ts refuses a branch, a tag or an abbreviated commit, with the commit to pin). */
    revision: z.string().regex(REVISION_TEXT, { error: "must be the repository's full 40-hex commit id (letters, digits and ._/- only)" }),
    /** Only files matching one of these are fetched (huggingface_hub's allow_patterns, fnmatch); left out: every file. */
    allowPatterns: FilePatternsSchema.optional(),
    /** Files matching one of these are not fetched (ignore_patterns). */
    ignorePatterns: FilePatternsSchema.optional(),
    /** A mirror's URL (huggingface_hub's endpoint); left out: https://huggingface.co. */
    endpoint: z
        .string()
        .superRefine((url, ctx) => {
            const problem = hubEndpointProblem(url);
            if (problem) ctx.addIssue({ code: "custom", message: problem });
        })
        .optional(),
    /** Refused: named here only so the message says where the token goes, and its value is never printed (core/config/issues.ts). */
    token: z
        .unknown()
        .superRefine((value, ctx) => {
            if (value !== undefined) {
                ctx.addIssue({
                    code: "custom",
                    message:
                        "must not be set: config lands in the state and every preview. Remove it, add HF_TOKEN to service.secretEnvironment " +
                        "and give its value to the deploy in SGLANG_SERVE_SECRET_ENVIRONMENT (HF_TOKEN=...): it reaches the box's 0600 files only",
                });
            }
        })
        .optional(),
});

/**
 * Where pip installs a venv's packages from, as a venv section declares it:
 * service.venv's (and gateway.venv's) sources, and service.weights.pip's,
 * declared once here so both are held to the same rules (core/venv/pip-sources.ts).
 */
const PIP_SOURCE_FIELDS = {
    /** The venv sees the box's system site-packages (`python3 -m venv --system-site-packages`), e.g. a torch the box's image installed. */
    systemSitePackages: fromBooleanString(z.boolean()).default(false),
    /** pip's --index-url; unset: the box's pip configuration (PyPI by default). https:// only (http on a loopback host), no credentials (core/venv/pip-sources.ts). */
    indexUrl: pipIndexUrl().optional(),
    /** pip's --extra-index-url, e.g. the PyTorch index for a CUDA build of torch. */
    extraIndexUrls: z.array(pipIndexUrl()).default([]),
    /** pip's --find-links: wheelhouse folders on the box (or URLs of them). */
    findLinks: z.array(pipFindLinks()).default([]),
    /** Further pip install options, e.g. --no-deps where the dependencies come from the system site-packages; never a source or an install target (core/venv/pip-sources.ts). */
    pipArgs: z.array(pipArg()).default([]),
};

/**
 * Where pip installs the stack's huggingface_hub venv from (core/weights/hub-venv.ts),
 * when it is not service.venv's sources: a box without service.venv (service.python)
 * and without PyPI declares its index or wheelhouse here. Declared, it replaces
 * service.venv's sources for the hub venv as a whole (no field is merged).
 */
export const WeightsPipSchema = z.strictObject(PIP_SOURCE_FIELDS);

/** Where the stack stages the weights of declared sources on the box, and how many old revisions it keeps. */
export const WeightsSchema = z.strictObject({
    /** Revision folders go to `<root>/<org>--<name>/<revision>`. */
    root: absolutePath().default(DEFAULT_MODELS_ROOT),
    /** Revisions this stack staged, beyond the serving ones and any a unit (or its .previous) names, kept after a good rollout (newest first), per repository. */
    keepPrevious: fromNumericString(z.int().min(0).max(20)).default(1),
    /** Where pip installs the huggingface_hub venv from; left out: service.venv's sources when it is declared, else the box's pip configuration (PyPI by default). */
    pip: WeightsPipSchema.optional(),
    /** The download and verification's budget. */
    downloadTimeoutSeconds: fromNumericString(
        z
            .int()
            .min(60)
            .max(7 * 86400),
    ).default(86400),
});

export const SpeculativeSchema = z
    .strictObject({
        /** Checked against the SGLang version by the rules (case-sensitive, like argparse). */
        algorithm: z.string().regex(/^[A-Za-z0-9_]{1,32}$/, { error: "must be an algorithm name such as NEXTN or EAGLE3" }),
        /** Filled from draftModelSource when that is declared (core/weights/model-folders.ts). */
        draftModelPath: absolutePath().optional(),
        /** The drafter pinned to a commit of a Hugging Face repository, staged by the stack (instead of draftModelPath). */
        draftModelSource: WeightsSourceSchema.optional(),
        /**
         * Pins the drafter: the folder's digest as the stack reads it (config.json
         * and the weights' names, sizes and times; core/box/box-facts.ts folderDigest),
         * which the preview prints. A folder that holds another is refused at
         * preview and before a rollout stops anything.
         */
        draftModelDigest: z
            .string()
            .regex(/^[0-9a-f]{32}$/, { error: "must be the drafter folder's digest as the preview prints it (32 lowercase hex digits)" })
            .optional(),
        numSteps: fromNumericString(z.int().min(1).max(64)).optional(),
        eagleTopk: fromNumericString(z.int().min(1).max(64)).optional(),
        numDraftTokens: fromNumericString(z.int().min(1).max(1024)).optional(),
    })
    .refine((s) => s.draftModelDigest === undefined || s.draftModelPath !== undefined || s.draftModelSource !== undefined, {
        error: "pins the folder at draftModelPath, which is not set: set draftModelPath or remove draftModelDigest",
        path: ["draftModelDigest"],
    });

export const ModelSchema = z.strictObject({
    /** A folder on the box managed by hand; or `source`, and the schema fills this with its revision folder (core/weights/model-folders.ts). */
    path: absolutePath().optional(),
    /** The model pinned to a commit of a Hugging Face repository, staged by the stack (instead of path). */
    source: WeightsSourceSchema.optional(),
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

/**
 * The venvs the stack owns on the box, one per release (core/venv/venv-layout.ts):
 * `<root>/venv-<version>`, or an existing venv adopted as it is. Declaring a
 * new sglangVersion installs its venv with pip while the running server
 * serves, before anything stops.
 */
export const VenvSchema = z.strictObject({
    root: absolutePath(),
    /** Existing venvs taken as they are, by release (`"0.5.11": /opt/sglang/venv`): never reinstalled, never removed. */
    adopt: z.record(z.string().regex(VERSION, { error: "must be a release as major.minor.patch (e.g. 0.5.11)" }), absolutePath()).default({}),
    /** The interpreter that makes a venv (`<basePython> -m venv`); Debian's needs the python3-venv package. */
    basePython: absolutePath().default("/usr/bin/python3"),
    ...PIP_SOURCE_FIELDS,
    /** Requirements installed with the release, `name==version` (e.g. torch==2.9.1, flashinfer-python==0.5.3): the heavy dependencies pinned. */
    pins: z
        .array(
            z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!-]+$/, {
                error: "must be a pinned requirement as name==version (e.g. torch==2.9.1)",
            }),
        )
        .default([]),
    /** Venvs this stack installed, beyond the serving one and any a unit on the box still runs, kept after a successful rollout (newest first). */
    keepPrevious: fromNumericString(z.int().min(0).max(20)).default(1),
    /** The install's budget (pip downloads and unpacks the release and its pins). */
    installTimeoutSeconds: fromNumericString(z.int().min(60).max(86400)).default(1800),
});

const ServiceFieldsSchema = z.strictObject({
    /** Unit sglang-<name>.service, environment file /etc/sglang/<name>.env. */
    name: z.string().regex(SERVICE_NAME, { error: "must be a lowercase name (letters, digits, '-'), at most 40 characters; it names sglang-<name>.service" }),
    sglangVersion: z.string().regex(VERSION, { error: "must be an installed SGLang release as major.minor.patch (e.g. 0.5.11)" }),
    /** The venv's python; `sglang` is taken from beside it. Or `venv`: the stack stages one per release. */
    python: absolutePath().optional(),
    venv: VenvSchema.optional(),
    launcher: z.enum(["auto", "serve", "launch_server"]).default("auto"),
    model: ModelSchema,
    tensorParallelSize: fromNumericString(z.int().min(1).max(64)).default(1),
    /** The box this server runs on: its host.name in `boxes`. Left out: the stack's one box. */
    box: z.string().regex(LABEL, { error: "must be the host.name of one of the stack's boxes" }).optional(),
    /**
     * The GPUs this server uses, as nvidia-smi numbers them where the server
     * runs (in the container: 0 to the number of container.gpus - 1). The
     * unit then sees only these (CUDA_VISIBLE_DEVICES, in nvidia-smi's PCI
     * order) and a stop waits for these GPUs' memory only. Unset: every GPU
     * of the box, and the unit sets neither variable.
     */
    gpus: z
        .array(fromNumericString(z.int().min(0).max(63)))
        .min(1, { error: "must list at least one GPU index (e.g. [0]), or be left out for every GPU of the box" })
        .optional(),
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
    /**
     * Further SGLang flags, an argv fragment passed unchanged (core/sglang/extra-args.ts):
     * `--flag`, `--flag=value`, or `--flag` followed by its value elements.
     */
    extraArgs: z
        .array(z.string())
        .superRefine((tokens, ctx) => {
            for (const problem of extraArgsShapeProblems(tokens, "service.extraArgs")) {
                ctx.addIssue({ code: "custom", message: problem.message, path: [problem.index], input: tokens[problem.index] });
            }
        })
        .default([]),
    /** Plain environment for the server, written into the 0644 unit: names that look like secrets are refused (use secretEnvironment). */
    environment: z.record(z.string(), z.string()).default({}),
    /**
     * Names of the server's secret environment variables. Their values come
     * from SGLANG_SERVE_SECRET_ENVIRONMENT (`NAME=value` lines) in the deploy
     * run and go only to the 0600 EnvironmentFile (core/secrets/deploy-secrets.ts).
     */
    secretEnvironment: z.array(z.string()).default([]),
    /**
     * The server requires `Authorization: Bearer <key>`. The key's value comes
     * from SGLANG_SERVE_API_KEY in the deploy run, never from Pulumi config
     * (core/secrets/deploy-secrets.ts); SGLang reads it from a 0600 config file.
     */
    requireApiKey: fromBooleanString(z.boolean()).default(false),
    /** Says that a server on a non-loopback address without an API key is intended. */
    allowUnauthenticated: fromBooleanString(z.boolean()).default(false),
    /** The stack (`<stack>` or `<project>/<stack>`) whose unit on the box this stack may take over. */
    takeOverFrom: z
        .string()
        .regex(STACK_REF, { error: "must be the stack that owns the unit now, as `<stack>` or `<project>/<stack>` (the name the refusal message gives)" })
        .optional(),
    /** Where declared sources (model.source, speculative.draftModelSource) are staged; left out: /models, one previous revision kept. */
    weights: WeightsSchema.optional(),
});

/**
 * A server: its fields, the model and drafter each a folder or a pinned
 * source (exactly one), and then `model.path` (and
 * `speculative.draftModelPath`) filled with the source's revision folder, so
 * every reader of the path reads the folder the server serves.
 */
export const ServiceSchema = ServiceFieldsSchema.superRefine((service, ctx) => {
    for (const problem of folderShapeProblems(service)) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
}).transform((service) => {
    const root = modelsRoot(service);
    const model = { ...service.model, path: servedFolder(service.model, root) };
    const spec = service.speculative;
    if (spec?.draftModelSource === undefined) return { ...service, model };
    return { ...service, model, speculative: { ...spec, draftModelPath: servedFolder({ path: spec.draftModelPath, source: spec.draftModelSource }, root) } };
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
     * crashes seconds after ready. docs/rollout.md, "The healthy window and start attempts".
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
    /**
     * A change is kept only if its speculative accept length (SGLang's
     * avg_spec_accept_length after ready) is at most this share below the last
     * good config's, recorded by the rollout that verified it (core/serving/serving-figures.ts).
     * Default 0.1 (10%); 1 accepts any figure.
     */
    acceptLengthDropLimit: fromNumericString(
        z
            .number({ error: "must be a share between 0 and 1 (0.1 = 10%)" })
            .min(0, { error: "must be a share between 0 and 1 (0.1 = 10%)" })
            .max(1, { error: "must be a share between 0 and 1 (0.1 = 10%; 1 accepts any figure)" }),
    ).default(DEFAULT_ACCEPT_LENGTH_DROP_LIMIT),
    /**
     * The serving-quality gate: after ready, the prompt set goes to /generate
     * and its figures (accept length, output throughput; per bucket) are held
     * to the floor and to the last good config's (core/serving/serving-quality.ts).
     * Off: only the accept length /server_info reports is held to the last good one.
     */
    servingCheck: fromBooleanString(z.boolean()).default(true),
    /** Replaces the shipped prompt set (core/serving/serving-prompts.ts). */
    servingPrompts: z
        .array(
            z.strictObject({
                bucket: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, { error: "must be a short lowercase name such as code, prose or long-context" }),
                text: z.string().min(1, { error: "must be the prompt's text" }),
                maxNewTokens: fromNumericString(
                    z.int().min(16, { error: "must be at least 16 tokens: SGLang's figures need a few verify steps" }).max(4096),
                ).default(128),
            }),
        )
        .min(1, { error: "must hold at least one prompt (or set readiness.servingCheck: false)" })
        .optional(),
    /** The lowest accept length a speculative change may serve with; unset: a default per algorithm and step count (core/serving/serving-quality.ts). */
    acceptLengthFloor: fromNumericString(
        z
            .number({ error: "must be an accept length such as 2.5 (tokens per verify step)" })
            .min(1, { error: "must be at least 1 (one token per step: no drafter at all)" }),
    ).optional(),
    /** A change is kept only if its output throughput over the prompt set is at most this share below the last good config's. Default 0.1. */
    throughputDropLimit: fromNumericString(
        z
            .number({ error: "must be a share between 0 and 1 (0.1 = 10%)" })
            .min(0, { error: "must be a share between 0 and 1 (0.1 = 10%)" })
            .max(1, { error: "must be a share between 0 and 1 (0.1 = 10%; 1 accepts any figure)" }),
    ).default(DEFAULT_THROUGHPUT_DROP_LIMIT),
});

/** smg's load-balancing policies (`smg launch --policy`, smg 1.13.0). */
export const GATEWAY_POLICIES = ["cache_aware", "round_robin", "random", "power_of_two", "least_load", "consistent_hashing", "prefix_hash"] as const;

/**
 * SGLang's model gateway (`smg` on PyPI) in front of the stack's servers:
 * installed into a venv of its own on a box, run as a systemd unit, each
 * server registered as a worker through its admin API (core/gateway/gateway.ts).
 */
export const GatewaySchema = z.strictObject({
    /** Unit sglang-<name>.service, admin key in /etc/sglang/<name>.env; not a server's name. */
    name: z.string().regex(SERVICE_NAME, { error: "must be a lowercase name (letters, digits, '-'); it names sglang-<name>.service" }).default("gateway"),
    /** The box it runs on (a box's host.name); left out: the stack's one box. */
    box: z.string().regex(LABEL, { error: "must be the host.name of one of the stack's boxes" }).optional(),
    smgVersion: z.string().regex(VERSION, { error: "must be an smg release on PyPI as major.minor.patch (e.g. 1.13.0)" }),
    /** Where smg is installed: `<root>/venv-<smgVersion>` (or an adopted venv), as service.venv does for SGLang. */
    venv: VenvSchema,
    policy: z.enum(GATEWAY_POLICIES).default("cache_aware"),
    /** `--host`; 127.0.0.1 when unset. */
    listenHost: hostAddress().optional(),
    port: port().default(30080),
    /** Where clients and the stack reach it. */
    endpointHost: hostAddress(),
    /** smg always serves Prometheus metrics: on 127.0.0.1 at this port. */
    prometheusPort: port().default(29000),
    /** How smg checks each worker's /health; a worker is Ready after successThreshold passes and NotReady after failureThreshold failures. */
    healthCheck: z
        .strictObject({
            intervalSeconds: fromNumericString(z.int().min(1).max(3600)).default(10),
            timeoutSeconds: fromNumericString(z.int().min(1).max(600)).default(5),
            failureThreshold: fromNumericString(z.int().min(1).max(100)).default(3),
            successThreshold: fromNumericString(z.int().min(1).max(100)).default(2),
        })
        .prefault({}),
    /** The servers behind it, by name; left out: every server of the stack. */
    workers: z
        .array(z.string().regex(SERVICE_NAME, { error: "must be a server's name" }))
        .min(1)
        .optional(),
    /**
     * How a change to the servers behind it rolls out: at most maxUnavailable
     * of them out of the gateway at once (in the order of `servers`), each
     * taken out, drained to no request in flight by SGLang's own count
     * (/v1/loads) or for drainTimeoutSeconds, rolled out, and put back.
     */
    rolling: z
        .strictObject({
            maxUnavailable: fromNumericString(z.int().min(1, { error: "must be at least 1: one server out of the gateway at a time" }).max(64)).default(1),
            drainTimeoutSeconds: fromNumericString(z.int().min(0).max(86400)).default(300),
        })
        .prefault({}),
});

/** A machine the stack runs servers on: the GPU host and, with pct-exec, its LXC container. */
export const BoxSchema = z.strictObject({
    host: HostSchema,
    /** Required for topology pct-exec, absent for direct. */
    container: ContainerSchema.optional(),
});

/**
 * The config's sections as Pulumi holds them. A stack declares one box
 * (`host` and `container`) or several (`boxes`), and one server (`service`)
 * or several (`servers`, each entry a whole service with its own name, port,
 * GPUs and box): exactly one of each pair (core/config/rules.ts).
 */
export const StackConfigSchema = z.strictObject({
    host: HostSchema.optional(),
    /** Required for topology pct-exec, absent for direct. */
    container: ContainerSchema.optional(),
    boxes: z.array(BoxSchema).min(1, { error: "must list at least one box (or use host and container for one)" }).optional(),
    service: ServiceSchema.optional(),
    servers: z.array(ServiceSchema).min(1, { error: "must list at least one server (or use service for one)" }).optional(),
    gateway: GatewaySchema.optional(),
    readiness: ReadinessSchema.prefault({}),
});

type StackConfigSections = z.output<typeof StackConfigSchema>;
/**
 * The validated config: `host` and `container` or `boxes` as one list of
 * boxes, `service` or `servers` as one list of servers, each naming its box
 * (`box`, the box's host.name), in declared order.
 */
export type StackConfig = Pick<StackConfigSections, "readiness"> & { boxes: BoxConfig[]; servers: ServerConfig[]; gateway?: GatewayConfig };
/** The validated gateway: its box always named, its workers always listed. */
export type GatewayConfig = z.output<typeof GatewaySchema> & { box: string; workers: string[] };
export type BoxConfig = z.output<typeof BoxSchema>;
/** A server of the validated config: its box always named. */
export type ServerConfig = ServiceConfig & { box: string };
export type HostConfig = z.output<typeof HostSchema>;
export type ContainerConfig = z.output<typeof ContainerSchema>;
export type ServiceConfig = z.output<typeof ServiceSchema>;
export type SpeculativeConfig = z.output<typeof SpeculativeSchema>;
export type VenvConfig = z.output<typeof VenvSchema>;
export type WeightsSourceConfig = z.output<typeof WeightsSourceSchema>;
export type WeightsConfig = z.output<typeof WeightsSchema>;
export type WeightsPipConfig = z.output<typeof WeightsPipSchema>;
/** The stack's readiness section, in seconds (the state machine's own timings are ReadinessTimings, core/readiness/readiness.ts). */
export type ReadinessConfig = z.output<typeof ReadinessSchema>;
export type Topology = HostConfig["topology"];

/** Config keys that hold secrets: their values are never printed. */
export const SECRET_CONFIG_KEYS: readonly string[] = ["sshPrivateKey", "sshPrivateKeyPassphrase", "apiKey"];
/** Keys at any depth whose values are never printed either (a token put where it does not belong: service.model.source.token). */
export const SECRET_CONFIG_LEAVES: readonly string[] = ["token"];

/**
 * Secrets older versions took as Pulumi config, refused now: any Pulumi
 * secret lands in the state (the dynamic providers' default provider records
 * the whole stack config as its inputs), which every job that loads the state
 * can decrypt, pull-request previews included (issue 19). Each with its fix.
 */
export const RETIRED_SECRET_KEYS: Readonly<Record<string, string>> = {
    sshPrivateKey:
        "the deploy key must not be Pulumi config (it lands in the state, where every job that loads the state can decrypt it): " +
        "`pulumi config rm sglang-serve:sshPrivateKey`, load the key into ssh-agent (`ssh-add`) or set host.sshPrivateKeyPath, " +
        'then rotate the key (docs/operator-guide.md, "Removing a secret an older version stored").',
    sshPrivateKeyPassphrase:
        "a key passphrase must not be Pulumi config: `pulumi config rm sglang-serve:sshPrivateKeyPassphrase` and add the key to ssh-agent (`ssh-add` asks for it).",
    apiKey:
        "the API key must not be Pulumi config (it lands in the state, where every job that loads the state can decrypt it): " +
        "`pulumi config rm sglang-serve:apiKey`, set service.requireApiKey: true and give the deploy the key in SGLANG_SERVE_API_KEY, " +
        'then rotate the key (docs/operator-guide.md, "Removing a secret an older version stored").',
    generateApiKey:
        "a generated key lives in the state, where every job that loads the state can read it: remove sglang-serve:generateApiKey, " +
        "set service.requireApiKey: true and give the deploy a key in SGLANG_SERVE_API_KEY (`openssl rand -hex 32`).",
};
