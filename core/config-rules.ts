/**
 * The rules that span fields of the stack config: SGLang's own verdict on
 * the settings (the ones that crashed the server in the field, caught at
 * preview), GPUs and memory, authentication, readiness. Each runs on the
 * sections that parsed and reports under the key it is about, with the fix.
 */
import { API_KEY_SET_HELP, ENV_NAME, isLoopback } from "./config-values";
import type { ConfigIssue } from "./config-issues";
import { CONFIG_NAMESPACE, ContainerConfig, GatewayConfig, HostConfig, pulumiKey, ReadinessConfig, ServiceConfig } from "./config-schema";
import { ExtraFlag, extraFlagInteger, extraFlags, forbiddenCharacter, repeatedExtraFlags, shownExtraFlag } from "./extra-args";
import { GPU_SCOPE_ENV, unitName } from "./systemd-unit";
import { credentialValueRule, secretNameRule } from "./secret-like";
import { isPlaceholderHostKey } from "./host-key";
import { SGLANG_RELEASES, sglangRelease } from "./sglang-releases";
import { OWNED_FLAGS } from "./sglang-settings";
import { argparseOption, argparseTable, argparseVersions, judgeExtraArgs } from "./sglang-argparse";
import { describeLayout, describePlacement, parallelLayout, WeightsPlacement, weightsPerGpuGiB, weightsPlacement } from "./gpu-fit";
import {
    API_KEY_ENV,
    ASSUMED_AUTO_MEM_FRACTION,
    DEFAULT_LISTEN_HOST,
    parseSglangBool,
    readsSpecV2Env,
    SPEC_V2_ENV,
    SPEC_V2_ENV_REMOVED_IN,
} from "./sglang-rules";
import { judgeServerArgs, ServerArgsKey, specV2On } from "./sglang-server-args";

/** The stack's servers as the rules see them: each that parsed, under the key it is declared at; which sections were given at all. */
export interface ServersInput {
    given: { service: boolean; servers: boolean };
    list: Array<{ key: string; service: ServiceConfig }>;
}

/** One box as the rules see it: its host and container, and the keys they are declared at (`host`, or `boxes[1].host`). */
export interface BoxInput {
    /** `boxes[i]`; undefined for the host and container sections. */
    key?: string;
    host?: HostConfig;
    container?: ContainerConfig;
    containerGiven: boolean;
}

/** The stack's boxes: each that parsed; which sections were given at all. */
export interface BoxesInput {
    given: { host: boolean; boxes: boolean };
    list: BoxInput[];
}

/** What the rules see: each section that parsed, and which keys were given at all. */
export interface RuleInput {
    boxes: BoxesInput;
    servers: ServersInput;
    /** The gateway section as parsed (its box and workers as declared, maybe left out). */
    gateway?: Omit<GatewayConfig, "box" | "workers"> & Partial<Pick<GatewayConfig, "box" | "workers">>;
    readiness?: ReadinessConfig;
    /** SSH_AUTH_SOCK is set where the program runs; undefined when not known (render). */
    sshAgentAvailable?: boolean;
}

export class Findings {
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
    /** What the preview says without it being a problem (an info line). */
    readonly notices: string[] = [];
    note(message: string): void {
        this.notices.push(message);
    }

    /**
     * Adds these findings, written about the sections of a stack of one box
     * and one server (`host`, `container`, `service`), to `f` as findings
     * about the keys they stand for here (`servers[1]`, `boxes[0].host`): the
     * rules are written once, for those sections. `renames` maps a section
     * to its key; paths are renamed where they start with it, messages where
     * they name a key under it (`service.port`, `sglang-serve:host.address`).
     */
    copyInto(f: Findings, renames: Readonly<Record<string, string>>): void {
        const pairs = Object.entries(renames).filter(([from, to]) => from !== to);
        const path = (p: string) => {
            const pair = pairs.find(([from]) => p === from || p.startsWith(`${from}.`) || p.startsWith(`${from}[`));
            return pair ? pair[1] + p.slice(pair[0].length) : p;
        };
        // A key under the section (`service.port`), or the section as a Pulumi key (`sglang-serve:container`).
        const text = (t: string) =>
            pairs.reduce(
                (out, [from, to]) => out.replace(new RegExp(`(?<![\\w.-])${from}(?=\\.[A-Za-z]|\\[)|(?<=${CONFIG_NAMESPACE}:)${from}\\b`, "g"), to),
                t,
            );
        for (const issue of this.issues) f.issue(path(issue.path), issue.value, text(issue.message), (this.dependsOn.get(issue) ?? []).map(path));
        this.warnings.forEach((w) => f.warn(text(w)));
        this.notices.forEach((n) => f.note(text(n)));
    }
}

