/**
 * The stack's config, validated once: the zod schema for its shape and
 * defaults (core/config/schema.ts), then the rules that span fields
 * (core/config/rules.ts). Every problem is reported at once, each naming the
 * Pulumi key, the bad value and the fix (t3-env style; core/config/issues.ts).
 */
import { z } from "zod";
import { ConfigIssue, errorMap, formatPath, fromZodIssues, unknownKeyIssue, valueAt } from "./issues";
import { Findings } from "./findings";
import type { BoxesInput, ServersInput } from "./rule-input";
import { applyRules } from "./rules";
import {
    BoxConfig,
    ContainerConfig,
    GatewayConfig,
    HostConfig,
    ReadinessConfig,
    RETIRED_SECRET_KEYS,
    ServiceConfig,
    StackConfig,
    StackConfigSchema,
} from "./schema";
import { CONFIG_NAMESPACE } from "./namespace";
import { isRecord } from "../is-record";
import { type ResolvedRevision, unpinnedRevisions } from "../weights/revision-pins";

export type ValidationResult =
    { ok: true; config: StackConfig; warnings: string[]; notices: string[] } | { ok: false; issues: ConfigIssue[]; warnings: string[]; notices: string[] };

type SectionName = keyof typeof StackConfigSchema.shape;
const SECTION_NAMES = Object.keys(StackConfigSchema.shape) as SectionName[];

/**
 * Validates a stack's config: `raw` holds the sections without the
 * `sglang-serve:` prefix (`{ host and container or boxes, service or servers, readiness }`; the
 * secrets older versions took as config are refused with their fix).
 * Returns every problem, never just the first.
 * `where` says what the caller knows of the machine that will run the
 * providers (whether an ssh-agent runs there), and what the Hub said the
 * sources' unpinned revisions name (core/weights/revision-pins.ts), for the
 * refusal to give the commit to pin. `revisionsAtCheck`: the program's
 * load, which cannot wait for the Hub, leaves a revision that is not a full
 * commit to the SglangService's check (providers/sglang-server/weights.ts
 * unpinnedSources), which asks the Hub what it names now and refuses it with
 * the line to pin; only when nothing else is refused, so that one pass still
 * names every bad key.
 */
export function validateStackConfig(
    raw: unknown,
    where: { sshAgentAvailable?: boolean; resolvedRevisions?: ReadonlyMap<string, ResolvedRevision>; revisionsAtCheck?: boolean } = {},
): ValidationResult {
    const findings = new Findings();
    if (!isRecord(raw)) {
        findings.issue("", raw, `the ${CONFIG_NAMESPACE} config must be a map of sections (host and container or boxes, service or servers, readiness).`);
        return { ok: false, issues: findings.issues, warnings: findings.warnings, notices: findings.notices };
    }
    const known: readonly string[] = SECTION_NAMES;
    for (const key of Object.keys(raw)) {
        if (raw[key] === undefined) continue;
        if (key in RETIRED_SECRET_KEYS) findings.issue(key, raw[key], RETIRED_SECRET_KEYS[key]);
        else if (!known.includes(key)) findings.issues.push(unknownKeyIssue([], key, known, raw));
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
            boxes: boxesForRules(forRules, raw),
            servers: serversForRules(forRules, raw),
            gateway: forRules.gateway as GatewayConfig | undefined,
            readiness: forRules.readiness as ReadinessConfig | undefined,
            sshAgentAvailable: where.sshAgentAvailable,
            resolvedRevisions: where.resolvedRevisions,
        },
        ruleFindings,
    );
    // A rule about a value already reported (and set aside to run the rules) would only repeat it.
    const within = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`);
    const underRemoved = (path: string) => removed.some((r) => within(path, r) || within(r, path));
    const stillValid = (issue: ConfigIssue) => ![issue.path, ...(ruleFindings.dependsOn.get(issue) ?? [])].some(underRemoved);
    findings.issues.push(...ruleFindings.issues.filter(stillValid));
    findings.warnings.push(...ruleFindings.warnings);
    findings.notices.push(...ruleFindings.notices);
    if (where.revisionsAtCheck) {
        const atCheck = new Set(unpinnedRevisions(raw).map((q) => q.key));
        if (findings.issues.every((i) => atCheck.has(i.path))) findings.issues.length = 0;
    }
    if (findings.issues.length > 0 || !allParsed) {
        return { ok: false, issues: findings.issues, warnings: findings.warnings, notices: findings.notices };
    }
    const boxes = (parsed.boxes ?? [{ host: parsed.host, ...(parsed.container !== undefined ? { container: parsed.container } : {}) }]) as BoxConfig[];
    const servers = ((parsed.servers ?? [parsed.service]) as ServiceConfig[]).map((s) => ({ ...s, box: s.box ?? boxes[0]!.host.name }));
    const config: StackConfig = { boxes, servers, readiness: parsed.readiness as ReadinessConfig };
    const gateway = parsed.gateway as Omit<GatewayConfig, "box" | "workers"> & Partial<GatewayConfig>;
    if (gateway) config.gateway = { ...gateway, box: gateway.box ?? boxes[0]!.host.name, workers: gateway.workers ?? servers.map((s) => s.name) };
    return { ok: true, config, warnings: findings.warnings, notices: findings.notices };
}

/** The boxes the rules judge, each with the key it is declared under (undefined: the host and container sections, else `boxes[i]`). */
function boxesForRules(forRules: Partial<Record<SectionName, unknown>>, raw: Record<string, unknown>): BoxesInput {
    const given = { host: raw.host !== undefined, boxes: raw.boxes !== undefined };
    if (given.boxes) {
        const rawBoxes = Array.isArray(raw.boxes) ? raw.boxes : [];
        const list = ((forRules.boxes ?? []) as BoxConfig[]).map((box, i) => ({
            key: `boxes[${i}]`,
            ...box,
            containerGiven: isRecord(rawBoxes[i]) && rawBoxes[i].container !== undefined,
        }));
        return { given, list };
    }
    const host = forRules.host as HostConfig | undefined;
    return { given, list: host ? [{ host, container: forRules.container as ContainerConfig | undefined, containerGiven: raw.container !== undefined }] : [] };
}

/**
 * The servers the rules judge, each with the key it is declared under
 * (`service`, or `servers[i]`); `given` says which of the two sections the
 * config set, so the rules can ask for exactly one.
 */
function serversForRules(forRules: Partial<Record<SectionName, unknown>>, raw: Record<string, unknown>): ServersInput {
    const given = { service: raw.service !== undefined, servers: raw.servers !== undefined };
    if (forRules.servers !== undefined) {
        return { given, list: (forRules.servers as ServiceConfig[]).map((service, i) => ({ key: `servers[${i}]`, service })) };
    }
    return { given, list: forRules.service !== undefined ? [{ key: "service", service: forRules.service as ServiceConfig }] : [] };
}

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
