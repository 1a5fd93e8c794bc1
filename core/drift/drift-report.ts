/**
 * Drift report: what `pulumi refresh --preview-only` found on the boxes,
 * as rows of (resource, field, declared, actual). Pure: it reads the
 * engine's events, it never runs the engine (scripts/drift.ts does, through
 * the Automation API, which hands over each event as the engine emits it).
 *
 * Where the refreshed values come from (checked against engine v3.248.0):
 * each resource's `resOutputsEvent` carries in its metadata the op the
 * refresh resolved to (same/update/delete) and the `old` (recorded) and
 * `new` (read from the box) states. The `--json` preview digest is no
 * substitute: it swaps in a refreshed step only when the provider's Diff
 * returned a detailed diff (pkg/backend/display/json.go ShowPreviewDigest),
 * and dynamic providers never send one (@pulumi/pulumi cmd/dynamic-provider
 * diff), so its steps keep op "refresh" with newState equal to oldState.
 *
 * "Declared" is the state the last `pulumi up` recorded (what the stack put
 * on the box); "actual" is what the box reports now.
 */
// Type-only: the SDK's event shapes, erased at compile time, so core/ stays
// pure at run time (it loads neither Pulumi nor anything that talks to it).
import type { EngineEvent, OpMap, OpType, StepEventMetadata } from "@pulumi/pulumi/automation";
import { deepEqual } from "./diff";
import { maskSecretAssignments, SECRET_MASK } from "../secrets/redact";
import { API_KEY_ENV } from "../sglang/rules";
import { isRecord } from "../is-record";
import { describeFigures, type ServingFigures } from "../serving/serving-figures";

// ---------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------

/** One field that differs. Values are JSON values; null where a side has none. */
export interface DriftChange {
    /** The resource's name (the last part of its URN), e.g. `qwen-unit`. */
    resource: string;
    /** Its type token, e.g. `pulumi-nodejs:dynamic/sglang-serve:SglangService`. */
    type: string;
    /** Dotted path, e.g. `flags.--mem-fraction-static`, `settings.cores`, `activeState`. */
    field: string;
    declared: unknown;
    actual: unknown;
}

export interface DriftReport {
    stack: string;
    drift: boolean;
    changes: DriftChange[];
    /** Each server's last good figures as its last verified rollout recorded them (core/serving/serving-figures.ts), drift or not. */
    servingFigures: { resource: string; figures: ServingFigures }[];
}

/** Field name for a resource that the refresh found gone from the box. */
export const RESOURCE_FIELD = "(resource)";

/** How the engine marks a secret in event states: `{ "<sig>": "<secret sig>", ciphertext|plaintext }`. */
const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG_VALUE = "1b47061264138c4ac30d75fd1eb44270";

/**
 * Fields whose values are masked by name, wherever they sit (`flags.--api-key`,
 * `environment.SGLANG_API_KEY`): the engine masks values it knows are secret,
 * but a hand-edited unit can put a key where the stack never would.
 */
const SECRET_FIELD_NAMES: ReadonlySet<string> = new Set([
    "apiKey",
    "sshPrivateKey",
    "sshPrivateKeyPassphrase",
    "privateKey",
    "password",
    "passphrase",
    "environmentFile",
    "secretsHash",
    "--api-key",
    API_KEY_ENV,
]);

/** Bookkeeping the providers keep in state that is not a fact about the box. */
const IGNORED_FIELDS: ReadonlySet<string> = new Set([
    // The serialized provider code: changes with the code, never with the box.
    "__provider",
    // A preview annotation set by `check` ("yes: --tp changed"), reset to "no" by every read.
    "restart",
]);

function isSecretValue(value: unknown): boolean {
    return value === SECRET_MASK || (isRecord(value) && value[SECRET_SIG_KEY] === SECRET_SIG_VALUE);
}

/** `urn:pulumi:stack::project::parent$type::name` -> `name` (names may contain `::`). */
export function resourceNameOf(urn: string): string {
    const parts = urn.split("::");
    return parts.length >= 4 ? parts.slice(3).join("::") : urn;
}