/** Where a box's sections are declared: `host` and `container`, or under `boxes[i]`. */
function boxRenames(box: BoxInput): Record<string, string> {
    return box.key === undefined ? {} : { host: `${box.key}.host`, container: `${box.key}.container` };
}

/** Runs every rule on the sections that parsed, into `f`. */
export function applyRules(input: RuleInput, f: Findings): void {
    boxSectionRule(input.boxes, f);
    const usable = new Map<BoxInput, number | undefined>();
    for (const box of input.boxes.list) {
        const boxFindings = new Findings();
        topologyRule(box, boxFindings);
        sshKeyRule(box, input.sshAgentAvailable, boxFindings);
        usable.set(box, containerGpusRule(box, boxFindings));
        boxFindings.copyInto(f, boxRenames(box));
    }
    serverSectionRule(input.servers, f);
    const placed: Array<{ key: string; service: ServiceConfig; box: BoxInput }> = [];
    for (const { key, service } of input.servers.list) {
        const box = boxOfServer(input.boxes, key, service, f);
        if (!box) continue;
        placed.push({ key, service, box });
        const serverFindings = new Findings();
        serverRules(box, service, usable.get(box), serverFindings);
        serverFindings.copyInto(f, { service: key, ...boxRenames(box) });
    }
    serversRule(placed, f);
    if (input.gateway) gatewayRule(input.boxes, input.gateway, placed, f);
    if (input.readiness) readinessRule(input.readiness, f);
}

/** The gateway: on a box of the stack, its own name and ports there, in front of servers of the stack that agree on the API key. */
function gatewayRule(
    boxes: BoxesInput,
    gateway: NonNullable<RuleInput["gateway"]>,
    placed: ReadonlyArray<{ key: string; service: ServiceConfig; box: BoxInput }>,
    f: Findings,
): void {
    const box = boxOfServer(boxes, "gateway", { box: gateway.box } as ServiceConfig, f);
    const named = placed.find((p) => p.service.name === gateway.name);
    if (named) {
        f.issue(
            "gateway.name",
            gateway.name,
            `gateway.name is "${gateway.name}", which ${named.key} has too: the gateway's unit is sglang-<name>.service, so give it another name.`,
        );
    }
    const ports: Array<[string, number]> = [
        ["gateway.port", gateway.port],
        ["gateway.prometheusPort", gateway.prometheusPort],
    ];
    if (gateway.port === gateway.prometheusPort)
        f.issue("gateway.prometheusPort", gateway.prometheusPort, "gateway.prometheusPort is gateway.port too: give smg's metrics a port of their own.");
    for (const [path, value] of ports) {
        const taken = placed.find((p) => p.box === box && p.service.port === value);
        if (taken) f.issue(path, value, `${path} is ${value}, which ${taken.key} listens on, on the same box: choose another port.`);
    }
    const workers = gateway.workers ?? placed.map((p) => p.service.name);
    const seen = new Set<string>();
    gateway.workers?.forEach((name, i) => {
        const path = `gateway.workers[${i}]`;
        if (seen.has(name)) f.issue(path, name, `${path} lists ${name} twice: remove the duplicate.`);
        seen.add(name);
        if (!placed.some((p) => p.service.name === name)) {
            f.issue(
                path,
                name,
                `${path} is "${name}", which is no server of the stack: use one of ${placed.map((p) => p.service.name).join(", ") || "(none)"}.`,
            );
        }
    });
    // The gateway hands the client's Authorization on to the server it picks: every server behind it must take the same key, or none.
    const behind = placed.filter((p) => workers.includes(p.service.name));
    const keyed = behind.filter((p) => p.service.requireApiKey);
    if (keyed.length > 0 && keyed.length < behind.length) {
        const open = behind.find((p) => !p.service.requireApiKey)!;
        f.issue(
            `${open.key}.requireApiKey`,
            false,
            `${open.key}.requireApiKey is false, but ${keyed[0]!.key} behind the same gateway requires the API key: the gateway passes each client's key on to the server it picks, so the servers behind it must all require the key (SGLANG_SERVE_API_KEY), or none.`,
        );
    }
    const listen = gateway.listenHost ?? DEFAULT_LISTEN_HOST;
    if (isLoopback(listen) && !isLoopback(gateway.endpointHost)) {
        f.issue(
            "gateway.listenHost",
            gateway.listenHost,
            `gateway.listenHost is ${gateway.listenHost ?? `unset (smg listens on ${DEFAULT_LISTEN_HOST} as the stack runs it)`}, so the gateway is unreachable at endpointHost ${gateway.endpointHost}: set listenHost: 0.0.0.0 or the box's address.`,
            ["gateway.endpointHost"],
        );
    }
    if (gateway.venv.adopt[gateway.smgVersion] === undefined && gateway.venv.root.replace(/\/+$/, "") === "") {
        f.issue("gateway.venv.root", gateway.venv.root, `${pulumiKey("gateway.venv.root")} must be a directory other than /: e.g. /opt/smg.`);
    }
}

