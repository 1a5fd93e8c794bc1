/**
 * Drift report: what `pulumi refresh --preview-only` found on the boxes,
 * as rows of (resource, field, declared, actual). Pure: it reads the
 * engine's JSON, it never runs it (scripts/drift.ts does).
 *
 * Where the refreshed values come from (checked against engine v3.248.0):
 * the `--json` preview digest does NOT carry them for this stack. The digest
 * swaps in a refreshed step only when the provider's Diff returned a detailed
 * diff (pkg/backend/display/json.go ShowPreviewDigest), and dynamic providers
 * never send one (@pulumi/pulumi cmd/dynamic-provider diff), so its steps keep
 * op "refresh" with newState equal to oldState even when the exit code is 7.
 * The engine's event log (`--event-log`, the interface the Automation API
 * uses) has a `resOutputsEvent` per resource whose metadata holds the op the
 * refresh resolved to (same/update/delete) and the `old` and `new` states.
 * So: the event log when there is one, the digest as a fallback (it is right
 * for deletes and for providers that return detailed diffs).
 *
 * "Declared" is the state the last `pulumi up` recorded (what the stack put
 * on the box); "actual" is what the box reports now.
 */
import { deepEqual } from "./diff";
import { maskSecretAssignments, SECRET_MASK } from "./redact";
import { API_KEY_ENV } from "./sglang-rules";
import { isRecord } from "./is-record";

// ---------------------------------------------------------------------------
// The engine's JSON, as far as the report reads it
// ---------------------------------------------------------------------------

/** A resource state in the digest (`oldState`/`newState`) or an event's `old`/`new`. */
export interface EngineResourceState {
    urn?: string;
    type?: string;
    id?: string;
    inputs?: Record<string, unknown>;
    outputs?: Record<string, unknown>;
    /** custom, parent, provider, ...: present, not read. */
    [key: string]: unknown;
}

/** One step of `pulumi preview|refresh --json` (display.PreviewStep). */
export interface PreviewStep {
    op: string;
    urn: string;
    provider?: string;
    oldState?: EngineResourceState | null;
    newState?: EngineResourceState | null;
    diffReasons?: string[] | null;
    detailedDiff?: Record<string, { kind: string; inputDiff?: boolean }> | null;
    [key: string]: unknown;
}

export interface PreviewDiagnostic {
    urn?: string;
    message: string;
    severity: string;
}

/** The document `pulumi refresh --preview-only --json` prints (display.PreviewDigest). */
export interface PreviewDigest {
    steps?: PreviewStep[] | null;
    diagnostics?: PreviewDiagnostic[] | null;
    changeSummary?: Record<string, number> | null;
}

/** apitype.StepEventMetadata. */
export interface StepEventMetadata {
    op: string;
    urn: string;
    type?: string;
    old?: EngineResourceState | null;
    new?: EngineResourceState | null;
    diffs?: string[] | null;
    detailedDiff?: Record<string, unknown> | null;
    [key: string]: unknown;
}

/** One line of the engine's event log (apitype.EngineEvent); only the kinds the report reads are typed. */
export interface EngineEvent {
    sequence?: number;
    resourcePreEvent?: { metadata: StepEventMetadata; planning?: boolean };
    resOutputsEvent?: { metadata: StepEventMetadata; planning?: boolean };
    summaryEvent?: { resourceChanges?: Record<string, number> | null; [key: string]: unknown };
    diagnosticEvent?: { urn?: string; prefix?: string; message: string; severity: string };
    [kind: string]: unknown;
}

// ---------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------

/** One field that differs. Values are JSON values; null where a side has none. */
export interface DriftChange {
    /** The resource's name (the last part of its URN), e.g. `qwen-unit`. */
    resource: string;
    /** Its type token, e.g. `pulumi-nodejs:dynamic/sglang-serve:SystemdService`. */
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
}

/** Field name for a resource that the refresh found gone from the box. */
export const RESOURCE_FIELD = "(resource)";

/** How the engine marks a secret in event-log states: `{ "<sig>": "<secret sig>", ciphertext|plaintext }`. */
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

/** Ops a refresh resolves to when the box matches the state. */
const UNCHANGED_OPS: ReadonlySet<string> = new Set(["same", "refresh"]);

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

interface RefreshedResource {
    op: string;
    urn: string;
    type?: string;
    old?: EngineResourceState | null;
    new?: EngineResourceState | null;
}

