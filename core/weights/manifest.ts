/**
 * A staged revision's manifest (`<revision folder>/.sglang-serve-weights/manifest.json`,
 * written last by weights/sglang-serve-weights.py once every file matched
 * the Hub's hashes): each file's path, size, sha256 and mtime, and the
 * digest of its content. Its presence means the revision is staged; the
 * state records its digest (the drafter's: the revision and this digest).
 *
 * The checks of a staged folder against it: the cheap one every refresh
 * runs (sizes and mtimes, from one `find`), and the full one
 * (`npm run drift -- --verify`: every file's sha256 again). A changed,
 * missing or added file is drift, named. Pure: the scripts are run by
 * remote/weights-staging.ts and their output parsed here.
 */
import { sha256 } from "../digest";
import { isRecord } from "../is-record";
import { HUB_METADATA_DIR, MANIFEST_FILE, OURS_DIR } from "./weights-layout";

export interface ManifestFile {
    path: string;
    size: number;
    sha256: string;
    /** st_mtime_ns as a decimal string (more digits than a JSON number keeps). */
    mtimeNs: string;
}

export interface Manifest {
    format: 1;
    repo: string;
    revision: string;
    stagedBy: string;
    /** Seconds since the epoch (the box's clock). */
    stagedAt: number;
    files: ManifestFile[];
    /** manifestDigest(files). */
    digest: string;
}

/** sha256 of the files' `<sha256>  <size>  <path>` lines sorted by path: the content only (no mtimes, no owner), the same on every box. */
export function manifestDigest(files: ReadonlyArray<Pick<ManifestFile, "path" | "size" | "sha256">>): string {
    const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return sha256(sorted.map((f) => `${f.sha256}  ${f.size}  ${f.path}\n`).join(""));
}

/** What the state records for weights staged from a source: the commit and the manifest's digest (the drafter digest, replacing names, sizes and mtimes). */
export function pinnedWeightsDigest(m: Pick<Manifest, "revision" | "digest">): string {
    return `${m.revision}/${m.digest}`;
}

export class ManifestError extends Error {}

/**
 * Set (to 1) by `npm run drift -- --verify` for the refresh it runs: the
 * providers then re-hash every staged file against its manifest's sha256
 * instead of comparing sizes and mtimes (the cheap check of every refresh).
 */
export const VERIFY_WEIGHTS_VARIABLE = "SGLANG_SERVE_VERIFY_WEIGHTS";

/** A manifest's text, checked: its shape, and a digest that agrees with its files (a manifest edited by hand, or cut short, is refused). */
export function parseManifest(text: string): Manifest {
    let doc: unknown;
    try {
        doc = JSON.parse(text);
    } catch (e) {
        throw new ManifestError(`the manifest is not JSON (${(e as Error).message})`);
    }
    if (!isRecord(doc) || doc.format !== 1) throw new ManifestError("the manifest is not format 1");
    const { repo, revision, stagedBy, stagedAt, digest } = doc;
    if (
        typeof repo !== "string" ||
        typeof revision !== "string" ||
        typeof stagedBy !== "string" ||
        typeof stagedAt !== "number" ||
        typeof digest !== "string"
    ) {
        throw new ManifestError("the manifest lacks repo, revision, stagedBy, stagedAt or digest");
    }
    if (!Array.isArray(doc.files)) throw new ManifestError("the manifest lists no files");
    const files = doc.files.map((f): ManifestFile => {
        const ok = isRecord(f) && typeof f.path === "string" && typeof f.size === "number" && typeof f.sha256 === "string" && /^\d+$/.test(String(f.mtimeNs));
        if (!ok) throw new ManifestError(`a file of the manifest lacks path, size, sha256 or mtimeNs: ${JSON.stringify(f).slice(0, 200)}`);
        return { path: f.path as string, size: f.size as number, sha256: f.sha256 as string, mtimeNs: String(f.mtimeNs) };
    });
    const computed = manifestDigest(files);
    if (computed !== digest) throw new ManifestError(`the manifest's digest ${digest} does not match its files (${computed})`);
    return { format: 1, repo, revision, stagedBy, stagedAt, files, digest };
}

// ---------------------------------------------------------------------------
// The checks on the box
// ---------------------------------------------------------------------------

const SEPARATOR = "---sglang-serve-manifest---";

/**
 * `sh -c MANIFEST_CHECK_SCRIPT sh <revision folder> <0|1 rehash>`: the
 * manifest, a separator, then one NUL-terminated record per file of the
 * folder (the stack's and huggingface_hub's bookkeeping left out):
 * `<size> <mtime as find's %T@> <path>`, or with rehash `<sha256>  <path>`
 * records from sha256sum -z (GNU coreutils 8.30+, Debian 10+). Exit 3 when
 * the folder has no manifest (not staged).
 */
export const MANIFEST_CHECK_SCRIPT = `set -eu
cd "$1" 2>/dev/null || { echo "sglang-serve: no folder $1" >&2; exit 3; }
cat ./${OURS_DIR}/${MANIFEST_FILE} 2>/dev/null || { echo "sglang-serve: no manifest in $1" >&2; exit 3; }
echo
echo ${SEPARATOR}
if [ "$2" = 1 ]; then
  find . -path ./${OURS_DIR} -prune -o -path ./${HUB_METADATA_DIR} -prune -o -type f -print0 | xargs -0r sha256sum -z --
else
  find . -path ./${OURS_DIR} -prune -o -path ./${HUB_METADATA_DIR} -prune -o -type f -printf '%s %T@ %P\\0'
fi
`;