/** The rules about one server on its box, written for `service`, `host` and `container`: applyRules files each under the keys they are declared at. */
function serverRules(box: BoxInput, service: ServiceConfig, usable: number | undefined, f: Findings): void {
    pythonRule(service, f);
    versionRule(service, f);
    environmentRule(service, f);
    secretEnvironmentRule(service, f);
    serverArgsRule(service, f);
    if (extraArgsRule(service, f)) {
        releaseArgparseRule(service, f);
        repeatedFlagsRule(service, f);
    }
    listenRule(service, f);
    authenticationRule(service, f);
    gpuCountRule(box, service, usable, f);
    memoryRule(box, service, usable, f);
}

/** A stack declares its box as `host` (and `container`), or its boxes as `boxes`: exactly one of the two; each box its own host and container. */
function boxSectionRule(boxes: BoxesInput, f: Findings): void {
    if (boxes.given.host && boxes.given.boxes) {
        f.issue(
            "boxes",
            "(set)",
            `${pulumiKey("host")} and ${pulumiKey("boxes")} are both set: keep one. One box: host (and container); several: boxes, ` +
                "each entry { host, container } (move host and container into boxes as its first entry: their resources stay the same).",
        );
    } else if (!boxes.given.host && !boxes.given.boxes) {
        f.issue("host", undefined, "host is required: add it (a map of keys), or boxes (a list of { host, container }) for several boxes.");
    }
    const firstWith = new Map<string, string>();
    for (const box of boxes.list) {
        if (box.key === undefined || !box.host) continue;
        const claim = (path: string, id: string, value: unknown, fix: string) => {
            const owner = firstWith.get(id);
            if (owner === undefined) firstWith.set(id, box.key!);
            else f.issue(path, value, `${path} is ${JSON.stringify(value)}, which ${owner} has too: ${fix}.`);
        };
        claim(
            `${box.key}.host.name`,
            `name=${box.host.name}`,
            box.host.name,
            "each box needs its own name (servers name their box by it; it names the GpuHost resource)",
        );
        if (box.container) {
            claim(
                `${box.key}.container.vmid`,
                `vmid=${box.container.vmid}`,
                box.container.vmid,
                "each box's container needs its own VMID in a stack (it names the LxcContainer resource ct<vmid>)",
            );
        }
    }
}

