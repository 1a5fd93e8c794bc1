/**
 * Per-field differences between what the code declares and what a box runs,
 * for drift reports and previews. Secrets are compared but never shown.
 */

export interface FieldDiff {
    field: string;
    declared: unknown;
    actual: unknown;
}

import { SECRET_MASK } from "../secrets/redact";
import { isRecord } from "../is-record";

/**
 * Fields whose values differ, in the declared record's key order followed by
 * keys only the actual record has. Values are compared structurally (arrays
 * by element, objects by key). A field named in `secretKeys` (or under one:
 * `apiKey` masks `apiKey.x`) shows `[secret]` on each side that has a value,
 * so a preview can say "changed" without saying what to.
 */
export function diffFields(
    declared: Readonly<Record<string, unknown>>,
    actual: Readonly<Record<string, unknown>>,
    secretKeys: Iterable<string> = [],
): FieldDiff[] {
    const secrets = [...secretKeys];
    const keys = [...Object.keys(declared), ...Object.keys(actual).filter((k) => !(k in declared))];
    const diffs: FieldDiff[] = [];
    for (const field of keys) {
        if (deepEqual(declared[field], actual[field])) continue;
        const secret = secrets.some((s) => field === s || field.startsWith(`${s}.`));
        diffs.push({
            field,
            declared: secret ? mask(declared[field]) : declared[field],
            actual: secret ? mask(actual[field]) : actual[field],
        });
    }
    return diffs;
}

function mask(value: unknown): unknown {
    return value === undefined ? undefined : SECRET_MASK;
}

export function deepEqual(a: unknown, b: unknown): boolean {
    if (Object.is(a, b)) return true;
    if (Array.isArray(a) && Array.isArray(b)) {
        return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
    }
    if (isRecord(a) && isRecord(b)) {
        const ka = Object.keys(a).filter((k) => a[k] !== undefined);
        const kb = Object.keys(b).filter((k) => b[k] !== undefined);
        return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
    }
    return false;
}