export function manifestCheckArgv(dir: string, rehash: boolean): string[] {
    return ["sh", "-c", MANIFEST_CHECK_SCRIPT, "sh", dir, rehash ? "1" : "0"];
}

/** One file as the box has it now: size and mtime (cheap), or sha256 (rehash). */
export interface FileOnBox {
    path: string;
    size?: number;
    mtimeNs?: string;
    sha256?: string;
}

/** find's %T@ (`<seconds>.<fraction>`, the fraction in more digits than nanoseconds) as st_mtime_ns, exactly. */
export function mtimeNsOf(findTime: string): string {
    const [sec, frac = ""] = findTime.split(".");
    const ns = (frac + "000000000").slice(0, 9);
    return (BigInt(sec!) * 1_000_000_000n + BigInt(ns)).toString();
}

/** The script's output: the manifest's text, and the files now. */
export function parseManifestCheck(stdout: string, rehash: boolean): { manifestText: string; files: FileOnBox[] } {
    const at = stdout.indexOf(`\n${SEPARATOR}\n`);
    if (at < 0) throw new ManifestError("the manifest check's output has no separator");
    const manifestText = stdout.slice(0, at);
    const records = stdout
        .slice(at + SEPARATOR.length + 2)
        .split("\0")
        .filter((r) => r.length > 0);
    const files = records.map((r): FileOnBox => {
        if (rehash) {
            const m = /^\\?([0-9a-f]{64}) [ *]\.\/(.*)$/s.exec(r);
            if (!m) throw new ManifestError(`a sha256sum record reads ${JSON.stringify(r.slice(0, 120))}`);
            return { path: m[2]!, sha256: m[1]! };
        }
        const m = /^(\d+) (\d+(?:\.\d+)?) (.*)$/s.exec(r);
        if (!m) throw new ManifestError(`a find record reads ${JSON.stringify(r.slice(0, 120))}`);
        return { path: m[3]!, size: Number(m[1]), mtimeNs: mtimeNsOf(m[2]!) };
    });
    return { manifestText, files };
}

/** A difference between a staged folder and its manifest. */
export interface ManifestDrift {
    path: string;
    what: "missing" | "size" | "mtime" | "sha256" | "extra";
    /** The manifest's value (absent for an extra file). */
    expected?: string;
    /** The box's value (absent for a missing file). */
    actual?: string;
}

/** The folder's files against the manifest: missing and added files, then each file's size and mtime (cheap) or sha256 (rehash). */
export function compareWithManifest(manifest: Pick<Manifest, "files">, now: readonly FileOnBox[]): ManifestDrift[] {
    const onBox = new Map(now.map((f) => [f.path, f]));
    const out: ManifestDrift[] = [];
    for (const f of manifest.files) {
        const got = onBox.get(f.path);
        if (!got) out.push({ path: f.path, what: "missing", expected: `${f.size} bytes, sha256 ${f.sha256}` });
        else if (got.sha256 !== undefined) {
            if (got.sha256 !== f.sha256) out.push({ path: f.path, what: "sha256", expected: f.sha256, actual: got.sha256 });
        } else if (got.size !== f.size) out.push({ path: f.path, what: "size", expected: String(f.size), actual: String(got.size) });
        else if (got.mtimeNs !== f.mtimeNs) out.push({ path: f.path, what: "mtime", expected: f.mtimeNs, actual: String(got.mtimeNs) });
    }
    const listed = new Set(manifest.files.map((f) => f.path));
    for (const f of now) if (!listed.has(f.path)) out.push({ path: f.path, what: "extra", ...(f.size !== undefined ? { actual: `${f.size} bytes` } : {}) });
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** One line per difference, naming the file, for the drift report. */
export function manifestDriftLines(dir: string, drift: readonly ManifestDrift[]): string[] {
    const mtime = (ns: string | undefined) => (ns === undefined ? "?" : new Date(Number(BigInt(ns) / 1_000_000n)).toISOString());
    return drift.map((d) => {
        const file = `${dir}/${d.path}`;
        switch (d.what) {
            case "missing":
                return `${file} is missing (the manifest has ${d.expected})`;
            case "extra":
                return `${file} is not in the manifest (${d.actual ?? "added"}): a file added to a staged revision`;
            case "size":
                return `${file} is ${d.actual} bytes, the manifest says ${d.expected}: changed since it was verified`;
            case "mtime":
                return `${file} was modified at ${mtime(d.actual)}, after it was verified (${mtime(d.expected)}): changed since it was verified (npm run drift -- --verify re-hashes it)`;
            case "sha256":
                return `${file} has sha256 ${d.actual}, the manifest says ${d.expected}: its bytes changed since it was verified`;
            default: {
                const never: never = d.what;
                throw new Error(`unknown drift ${String(never)}`);
            }
        }
    });
}