/** The box a server runs on: the one box, or the one its `box` names. Undefined (and an issue) when it names none. */
function boxOfServer(boxes: BoxesInput, key: string, service: ServiceConfig, f: Findings): BoxInput | undefined {
    const names = boxes.list.map((b) => b.host?.name).filter((n): n is string => n !== undefined);
    if (service.box === undefined) {
        if (boxes.list.length === 1) return boxes.list[0];
        if (boxes.list.length > 1) {
            f.issue(`${key}.box`, undefined, `${key}.box is not set, and the stack has ${boxes.list.length} boxes: set it to one of ${names.join(", ")}.`);
        }
        return undefined;
    }
    const box = boxes.list.find((b) => b.host?.name === service.box);
    if (!box && names.length === boxes.list.length) {
        f.issue(
            `${key}.box`,
            service.box,
            `${key}.box is "${service.box}", which names no box of the stack: use one of ${names.join(", ")} (the boxes' host.name).`,
        );
    }
    return box;
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

function topologyRule(box: BoxInput, f: Findings): void {
    const { host } = box;
    if (!host) return;
    if (host.topology === "pct-exec" && !box.containerGiven) {
        f.issue(
            "container",
            undefined,
            "container is required when host.topology is pct-exec: declare the LXC container (vmid, hostname, gpus) that `pct exec` runs the server in.",
        );
    }
    if (host.topology === "direct" && box.containerGiven) {
        f.issue(
            "container",
            "(set)",
            "container must be absent when host.topology is direct (commands go straight to host.address): remove sglang-serve:container, or set host.topology: pct-exec.",
        );
    }
}

function sshKeyRule(box: BoxInput, sshAgentAvailable: boolean | undefined, f: Findings): void {
    const { host } = box;
    if (!host) return;
    // Without a key file the providers use ssh-agent (SSH_AUTH_SOCK): only a known absence of one is worth a word.
    if (host.sshPrivateKeyPath === undefined && sshAgentAvailable === false) {
        f.warn(
            `${pulumiKey("host.sshPrivateKeyPath")} is not set and no ssh-agent runs (SSH_AUTH_SOCK is not set): ` +
                `preview works, but \`pulumi up\` cannot log in to ${host.address}. Start ssh-agent and \`ssh-add\` the key, or set host.sshPrivateKeyPath.`,
        );
    }
    if (isPlaceholderHostKey(host.hostKey)) {
        f.warn(
            `${pulumiKey("host.hostKey")} is the placeholder key: preview works, but \`pulumi up\` will refuse to connect to ${host.address}. ` +
                `Replace it with \`ssh-keyscan -t ed25519 ${host.address}\` output (without the host name), verified out of band.`,
        );
    }
}

/** The unit's python comes from exactly one place: service.python, or the venvs the stack stages (service.venv). */
function pythonRule(service: ServiceConfig, f: Findings): void {
    if (service.python !== undefined && service.venv !== undefined) {
        f.issue(
            "service.python",
            service.python,
            `${pulumiKey("service.python")} and ${pulumiKey("service.venv")} are both set: keep one. With service.venv the stack installs each release into ${service.venv.root}/venv-<version>; ` +
                `to keep the venv you have, remove service.python and adopt it (service.venv.adopt: {"${service.sglangVersion}": ${service.python.replace(/\/bin\/[^/]+$/, "")}}).`,
        );
    } else if (service.python === undefined && service.venv === undefined) {
        f.issue(
            "service.python",
            undefined,
            `${pulumiKey("service.python")} is not set: set it to the python of the venv that has SGLang ${service.sglangVersion} (e.g. /opt/sglang/venv/bin/python3), or set service.venv (root: /opt/sglang) to let the stack install each release.`,
        );
    }
    const adopted = service.venv?.adopt[service.sglangVersion];
    if (service.venv && adopted === undefined && service.venv.root.replace(/\/+$/, "") === "") {
        f.issue("service.venv.root", service.venv.root, `${pulumiKey("service.venv.root")} must be a directory other than /: e.g. /opt/sglang.`);
    }
}

/**
 * A release whose ServerArgs rules the stack has not transcribed (not in
 * core/sglang-releases.ts) is judged by its own code alone: the rules of
 * another release could contradict it (0.5.23 resolves auto to an extra
 * buffer where 0.5.11 refuses). Said as a notice.
 */
function versionRule(service: ServiceConfig, f: Findings): void {
    if (!sglangRelease(service.sglangVersion).verified) {
        f.note(
            `${pulumiKey("service.sglangVersion")} is ${service.sglangVersion}: its ServerArgs rules are SGLang's own code, run at the preview once a refresh has read the box's config.json (else by the rollout, before anything stops); ` +
                `the stack's transcribed rules cover ${SGLANG_RELEASES.map((r) => r.version).join(", ")} (core/sglang-releases.ts).`,
        );
    }
}

/** `--mamba-track-interval N` (or `=N`) in extraArgs: its value, the index of its flag, and how it was written. */
function mambaTrackInterval(service: ServiceConfig): { value: number; index: number; shown: string } | undefined {
    const interval = extraFlagInteger(service.extraArgs, "--mamba-track-interval");
    return interval && { value: interval.value, index: interval.given.index, shown: shownExtraFlag(interval.given) };
}

const SERVER_ARGS_INPUTS = [
    "service.speculative",
    "service.disableRadixCache",
    "service.model.architecture",
    "service.sglangVersion",
    "service.mambaSchedulerStrategy",
];

/**
 * The transcribed ServerArgs rules of a verified release (core/sglang-server-args.ts,
 * read from its source): the exception it would raise at startup fails the
 * preview under the key it is about, with SGLang's text and the fix; what it
 * would change silently is a warning naming the value it will run. False
 * when they refuse. (The release's own code judges too, once the box's
 * config.json is known: providers/sglang-verdict.ts.)
 */
function transcribedServerArgsRule(service: ServiceConfig, f: Findings): boolean {
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
        servedModelName: service.model.servedName,
    });
    for (const refusal of verdict.refusals) {
        const key = refusal.key === "service.mambaTrackInterval" ? `service.extraArgs[${interval!.index}]` : refusal.key;
        const value = valueOfKey(service, refusal.key, interval);
        let message = `${key} is ${shownValue(value)}: SGLang ${service.sglangVersion} refuses it at startup with\n       ${refusal.error}\n       Fix: ${refusal.fix}.`;
        if (refusal.key === "service.speculative.algorithm" && spec) message += algorithmHint(spec.algorithm, release.speculativeAlgorithms);
        f.issue(key, value, message, SERVER_ARGS_INPUTS);
    }
    if (verdict.refusals.length > 0) return false;
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
    return true;
}

