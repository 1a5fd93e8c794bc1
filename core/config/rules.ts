/**
 * The rules that span fields of the stack config, run in order: each box's,
 * each server's on its box (filed under the keys they are declared at), the
 * servers' together, the gateway's and readiness'. The rules themselves live
 * with their domain: core/box/config-rules.ts (topology, GPUs and memory),
 * core/sglang/config-rules.ts (SGLang's own verdict on the settings),
 * core/secrets/config-rules.ts (SSH keys, environment, authentication),
 * core/gateway/config-rules.ts, core/readiness/config-rules.ts,
 * core/weights/config-rules.ts (pinned sources of weights).
 */
import { pulumiKey } from "./namespace";
import type { ServiceConfig } from "./schema";
import { unitName } from "../unit/unit-paths";
import { gatewayRule } from "../gateway/config-rules";
import { topologyRule, containerGpusRule, gpuCountRule, memoryRule } from "../box/config-rules";
import { sshKeyRule, environmentRule, secretEnvironmentRule, listenRule, authenticationRule } from "../secrets/config-rules";
import { pythonRule, versionRule, serverArgsRule, extraArgsRule, repeatedFlagsRule, releaseArgparseRule } from "../sglang/config-rules";
import { readinessRule } from "../readiness/config-rules";
import { weightsRule } from "../weights/config-rules";
import { Findings } from "./findings";
import { ServersInput, BoxInput, BoxesInput, RuleInput, boxOfServer } from "./rule-input";

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
        weightsRule(service, serverFindings, input.resolvedRevisions);
        serverFindings.copyInto(f, { service: key, ...boxRenames(box) });
    }
    serversRule(placed, f);
    if (input.gateway) gatewayRule(input.boxes, input.gateway, placed, f);
    if (input.readiness) readinessRule(input.readiness, f);
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
