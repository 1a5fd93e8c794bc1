/**
 * A revision's files as the Hub describes them, and the check of files
 * against that description: the Hub's answer to
 * `GET /api/models/{repo}/revision/{commit}?blobs=true` (what
 * `model_info(files_metadata=True)` reads) parsed; the allow/ignore patterns
 * applied as huggingface_hub's filter_repo_objects applies them (so the
 * preview counts the files snapshot_download fetches); each file held to the
 * sha256 of its LFS object, or for a file kept in git to its git blob id
 * (`sha1("blob <size>\0" + bytes)`). The box-side program
 * (weights/sglang-serve-weights.py) checks with the same rules where the
 * bytes are; this file is the stack's reading of its answer. Pure.
 */
import { createHash } from "node:crypto";
import { isRecord } from "../is-record";

/** One file of a revision, as the Hub's metadata gives it. */
export interface HubFile {
    path: string;
    /** The file's size (an LFS file's: its object's, not its pointer's). */
    size: number;
    /** The git blob id (of the pointer, for an LFS file). */
    blobId: string;
    /** Set for a file stored in LFS: its object's sha256 and size. */
    lfs?: { sha256: string; size: number };
}

export interface HubRevision {
    /** The commit the revision names. */
    sha: string;
    files: HubFile[];
}

/** The Hub's revision info (with `?blobs=true`) as HubRevision; throws naming what is missing. */
export function parseHubRevision(body: unknown): HubRevision {
    if (!isRecord(body) || typeof body.sha !== "string") throw new Error("the Hub's answer has no commit (sha)");
    if (!Array.isArray(body.siblings)) throw new Error("the Hub's answer lists no files (siblings)");
    const files = body.siblings.map((s): HubFile => {
        if (!isRecord(s) || typeof s.rfilename !== "string") throw new Error("a file of the Hub's answer has no name (rfilename)");
        if (typeof s.size !== "number" || typeof s.blobId !== "string") {
            throw new Error(`the Hub's answer has no size or blob id for ${s.rfilename} (ask with ?blobs=true)`);
        }
        const lfs =
            isRecord(s.lfs) && typeof s.lfs.sha256 === "string" && typeof s.lfs.size === "number" ? { sha256: s.lfs.sha256, size: s.lfs.size } : undefined;
        return { path: s.rfilename, size: lfs?.size ?? s.size, blobId: s.blobId, ...(lfs ? { lfs } : {}) };
    });
    return { sha: body.sha, files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}

/** Python's fnmatch.fnmatchcase as a RegExp: `*` crosses `/`, `?` one character, `[...]` and `[!...]` sets. */
export function fnmatchRegExp(pattern: string): RegExp {
    let out = "";
    for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i]!;
        if (c === "*") out += ".*";
        else if (c === "?") out += ".";
        else if (c === "[") {
            const end = pattern.indexOf("]", pattern[i + 1] === "!" || pattern[i + 1] === "]" ? i + 2 : i + 1);
            if (end < 0) out += "\\[";
            else {
                let set = pattern.slice(i + 1, end).replace(/\\/g, "\\\\");
                if (set.startsWith("!")) set = `^${set.slice(1)}`;
                else if (set.startsWith("^")) set = `\\${set}`;
                out += `[${set}]`;
                i = end;
            }
        } else out += c.replace(/[.+^${}()|\\/]/g, "\\$&");
    }
    return new RegExp(`^${out}$`, "s");
}

/** As filter_repo_objects: a pattern ending in `/` stands for everything under it. */
function widened(pattern: string): string {
    const p = pattern.replace(/\\/g, "/");
    return p.endsWith("/") ? `${p}*` : p;
}

/** The files snapshot_download fetches: those matching an allow pattern (all when none), then none matching an ignore pattern. */
export function filterFiles<T extends { path: string }>(
    files: readonly T[],
    patterns: { allowPatterns?: readonly string[]; ignorePatterns?: readonly string[] },
): T[] {
    const allow = (patterns.allowPatterns ?? []).map((p) => fnmatchRegExp(widened(p)));
    const ignore = (patterns.ignorePatterns ?? []).map((p) => fnmatchRegExp(widened(p)));
    return files.filter((f) => (allow.length === 0 || allow.some((r) => r.test(f.path))) && !ignore.some((r) => r.test(f.path)));
}

/** git's blob id of `bytes`: sha1 of `blob <length>\0` and the bytes (what the Hub gives for a file kept in git). */
export function gitBlobId(bytes: Buffer): string {
    return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** A file where it was staged, hashed: its sha256 always, its git blob id where the Hub holds the file in git. */
export interface HashedFile {
    path: string;
    size: number;
    sha256: string;
    gitBlobId?: string;
}

export interface Mismatch {
    path: string;
    /** What was compared: the LFS object's sha256, the git blob id, or nothing (the file is missing). */
    algorithm: "sha256" | "git-blob-sha1" | "missing";
    expected: string;
    actual: string;
}

export interface Verification {
    mismatches: Mismatch[];
    /** Files present that the revision (after the patterns) does not have. */
    extras: string[];
}

/** Each expected file against its hashed copy: LFS files by sha256 and size, the others by git blob id and size. */
export function verifyFiles(expected: readonly HubFile[], hashed: readonly HashedFile[]): Verification {
    const byPath = new Map(hashed.map((h) => [h.path, h]));
    const mismatches: Mismatch[] = [];
    for (const file of expected) {
        const got = byPath.get(file.path);
        if (!got) {
            mismatches.push({ path: file.path, algorithm: "missing", expected: `${file.size} bytes`, actual: "(no file)" });
        } else if (file.lfs) {
            if (got.sha256 !== file.lfs.sha256 || got.size !== file.lfs.size) {
                mismatches.push({ path: file.path, algorithm: "sha256", expected: file.lfs.sha256, actual: got.sha256 });
            }
        } else if (got.gitBlobId !== file.blobId || got.size !== file.size) {
            mismatches.push({ path: file.path, algorithm: "git-blob-sha1", expected: file.blobId, actual: got.gitBlobId ?? "(not hashed)" });
        }
    }
    const known = new Set(expected.map((f) => f.path));
    return { mismatches, extras: hashed.filter((h) => !known.has(h.path)).map((h) => h.path) };
}

/** One line per mismatch, naming the file and both hashes. */
export function mismatchLines(mismatches: readonly Mismatch[]): string[] {
    return mismatches.map((m) =>
        m.algorithm === "missing"
            ? `${m.path}: missing (the Hub lists ${m.expected})`
            : `${m.path}: the Hub's ${m.algorithm === "sha256" ? "sha256 (LFS)" : "git blob id"} is ${m.expected}, the downloaded file's is ${m.actual}`,
    );
}