/** The ServerArgs rules that need no box: the transcribed ones, then SGLANG_ENABLE_SPEC_V2 per release. */
function serverArgsRule(service: ServiceConfig, f: Findings): void {
    const release = sglangRelease(service.sglangVersion);
    const spec = service.speculative;
    // The transcribed rules only for the releases they were read from: another release's own code judges it (versionRule).
    if (release.verified && !transcribedServerArgsRule(service, f)) return;
    const specV2Value = service.environment[SPEC_V2_ENV];
    if (specV2Value !== undefined && !readsSpecV2Env(service.sglangVersion)) {
        // What the stack does for the user (the variable is left out): a notice, not a problem.
        f.note(
            `${pulumiKey(`service.environment.${SPEC_V2_ENV}`)} is not written into the unit: SGLang ${service.sglangVersion} has no ${SPEC_V2_ENV} ` +
                `(removed in ${SPEC_V2_ENV_REMOVED_IN}; spec v2 is its only path, synchronous scheduling is --disable-overlap-schedule): remove it from service.environment.`,
        );
    } else if (specV2Value !== undefined && parseSglangBool(specV2Value) === undefined) {
        f.warn(
            `${pulumiKey(`service.environment.${SPEC_V2_ENV}`)} is "${specV2Value}", which SGLang cannot read: it warns and uses its default (${release.specV2Default ? "on" : "off"} in ${release.version}); write "1" or "0".`,
        );
    }
    // specV2On is true for a release without the variable (its only path is spec v2): no advice there.
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

function valueOfKey(service: ServiceConfig, key: ServerArgsKey, interval: { shown: string } | undefined): unknown {
    switch (key) {
        case "service.mambaSchedulerStrategy":
            return service.mambaSchedulerStrategy;
        case "service.mambaTrackInterval":
            return interval?.shown;
        case "service.environment":
            return service.environment[SPEC_V2_ENV];
        case "service.model.servedName":
            return service.model.servedName;
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
    if (algorithm === "DFLASH")
        return "\n       DFLASH is a choice from SGLang 0.5.11 on: set service.sglangVersion to 0.5.11 (with its venv on the box) to serve a DFlash drafter; EAGLE3 would load it as an EAGLE drafter, which it is not.";
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
                `${path} must not be set here: the API key is a secret: set ${pulumiKey("service.requireApiKey")}: true and give the deploy the key in SGLANG_SERVE_API_KEY (it goes to 0600 files, never into the unit).`,
            );
            continue;
        }
        // The value is never quoted: it may be the secret.
        const secretName = secretNameRule(name);
        const credential = secretName === undefined ? credentialValueRule(value) : undefined;
        if (secretName !== undefined || credential !== undefined) {
            f.issue(
                path,
                "[secret]",
                `${path}: ${secretName !== undefined ? `${name} looks like a secret (${secretName})` : `its value looks like ${credential}`}, ` +
                    "and service.environment goes in clear into the 0644 unit, the state and every preview: " +
                    `move the name to ${pulumiKey("service.secretEnvironment")} and give its value to the deploy in SGLANG_SERVE_SECRET_ENVIRONMENT (\`${name}=...\`).`,
            );
            continue;
        }
        if (service.gpus !== undefined && (GPU_SCOPE_ENV as readonly string[]).includes(name)) {
            f.issue(
                path,
                value,
                `${path} is set beside service.gpus, which sets ${GPU_SCOPE_ENV.join(" and ")} itself (CUDA_VISIBLE_DEVICES=${service.gpus.join(",")}, in nvidia-smi's order): remove it from service.environment.`,
            );
            continue;
        }
        // Any printable text: the unit quotes it for Environment= (core/systemd-unit.ts), and systemd does not expand $ there.
        const bad = forbiddenCharacter(value);
        if (bad) {
            f.issue(path, value, `${path} holds ${bad}, which an Environment= line cannot carry intact: remove it.`);
            continue;
        }
    }
}

function secretEnvironmentRule(service: ServiceConfig, f: Findings): void {
    const seen = new Set<string>();
    service.secretEnvironment.forEach((name, i) => {
        const path = `service.secretEnvironment[${i}]`;
        if (!ENV_NAME.test(name)) {
            f.issue(path, name, `${path}: the variable name must be letters, digits and _ (not starting with a digit): rename it.`);
        } else if (name === API_KEY_ENV) {
            f.issue(
                path,
                name,
                `${path}: ${API_KEY_ENV} is the stack's own variable for the API key: set ${pulumiKey("service.requireApiKey")}: true instead.`,
            );
        } else if (name in service.environment) {
            f.issue(path, name, `${path}: ${name} is in service.environment too: keep it in one of them (secretEnvironment for a secret).`);
        } else if (seen.has(name)) {
            f.issue(path, name, `${path}: ${name} is listed twice: remove one.`);
        }
        seen.add(name);
    });
}

