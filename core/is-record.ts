/** A plain object (JSON's object), not null or an array: what parsed config and JSON documents are checked with. */
export function isRecord(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === "object" && !Array.isArray(value);
}
