import { summarize, Summary } from "./stats";

/** One measured figure: its samples' median and range, under a key of the results JSON and a label of the table. */
export interface Figure {
    key: string;
    label: string;
    unit: "s" | "ms" | "x" | "count";
    summary: Summary;
    note?: string;
}

/**
 * What one bench run found, passed to every phase: the figures in the order
 * they were measured (the table's rows), notes for the reader, and extra
 * records (per-run lags, profiles) that scripts/bench.ts writes into the
 * results JSON next to the figures.
 */
export class Report {
    readonly figures: Figure[] = [];
    readonly notes: string[] = [];
    readonly extra: Record<string, unknown> = {};

    figure(key: string, label: string, unit: Figure["unit"], values: number[], note?: string): Figure {
        const f = { key, label, unit, summary: summarize(values), note };
        this.figures.push(f);
        return f;
    }
}

export function fmtMs(v: number | undefined): string {
    return v === undefined ? "n/a" : `${Math.round(v)} ms`;
}

export function fmt(v: number, unit: Figure["unit"]): string {
    if (!Number.isFinite(v)) return "n/a";
    switch (unit) {
        case "s":
            return v.toFixed(2);
        case "ms":
            return String(Math.round(v));
        case "x":
            return v.toFixed(2);
        case "count":
            return Number.isInteger(v) ? String(v) : v.toFixed(1);
    }
}

/** The figures as a table: label, n, median, range, note. */
export function table(figures: readonly Figure[]): string {
    const rows = figures.map((f) => {
        const s = f.summary;
        return [
            f.label,
            String(s.n),
            `${fmt(s.median, f.unit)} ${f.unit === "count" ? "" : f.unit}`.trim(),
            `${fmt(s.min, f.unit)}–${fmt(s.max, f.unit)}`,
            f.note ?? "",
        ];
    });
    const head = ["figure", "n", "median", "range (min–max)", ""];
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) =>
        r
            .map((c, i) => (i === 1 || i === 2 || i === 3 ? c.padStart(w[i]!) : c.padEnd(w[i]!)))
            .join("  ")
            .trimEnd();
    return [line(head), w.map((n) => "-".repeat(n)).join("  "), ...rows.map(line)].join("\n");
}