/**
 * The flags of extraArgs (either form, `--flag=v` or `--flag v...`), each
 * reported at its flag's element: none may set what the typed config owns,
 * directly or as an argparse abbreviation (a declared setting given again in
 * extraArgs is two sources for one value, refused whichever argparse would
 * keep). Returns whether the release's argparse may judge them too: not when
 * one sets an owned flag (that is the typed config's to say). A flag repeated
 * within extraArgs is argparse's to settle (repeatedFlagsRule).
 */
function extraArgsRule(service: ServiceConfig, f: Findings): boolean {
    let clean = true;
    for (const given of extraFlags(service.extraArgs)) {
        const { flag, index } = given;
        const path = `service.extraArgs[${index}]`;
        const value = service.extraArgs[index];
        const owner = OWNED_FLAGS[flag];
        if (owner) {
            f.issue(path, value, `${path} sets ${flag}, which the typed config owns: use ${owner} instead and remove it from extraArgs.`);
            clean = false;
            continue;
        }
        // argparse accepts unambiguous prefixes, so `--mem-frac` would still set an owned flag.
        const shadowed = Object.keys(OWNED_FLAGS).find((owned) => owned.startsWith(flag));
        if (shadowed) {
            f.issue(
                path,
                value,
                `${path}: SGLang's argparse reads ${flag} as an abbreviation of ${shadowed}, which the typed config owns: use ${OWNED_FLAGS[shadowed]} instead.`,
            );
            clean = false;
        }
    }
    return clean;
}

/**
 * An option set more than once in extraArgs (`--log-level info ...
 * --log-level debug`, or through an alias, an abbreviation, `--x` then
 * `--no-x`): SGLang's argparse keeps the last and starts (issue 37), so the
 * preview accepts it, and warns, naming every element, since the earlier
 * ones are easy to miss. The release's table says which spellings set one
 * option and whether it accumulates (none does in the releases known here);
 * without a table, a flag repeated under one spelling.
 */
function repeatedFlagsRule(service: ServiceConfig, f: Findings): void {
    const table = argparseTable(service.sglangVersion);
    const optionOf = (flag: string): string | undefined => {
        const option = table ? argparseOption(table, flag) : undefined;
        if (!option) return flag;
        return option.append ? undefined : (option.flags.find((spelling) => spelling.startsWith("--")) ?? flag);
    };
    const shown = (given: ExtraFlag) => `service.extraArgs[${given.index}] (${shownExtraFlag(given)})`;
    for (const group of repeatedExtraFlags(service.extraArgs, optionOf)) {
        const last = group[group.length - 1]!;
        const earlier = group.slice(0, -1);
        const option = optionOf(last.flag);
        f.warn(
            `${pulumiKey("service.extraArgs")}: ${earlier.map(shown).join(", ")} and ${shown(last)} ${group.length === 2 ? "both" : "all"} set ${option}: ` +
                `SGLang ${service.sglangVersion}'s argparse keeps the last, so the server runs with ${shownExtraFlag(last)}` +
                `${earlier.some((g) => g.values.length > 0) ? " (an earlier value must still pass argparse's check)" : ""}. Remove ${earlier.map((g) => `service.extraArgs[${g.index}]`).join(", ")} to give it once.`,
        );
    }
}

/**
 * extraArgs through the declared release's own options (core/sglang-argparse.ts):
 * what its argparse refuses fails the preview with its text, under the
 * element it is about. A release without a table is not checked, and said.
 */
function releaseArgparseRule(service: ServiceConfig, f: Findings): void {
    if (service.extraArgs.length === 0) return;
    const table = argparseTable(service.sglangVersion);
    if (!table) {
        f.warn(
            `${pulumiKey("service.extraArgs")} is not checked against SGLang ${service.sglangVersion}'s options (no table for it; ` +
                `the tables are ${argparseVersions().join(", ")}): write one with \`python3 sglang-release/argparse_table.py --version ${service.sglangVersion}\` ` +
                `into core/sglang-argparse/${service.sglangVersion}.json, or check the flags with \`sglang serve --help\` on the box.`,
        );
        return;
    }
    const refused = judgeExtraArgs(table, service.extraArgs);
    if (!refused) return;
    const path = `service.extraArgs[${refused.index}]`;
    const value = service.extraArgs[refused.index];
    f.issue(
        path,
        value,
        `${path} is ${JSON.stringify(value)}: SGLang ${service.sglangVersion} refuses it at startup with\n       ${refused.error}\n       ` +
            `Fix: write the flag and its values as \`sglang serve --help\` of SGLang ${service.sglangVersion} lists them, or remove it.`,
    );
}