/** The resource's own type token from its URN (after the last `$` of the type part). */
export function resourceTypeOf(urn: string): string {
    const parts = urn.split("::");
    if (parts.length < 4) return "";
    const chain = parts[2].split("$");
    return chain[chain.length - 1];
}

function linesOf(text: string): string[] {
    return (
        text
            .split("\n")
            // A unit's continued ExecStart lines end in a backslash: the flag is the news, not the backslash.
            .map((l) => l.trim().replace(/\s*\\$/, ""))
            .filter((l) => l !== "")
    );
}

/** Lines of `a` not matched in `b` (as a multiset), in `a`'s order. */
function linesOnlyIn(a: readonly string[], b: readonly string[]): string[] {
    const left = new Map<string, number>();
    for (const line of b) left.set(line, (left.get(line) ?? 0) + 1);
    const out: string[] = [];
    for (const line of a) {
        const n = left.get(line) ?? 0;
        if (n > 0) left.set(line, n - 1);
        else out.push(line);
    }
    return out;
}

function masked(value: unknown): unknown {
    return value === undefined || value === null ? null : SECRET_MASK;
}

function asJson(value: unknown): unknown {
    return value === undefined ? null : value;
}

/**
 * The differing leaves of two values, as `[field, declared, actual]`. Maps
 * present on both sides are walked key by key (`flags.--tp`); anything else
 * (lists, a map on one side only, scalars) is compared whole, so a server
 * whose `liveArgs` went from a map to null is one row, not twelve. Two
 * multi-line strings (a unit file) differ by the lines only each side has.
 */
function diffValues(declared: unknown, actual: unknown, path: string, secret: boolean, rows: [string, unknown, unknown][]): void {
    if (isSecretValue(declared) || isSecretValue(actual) || secret) {
        if (!deepEqual(declared, actual)) rows.push([path, masked(declared), masked(actual)]);
        return;
    }
    if (isRecord(declared) && isRecord(actual)) {
        const keys = [...Object.keys(declared), ...Object.keys(actual).filter((k) => !(k in declared))];
        for (const key of keys) {
            if (IGNORED_FIELDS.has(key)) continue;
            diffValues(declared[key], actual[key], path === "" ? key : `${path}.${key}`, SECRET_FIELD_NAMES.has(key), rows);
        }
        return;
    }
    if (deepEqual(declared, actual)) return;
    if (typeof declared === "string" && typeof actual === "string" && (declared.includes("\n") || actual.includes("\n"))) {
        const before = linesOf(declared);
        const after = linesOf(actual);
        const removed = linesOnlyIn(before, after).map(maskSecretAssignments);
        const added = linesOnlyIn(after, before).map(maskSecretAssignments);
        if (removed.length === 0 && added.length === 0) return; // only blank lines or indentation moved
        rows.push([path, removed.length ? removed.join("\n") : null, added.length ? added.join("\n") : null]);
        return;
    }
    rows.push([path, asJson(declared), asJson(actual)]);
}

/**
 * Paths of the values the engine masked in a state's map: the only ones that
 * can change without showing (fields masked by name here still compare).
 */
function secretPaths(value: unknown, path = ""): string[] {
    if (!isRecord(value)) return [];
    const out: string[] = [];
    for (const [key, child] of Object.entries(value)) {
        const p = path === "" ? key : `${path}.${key}`;
        if (isSecretValue(child)) out.push(p);
        else out.push(...secretPaths(child, p));
    }
    return out;
}

/**
 * Ops that are no change: those engine.HasChanges (pkg/engine/update.go, what
 * `--expect-no-changes` exits 7 on) leaves out, and `refresh`, a step's op
 * before the refresh resolves it (a result is same, update or delete).
 */
const UNCHANGED_OPS: ReadonlySet<string> = new Set<OpType>(["same", "read", "discard", "read-replacement", "refresh"]);

