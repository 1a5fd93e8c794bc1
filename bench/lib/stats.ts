/** Median and range of repeated measurements. */
export interface Summary {
    n: number;
    median: number;
    min: number;
    max: number;
    values: number[];
}

export function summarize(values: number[]): Summary {
    const v = values.filter((x) => Number.isFinite(x));
    if (v.length === 0) return { n: 0, median: NaN, min: NaN, max: NaN, values: [] };
    const s = [...v].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
    return { n: v.length, median, min: s[0]!, max: s[s.length - 1]!, values: v };
}

/** Wall-clock time in epoch milliseconds with sub-millisecond resolution (same clock as Date.now()). */
export function nowMs(): number {
    return performance.timeOrigin + performance.now();
}