/** container.gpus name existing host GPUs, once each; the GPUs the box's servers can use (undefined when not known). */
function containerGpusRule(box: BoxInput, f: Findings): number | undefined {
    const { host, container } = box;
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
    return host.topology === "pct-exec" ? container?.gpus.length : host.gpus.count;
}

/** What the box gives its servers, in words, for the GPU rules' messages. */
function boxGpusText(host: HostConfig, usable: number): string {
    return host.topology === "pct-exec"
        ? `container.gpus passes ${usable} GPU(s) to the container (numbered 0..${usable - 1} inside)`
        : `host.gpus.count is ${usable}`;
}

/** The server's GPUs exist on the box, once each, and hold its parallel layout. */
function gpuCountRule(box: BoxInput, service: ServiceConfig, usable: number | undefined, f: Findings): void {
    const { host } = box;
    if (!host || usable === undefined) return;
    const boxGpus = boxGpusText(host, usable);
    const seen = new Set<number>();
    service.gpus?.forEach((index, i) => {
        const path = `service.gpus[${i}]`;
        if (index >= usable) {
            f.issue(path, index, `${path} is GPU ${index} but ${boxGpus}: use one of 0..${usable - 1}.`, ["host.gpus", "container.gpus"]);
        }
        if (seen.has(index)) f.issue(path, index, `${path} lists GPU ${index} twice: remove the duplicate.`);
        seen.add(index);
    });
    const count = service.gpus?.length ?? usable;
    const where = service.gpus ? `service.gpus gives the server ${count} GPU(s)` : boxGpus;
    const fix = service.gpus ? "list more GPUs in service.gpus" : "pass more GPUs through";
    const layout = parallelLayout(service);
    if (service.tensorParallelSize > count) {
        f.issue(
            "service.tensorParallelSize",
            service.tensorParallelSize,
            `service.tensorParallelSize is ${service.tensorParallelSize} but ${where}: lower tensorParallelSize or ${fix}.`,
            ["host.gpus", "container.gpus", "service.gpus"],
        );
    } else if (layout.gpus > count) {
        // The pipeline or data parallel size in extraArgs multiplies the GPUs: SGLang gives each rank GPUs of its own.
        const given = [layout.dp, layout.pp].find((size) => size.value > 1 && size.given)?.given;
        const key = given ? `service.extraArgs[${given.index}]` : "service.tensorParallelSize";
        f.issue(
            key,
            given ? shownExtraFlag(given) : service.tensorParallelSize,
            `${key}: the server needs ${describeLayout(layout)} (SGLang places each data parallel rank on tp x pp GPUs of its own` +
                `${layout.dp.value > 1 ? "; --enable-dp-attention shares them instead" : ""}) but ${where}: lower the sizes or ${fix}.`,
            ["service.tensorParallelSize", "host.gpus", "container.gpus", "service.gpus"],
        );
    }
}

/** A stack declares its server as `service`, or its servers as `servers`: exactly one of the two. */
function serverSectionRule(servers: ServersInput, f: Findings): void {
    if (servers.given.service && servers.given.servers) {
        f.issue(
            "servers",
            "(set)",
            `${pulumiKey("service")} and ${pulumiKey("servers")} are both set: keep one. One server: service; several on the box: servers, ` +
                "each entry a whole service (move service into servers as its first entry: its unit, name and state stay the same).",
        );
    } else if (!servers.given.service && !servers.given.servers) {
        f.issue("service", undefined, "service is required: add it (a map of keys), or servers (a list of them) for several servers on the box.");
    }
}