function rowsFor(step: StepEventMetadata): DriftChange[] {
    const resource = resourceNameOf(step.urn);
    const type = step.type || step.old?.type || step.new?.type || resourceTypeOf(step.urn);
    const row = (field: string, declared: unknown, actual: unknown): DriftChange => ({ resource, type, field, declared, actual });
    if (step.op === "delete" || (step.old && !step.new && step.op !== "update")) {
        return [row(RESOURCE_FIELD, "exists", "missing (deleted outside the stack)")];
    }
    const rows: [string, unknown, unknown][] = [];
    diffValues(step.old?.outputs ?? {}, step.new?.outputs ?? {}, "", false, rows);
    // Providers that report the box only through their inputs.
    if (rows.length === 0) diffValues(step.old?.inputs ?? {}, step.new?.inputs ?? {}, "", false, rows);
    if (rows.length > 0) return rows.map(([field, declared, actual]) => row(field, declared, actual));
    // The engine says it changed and nothing visible did: a secret did (both sides show as [secret]).
    const secrets = [...new Set([...secretPaths(step.old?.outputs), ...secretPaths(step.new?.outputs)])];
    if (secrets.length > 0) return [row(`(secret: one of ${secrets.join(", ")})`, SECRET_MASK, SECRET_MASK)];
    return [row("(not shown)", null, "changed: the provider reports a difference the engine output does not show")];
}

/** What the refresh resolved each resource to: its last `resOutputsEvent`, in the engine's order. */
function refreshedResources(events: readonly EngineEvent[]): StepEventMetadata[] {
    const byUrn = new Map<string, StepEventMetadata>();
    for (const event of events) {
        const m = event.resOutputsEvent?.metadata;
        if (m && typeof m.urn === "string") byUrn.set(m.urn, m);
    }
    return [...byUrn.values()];
}

/** The change counts the engine reported in its summary event (`{ same: 7, update: 2 }`); empty before it. */
export function changeSummaryOf(events: readonly EngineEvent[]): OpMap {
    return { ...[...events].reverse().find((e) => e.summaryEvent)?.summaryEvent?.resourceChanges };
}

function summaryHasChanges(summary: OpMap): boolean {
    return Object.entries(summary).some(([op, n]) => !UNCHANGED_OPS.has(op) && (n ?? 0) > 0);
}

/** The rows for every resource the refresh found changed or gone. Tolerates missing states. */
export function driftChanges(events: readonly EngineEvent[]): DriftChange[] {
    const changed = refreshedResources(events).filter((r) => !UNCHANGED_OPS.has(r.op));
    // The engine refreshes in parallel: sort by resource (stable: fields keep their order) so reruns compare equal.
    return changed.flatMap(rowsFor).sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
}

/**
 * The report for one stack, from the events of `refresh --preview-only`
 * (all of them, or as many as came before a failure). Drift is what the
 * engine's `--expect-no-changes` judges (any op but same/read in the
 * summary), or any row. When the summary says drift but no resource could
 * be shown, one row says so.
 */
export function driftReport(stack: string, events: readonly EngineEvent[]): DriftReport {
    const changes = driftChanges(events);
    const summary = changeSummaryOf(events);
    const drift = changes.length > 0 || summaryHasChanges(summary);
    if (drift && changes.length === 0) {
        const counts = Object.entries(summary)
            .filter(([op, n]) => !UNCHANGED_OPS.has(op) && (n ?? 0) > 0)
            .map(([op, n]) => `${op} ${n}`)
            .join(", ");
        changes.push({
            resource: `(stack ${stack})`,
            type: "",
            field: "(not shown)",
            declared: null,
            actual: `changed${counts ? ` (${counts})` : ""}: the engine output names no resource`,
        });
    }
    return { stack, drift, changes, servingFigures: recordedFigures(events) };
}

/** The servers' recorded figures, as the refresh read them back with the state. */
function recordedFigures(events: readonly EngineEvent[]): DriftReport["servingFigures"] {
    return refreshedResources(events)
        .flatMap((r) => {
            const figures: unknown = (r.new?.outputs ?? r.old?.outputs)?.servingFigures;
            return isRecord(figures) ? [{ resource: resourceNameOf(r.urn), figures: figures as ServingFigures }] : [];
        })
        .sort((a, b) => a.resource.localeCompare(b.resource));
}

