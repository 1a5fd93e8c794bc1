import { deepEqual } from "../core/drift/diff";

/** The keys whose values differ between olds and news (core/drift/diff.ts deepEqual: an undefined field equals a missing one). */
export function changedKeys<T extends object>(olds: Partial<T>, news: Partial<T>, keys: readonly (keyof T)[]): (keyof T)[] {
    return keys.filter((k) => !deepEqual(olds[k], news[k]));
}

/** The names whose values differ between two string maps (flags, environment variables). */
export function changedNames(a: Readonly<Record<string, string>> = {}, b: Readonly<Record<string, string>> = {}): string[] {
    return Object.keys({ ...a, ...b }).filter((k) => a[k] !== b[k]);
}