/** The stack's servers: each its own name (unit, env file); on one box, each its own port and GPUs. */
function serversRule(placed: ReadonlyArray<{ key: string; service: ServiceConfig; box: BoxInput }>, f: Findings): void {
    const firstWith = new Map<string, string>();
    const claim = (id: string, path: string, key: string, value: unknown, fix: string) => {
        const owner = firstWith.get(id);
        if (owner === undefined) firstWith.set(id, key);
        else f.issue(path, value, `${path} is ${JSON.stringify(value)}, which ${owner} has too: ${fix}.`);
    };
    const boxes = new Map<BoxInput, number>();
    for (const { key, service, box } of placed) {
        boxes.set(box, (boxes.get(box) ?? 0) + 1);
        const on = `box ${box.host?.name ?? "?"}`;
        claim(
            `name=${service.name}`,
            `${key}.name`,
            key,
            service.name,
            `each server needs its own name (it names the unit ${unitName(service.name)}, its env file and its venv staging)`,
        );
        claim(`${on} port=${service.port}`, `${key}.port`, key, service.port, `each server on ${on} needs its own port`);
        service.gpus?.forEach((gpu, i) =>
            claim(`${on} gpu=${gpu}`, `${key}.gpus[${i}]`, key, gpu, `a GPU of ${on} serves one server: give each server GPUs of its own`),
        );
    }
    for (const { key, service, box } of placed) {
        const neighbours = (boxes.get(box) ?? 1) - 1;
        if (service.gpus !== undefined || neighbours === 0) continue;
        f.issue(
            `${key}.gpus`,
            undefined,
            `${key}.gpus is not set, so the server would see every GPU of box ${box.host?.name ?? "?"}, beside ${neighbours} other server(s) there: ` +
                "give each server the GPUs it uses (e.g. gpus: [0]), disjoint from the others'.",
        );
    }
}

/** Whether each GPU's share of the weights (core/gpu-fit.ts) plus the reserve fits its static pool. */
export function staticPoolFit(
    weightsGB: number,
    memFractionStatic: number | undefined,
    memoryMiB: number,
    placement: WeightsPlacement,
): { needGiB: number; budgetGiB: number; fits: boolean } {
    const fraction = memFractionStatic ?? ASSUMED_AUTO_MEM_FRACTION;
    const needGiB = weightsPerGpuGiB(weightsGB, placement) + STATIC_POOL_RESERVE_GIB;
    const budgetGiB = (fraction * memoryMiB * MIB) / GIB;
    return { needGiB, budgetGiB, fits: needGiB <= budgetGiB };
}

function memoryRule(box: BoxInput, service: ServiceConfig, usableGpus: number | undefined, f: Findings): void {
    const { host } = box;
    if (!host) return;
    const tp = service.tensorParallelSize;
    const weightsGB = service.model.weightsGB;
    if (weightsGB === undefined) return; // taken from the box: the service provider checks it there (core/box-facts.ts)
    const placement = weightsPlacement(service);
    const { needGiB, budgetGiB, fits } = staticPoolFit(weightsGB, service.memFractionStatic, host.gpus.memoryMiB, placement);
    if (fits) return;
    const fractionText =
        service.memFractionStatic === undefined
            ? `SGLang's automatic mem fraction (about ${ASSUMED_AUTO_MEM_FRACTION})`
            : `memFractionStatic ${service.memFractionStatic}`;
    const maxTp = service.gpus?.length ?? usableGpus ?? host.gpus.count;
    const pp = placement.shards / tp;
    let suggestion = "use a smaller or quantized model, or GPUs with more memory";
    for (let candidate = tp + 1; candidate * pp <= maxTp; candidate++) {
        if (staticPoolFit(weightsGB, service.memFractionStatic, host.gpus.memoryMiB, { ...placement, shards: candidate * pp }).fits) {
            suggestion = `set tensorParallelSize: ${candidate}`;
            break;
        }
    }
    const over = pp === 1 ? `tensorParallelSize ${tp}` : `tensorParallelSize ${tp} x pipeline parallel size ${pp}`;
    f.issue(
        "service.tensorParallelSize",
        tp,
        `service.model.weightsGB ${service.model.weightsGB} GB over ${over} does not fit: each GPU needs ${needGiB.toFixed(1)} GiB ` +
            `(weights${describePlacement(placement)} plus the ${STATIC_POOL_RESERVE_GIB} GiB reserve for the KV cache and Mamba state) but ${fractionText} of one ` +
            `${(host.gpus.memoryMiB / 1024).toFixed(1)} GiB GPU (host.gpus.memoryMiB ${host.gpus.memoryMiB}) is ${budgetGiB.toFixed(1)} GiB: ${suggestion}.`,
        ["service.memFractionStatic", "service.model.weightsGB", "host.gpus", "container.gpus", "service.gpus"],
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
function authenticationRule(service: ServiceConfig, f: Findings): void {
    const listen = service.listenHost ?? DEFAULT_LISTEN_HOST;
    if (service.requireApiKey) {
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
        "service.requireApiKey",
        service.requireApiKey,
        `service.requireApiKey is false but service.listenHost is ${listen}: the server would answer anyone who reaches port ${service.port} without authentication. ` +
            `Set service.requireApiKey: true (and ${API_KEY_SET_HELP}); or listen on 127.0.0.1; ` +
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
