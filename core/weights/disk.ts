/**
 * The disk arithmetic before a download: what a revision needs (its files
 * after the patterns, less what is already in its folder), what the models
 * root has free, and what the prune would free. Short: a refusal with the
 * three numbers (the preview's, and the box-side program's before it
 * fetches). Pure.
 */

/** Bytes as people read them (binary units, one decimal), with the exact count where it matters in the message. */
export function formatBytes(n: number): string {
    const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let v = n;
    let u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) {
        v /= 1024;
        u++;
    }
    return u === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[u]}`;
}

/** What a revision's download fetches: every expected file not already in its folder with its size. */
export interface FetchPlan {
    files: number;
    bytes: number;
    /** Files already there (a resumed download, or a revision staged but for its manifest). */
    presentFiles: number;
    presentBytes: number;
    /** What the download writes. */
    fetchFiles: number;
    fetchBytes: number;
}

export function fetchPlan(expected: ReadonlyArray<{ path: string; size: number }>, present: ReadonlyArray<{ path: string; size: number }>): FetchPlan {
    const there = new Map(present.map((p) => [p.path, p.size]));
    const done = expected.filter((f) => there.get(f.path) === f.size);
    const sum = (xs: ReadonlyArray<{ size: number }>) => xs.reduce((s, f) => s + f.size, 0);
    const bytes = sum(expected);
    const presentBytes = sum(done);
    return {
        files: expected.length,
        bytes,
        presentFiles: done.length,
        presentBytes,
        fetchFiles: expected.length - done.length,
        fetchBytes: bytes - presentBytes,
    };
}

/** A folder the prune would remove, and its size. */
export interface Prunable {
    dir: string;
    bytes: number;
}

export type DiskVerdict = { ok: true; leftBytes: number } | { ok: false; shortBytes: number; message: string };

/**
 * Whether `needBytes` fit in `freeBytes` on the models root; if not, the
 * refusal: bytes needed, bytes free, and what the prune (after a good
 * rollout) would free, folder by folder, and whether that would be enough.
 */
export function diskVerdict(o: { what: string; root: string; needBytes: number; freeBytes: number; prunable: readonly Prunable[] }): DiskVerdict {
    if (o.needBytes <= o.freeBytes) return { ok: true, leftBytes: o.freeBytes - o.needBytes };
    const short = o.needBytes - o.freeBytes;
    const pruneBytes = o.prunable.reduce((s, p) => s + p.bytes, 0);
    const lines = [
        `not enough disk for ${o.what} in ${o.root}: it needs ${formatBytes(o.needBytes)} (${o.needBytes} bytes), ` +
            `${formatBytes(o.freeBytes)} (${o.freeBytes} bytes) are free: ${formatBytes(short)} short. Nothing was downloaded and nothing stopped.`,
    ];
    if (o.prunable.length === 0) {
        lines.push(
            `Pruning would free nothing (no revision the stack staged there is beyond service.weights.keepPrevious): free ${formatBytes(short)} on the box.`,
        );
    } else {
        const enough = pruneBytes >= short;
        lines.push(
            `Pruning would free ${formatBytes(pruneBytes)} (${pruneBytes} bytes)${enough ? ", enough" : `, not enough: ${formatBytes(short - pruneBytes)} more must be freed on the box`}; ` +
                `the stack prunes only after a good rollout, so remove these now, or lower service.weights.keepPrevious:`,
            ...o.prunable.map((p) => `    ${p.dir} (${formatBytes(p.bytes)})`),
        );
    }
    return { ok: false, shortBytes: short, message: lines.join("\n") };
}