function rowsFor(step: RefreshedResource): DriftChange[] {
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

/** Parses an event log (JSON lines). A torn last line (the engine was killed mid-write) is dropped. */
export function parseEventLog(text: string): EngineEvent[] {
    const events: EngineEvent[] = [];
    for (const line of text.split("\n")) {
        if (line.trim() === "") continue;
        try {
            const event: unknown = JSON.parse(line);
            if (isRecord(event)) events.push(event as EngineEvent);
        } catch {
            // Only the last line can be torn; a torn one carries nothing usable.
        }
    }
    return events;
}

/**
 * Parses the digest `--json` prints; undefined when stdout is not one JSON
 * document (the engine failed before printing it).
 */
export function parseDigest(stdout: string): PreviewDigest | undefined {
    const start = stdout.indexOf("{");
    if (start === -1) return undefined;
    try {
        const doc: unknown = JSON.parse(stdout.slice(start));
        return isRecord(doc) ? (doc as PreviewDigest) : undefined;
    } catch {
        return undefined;
    }
}

/** The resources the refresh resolved, from the event log when it has them, else from the digest. */
function refreshedResources(digest: PreviewDigest | undefined, events: readonly EngineEvent[]): RefreshedResource[] {
    const byUrn = new Map<string, RefreshedResource>();
    for (const event of events) {
        const m = event.resOutputsEvent?.metadata;
        if (m && typeof m.urn === "string") byUrn.set(m.urn, { op: m.op, urn: m.urn, type: m.type, old: m.old, new: m.new });
    }
    const fromDigest = (digest?.steps ?? []).filter((s): s is PreviewStep => isRecord(s) && typeof s.urn === "string");
    if (byUrn.size === 0) {
        return fromDigest.map((s) => ({ op: s.op, urn: s.urn, old: s.oldState, new: s.newState }));
    }
    // Digest order (the engine's step order), then anything only the events have.
    const ordered: RefreshedResource[] = [];
    for (const s of fromDigest) {
        const e = byUrn.get(s.urn);
        ordered.push(e ?? { op: s.op, urn: s.urn, old: s.oldState, new: s.newState });
        byUrn.delete(s.urn);
    }
    return [...ordered, ...byUrn.values()];
}

/** The change counts the engine reported (`{ same: 7, update: 2 }`). */
export function changeSummaryOf(digest: PreviewDigest | undefined, events: readonly EngineEvent[]): Record<string, number> {
    const fromEvents = [...events].reverse().find((e) => e.summaryEvent)?.summaryEvent?.resourceChanges;
    return { ...(digest?.changeSummary ?? fromEvents ?? {}) };
}

function summaryHasChanges(summary: Record<string, number>): boolean {
    return Object.entries(summary).some(([op, n]) => !UNCHANGED_OPS.has(op) && n > 0);
}

/** The rows for every resource the refresh found changed or gone. Tolerates missing states. */
export function driftChanges(input: { digest?: PreviewDigest; events?: readonly EngineEvent[] }): DriftChange[] {
    const changed = refreshedResources(input.digest, input.events ?? []).filter((r) => !UNCHANGED_OPS.has(r.op));
    // The engine refreshes in parallel: sort by resource (stable: fields keep their order) so reruns compare equal.
    return changed.flatMap(rowsFor).sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
}

/**
 * The report for one stack. `exitCode` is the engine's under
 * `--expect-no-changes` (7: changes found); without it, drift is judged from
 * the rows and the change summary. When the engine says drift but no
 * resource could be shown (no event log, a stale digest), one row says so.
 */
export function driftReport(stack: string, input: { digest?: PreviewDigest; events?: readonly EngineEvent[]; exitCode?: number }): DriftReport {
    const events = input.events ?? [];
    const changes = driftChanges({ digest: input.digest, events });
    const summary = changeSummaryOf(input.digest, events);
    const drift = input.exitCode !== undefined ? input.exitCode === 7 || changes.length > 0 : changes.length > 0 || summaryHasChanges(summary);
    if (drift && changes.length === 0) {
        const counts = Object.entries(summary)
            .filter(([op]) => !UNCHANGED_OPS.has(op))
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
    return { stack, drift, changes };
}

/**
 * The engine's own error lines: the digest's error diagnostics (each names
 * its resource), then stderr without the line `--expect-no-changes` adds.
 */
export function engineErrors(digest: PreviewDigest | undefined, stderr: string): string[] {
    const out: string[] = [];
    for (const d of digest?.diagnostics ?? []) {
        if (d.severity !== "error") continue;
        const text = d.message.replace(/^error: /, "").trim();
        if (text === "" || text === "preview failed") continue;
        out.push(d.urn ? `${resourceNameOf(d.urn)}: ${text}` : text);
    }
    for (const line of stderr.split("\n")) {
        const text = line.trim();
        if (text === "" || /no changes were expected .* but changes were proposed/.test(text)) continue;
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
    if (opts.partial) {
        if (report.changes.length === 0) return "";
    } else if (!report.drift) {
        return `No drift on stack ${report.stack}: the boxes match what the last deployment recorded.\n`;
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
        `Put the box back: npm run pulumi -- up --refresh --stack ${report.stack}`,
        `Or accept it: change Pulumi.${report.stack}.yaml (or the code) to match, then preview and up.`,
        "",
    ].join("\n");
}
