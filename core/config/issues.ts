/**
 * What the validation reports: one ConfigIssue per problem, each naming the
 * Pulumi key, the value given and the fix, and zod's issues translated into
 * them (with "did you mean" for a misspelt key). Secret values are never
 * printed.
 */
import { z } from "zod";
import { CONFIG_NAMESPACE, pulumiKey } from "./namespace";
import { SECRET_CONFIG_KEYS, SECRET_CONFIG_LEAVES, StackConfigSchema } from "./schema";

export interface ConfigIssue {
    /** Dotted path inside the stack config, e.g. `service.speculative.numDraftTokens`. */
    path: string;
    /** The offending value as given (undefined when missing). */
    value: unknown;
    /** A sentence naming the key, what is wrong, and the fix. */
    message: string;
}
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
    const leaf = path.slice(path.lastIndexOf(".") + 1);
    return SECRET_CONFIG_KEYS.some((key) => path === key || path.startsWith(`${key}.`)) || SECRET_CONFIG_LEAVES.includes(leaf);
}

function describeValue(path: string, value: unknown): string {
    if (value === undefined) return "(not set)";
    if (isSecretPath(path)) return "[secret]";
    // A URL's credentials (a pip source given with `user:pw@`, refused for it) are not shown either.
    const text = (JSON.stringify(value) ?? String(value)).replace(/(:\/\/)[^/?#@\s"]*@/g, "$1[credentials]@");
    return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * The sections every stack must set: host (or boxes) and service (or
 * servers); the rules that ask for one of each pair file their issue under
 * host and service. The others are optional or have defaults.
 */
const REQUIRED_SECTIONS: readonly string[] = ["host", "service"];

/** A required section not set: the stack's config is not filled in yet. */
function isMissingSection(issue: ConfigIssue): boolean {
    return issue.value === undefined && REQUIRED_SECTIONS.includes(issue.path);
}

/** Where a stack's config starts from: the committed example stacks, the steps, and the reference of every key. */
function exampleHint(file: string): string {
    return [
        `Start from an example: copy the config: section of Pulumi.kpro5.yaml (a Proxmox host, commands through pct exec)`,
        `or Pulumi.ct129.yaml (a box reached straight over SSH) into ${file}, leaving out its secure: values, and edit it`,
        `(docs/operator-guide.md, "Adding a host or a stack"); docs/design.md, "Stack config", describes every key.`,
    ].join("\n");
}

/**
 * One message listing every problem: the Pulumi key, the value given, and
 * the fix. Secret values are shown as `[secret]`. A stack with a whole
 * section missing (a new stack's first preview) is also told where the
 * example config is.
 */
export function formatConfigIssues(issues: readonly ConfigIssue[], stack?: string): string {
    const file = `Pulumi.${stack ?? "<stack>"}.yaml`;
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    const lines = [`Invalid ${CONFIG_NAMESPACE} stack config (${count}); fix these keys in ${file}:`];
    issues.forEach((issue, i) => {
        lines.push(`  ${i + 1}. ${pulumiKey(issue.path)} = ${describeValue(issue.path, issue.value)}`);
        lines.push(`     ${issue.message}`);
    });
    if (issues.some(isMissingSection)) lines.push(exampleHint(file));
    return lines.join("\n");
}

// ---------------------------------------------------------------------------
// Zod issues -> ConfigIssues
// ---------------------------------------------------------------------------

/** Generic messages for issues whose schema did not set its own; each says what to write instead. */
export const errorMap: z.core.$ZodErrorMap = (issue) => {
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

/** ConfigIssues for zod's issues in the section at `prefix`; `raw` is the whole config, for the values given. */
export function fromZodIssues(zodIssues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[], raw: unknown): ConfigIssue[] {
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

export function unknownKeyIssue(parentPath: readonly PropertyKey[], key: string, known: readonly string[], raw: unknown): ConfigIssue {
    const path = formatPath([...parentPath, key]);
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase() || editDistance(k, key) <= 2);
    const hint = near ? `did you mean ${near}? ` : "";
    return {
        path,
        value: valueAt(raw, [...parentPath, key]),
        message: `${path} is not a known key: ${hint}remove it or fix its spelling (known here: ${known.join(", ")}).`,
    };
}

/** Keys a schema at `path` accepts, for "did you mean" hints on unknown keys. */
function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
    let current: z.core.$ZodType | undefined = schema;
    for (const part of path) {
        if (!current) return [];
        const inner = withoutWrappers(current);
        if (inner instanceof z.ZodObject) current = inner.shape[String(part)];
        else if (inner instanceof z.ZodArray) current = inner.element;
        else if (inner instanceof z.ZodRecord) current = inner.valueType;
        else return [];
    }
    if (!current) return [];
    const inner = withoutWrappers(current);
    return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

/** `schema` inside the wrappers that leave its keys as they are (optional, default, prefault, nullable, and a transform after it: the service's folders). */
function withoutWrappers(schema: z.core.$ZodType): z.core.$ZodType {
    if (schema instanceof z.ZodPipe) return withoutWrappers(schema.in);
    const wrapped =
        schema instanceof z.ZodOptional ||
        schema instanceof z.ZodExactOptional ||
        schema instanceof z.ZodDefault ||
        schema instanceof z.ZodPrefault ||
        schema instanceof z.ZodNullable;
    return wrapped ? withoutWrappers(schema.unwrap()) : schema;
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

export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
    let current: unknown = root;
    for (const part of path) {
        if (current === null || typeof current !== "object") return undefined;
        current = (current as Record<PropertyKey, unknown>)[part];
    }
    return current;
}