/** "Last good serving figures: qwen-unit avg accept length ...", one line per server; nothing when none is recorded. */
function figuresLines(report: DriftReport): string[] {
    return report.servingFigures.map((f) => `Last good serving figures of ${f.resource}: ${describeFigures(f.figures)}`);
}

/**
 * The engine's color markup (`<{%fg 1%}>`, `<{%reset%}>`), left in event
 * messages when a run is not `--color never` (scripts/drift.ts passes it).
 */
const COLOR_MARKUP = /<\{%[^%]*%\}>/g;

/** Lines that only say that something failed, said better by the lines naming what. */
const GENERIC_FAILURE = /^(error: )?(preview|refresh) failed$/;

/**
 * The engine's own error lines: its diagnostics of severity error (each
 * naming its resource), then the CLI's stderr lines that add something.
 */
export function engineErrors(events: readonly EngineEvent[], stderr: string): string[] {
    const out: string[] = [];
    for (const e of events) {
        const d = e.diagnosticEvent;
        if (!d || d.severity !== "error") continue;
        const text = d.message
            .replace(COLOR_MARKUP, "")
            .trim()
            .replace(/^error: /, "");
        if (text === "" || GENERIC_FAILURE.test(text)) continue;
        const line = d.urn ? `${resourceNameOf(d.urn)}: ${text}` : text;
        if (!out.includes(line)) out.push(line);
    }
    for (const raw of stderr.split("\n")) {
        const text = raw.replace(COLOR_MARKUP, "").trim();
        if (text === "" || GENERIC_FAILURE.test(text)) continue;
        if (!out.some((o) => o.includes(text.replace(/^error: /, "")))) out.push(text);
    }
    return out;
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

const MAX_CELL = 72;

/** A value as one table cell: strings bare, null or absent as `(none)`, lines joined with ` | `, long values cut. */
export function formatCell(value: unknown): string {
    let text: string;
    if (value === null || value === undefined) text = "(none)";
    else if (typeof value === "string") text = value.split("\n").join(" | ");
    else text = JSON.stringify(value);
    return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 3)}...` : text;
}

/**
 * The report as a table with a one-line verdict; the same facts as the JSON.
 * `partial`: the check failed part way, the rows are what it could read.
 */
export function formatDriftTable(report: DriftReport, opts: { partial?: boolean } = {}): string {
    const figures = figuresLines(report);
    if (opts.partial) {
        if (report.changes.length === 0) return "";
    } else if (!report.drift) {
        return [`No drift on stack ${report.stack}: the boxes match what the last deployment recorded.`, ...figures, ""].join("\n");
    }
    const resources = new Set(report.changes.map((c) => c.resource)).size;
    const header = ["RESOURCE", "FIELD", "DECLARED", "ACTUAL"];
    const rows = report.changes.map((c) => [c.resource, c.field, formatCell(c.declared), formatCell(c.actual)]);
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells: string[]) =>
        cells
            .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
            .join("  ")
            .trimEnd();
    const table = [line(header), ...rows.map(line)];
    if (opts.partial) {
        return [
            `Stack ${report.stack} could not be checked completely; of what it could read, ${resources} resource(s), ${report.changes.length} field(s) differ:`,
            "",
            ...table,
            "",
        ].join("\n");
    }
    return [
        `Drift on stack ${report.stack}: ${resources} resource(s), ${report.changes.length} field(s) differ from what the last deployment recorded.`,
        "",
        ...table,
        "",
        ...(figures.length ? [...figures, ""] : []),
        `Put the box back: npm run pulumi -- up --refresh --stack ${report.stack}`,
        `Or accept it: change Pulumi.${report.stack}.yaml (or the code) to match, then preview and up.`,
        "",
    ].join("\n");
}
