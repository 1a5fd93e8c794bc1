// The check of an install.sh site dir before its code runs (issue 34 finding 1):
// every file in it is one that an installed wheel's RECORD lists, with the
// sha256 that RECORD gives. A file no RECORD lists (a planted .pth, a module
// or __pycache__ entry added later), a listed file whose content differs (an
// edited .py), one missing, or a link fails the check; ensureInstalled
// (oracle.ts) then rebuilds the site, and runOracle refuses to run it.
//
// What it holds against: a damaged or partly planted cache, e.g. by a job
// that shared the runner. What it cannot hold against: code that rewrites
// RECORD too. A check made by the same user, against files that user can
// write, cannot; that is why deploy jobs run on a runner of their own
// (docs/operator-guide.md, "CI: what runs where").
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";

/** ok: the site as checked, named by its real path and stat signature (any change to any entry changes it). */
export type SiteCheck = { ok: true; checked: string } | { ok: false; problems: string[] };

/** install.sh's own file in each site: the key of what it installed. */
export const SITE_KEY_FILE = ".sglang-serve-key";
/** install.sh's list of the .pyc files pip compiled (`sha256sum` lines), which RECORD lists without a hash. */
export const COMPILED_FILE = ".sglang-serve-compiled";

/** Problems quoted in one failure (the first few by path). */
const PROBLEMS_SHOWN = 5;

interface Entry {
    rel: string;
    stat: fs.Stats;
}

/** Every entry under `root`, by its path relative to it ("/"-separated), not following links. */
function walk(root: string): Entry[] {
    const out: Entry[] = [];
    const visit = (rel: string) => {
        for (const name of fs.readdirSync(path.join(root, rel)).sort()) {
            const r = rel === "" ? name : `${rel}/${name}`;
            const stat = fs.lstatSync(path.join(root, r));
            if (stat.isDirectory()) visit(r);
            else out.push({ rel: r, stat });
        }
    };
    visit("");
    return out;
}

/** The fields of one RECORD line (CSV: a path with a comma is quoted). */
function csvFields(line: string): string[] {
    const fields: string[] = [];
    let i = 0;
    while (i <= line.length) {
        if (line[i] === '"') {
            let value = "";
            i++;
            while (i < line.length) {
                if (line[i] === '"' && line[i + 1] === '"') {
                    value += '"';
                    i += 2;
                } else if (line[i] === '"') {
                    i++;
                    break;
                } else value += line[i++];
            }
            fields.push(value);
            i++; // the comma
        } else {
            const comma = line.indexOf(",", i);
            const end = comma === -1 ? line.length : comma;
            fields.push(line.slice(i, end));
            i = end + 1;
        }
    }
    return fields;
}

/**
 * A RECORD path as a path in the site: pip --target records what it put in the
 * target's bin/ (console scripts) as `../../bin/x`, relative to the temporary
 * scheme's lib/python it installed from. Anything else that leaves the site
 * names nothing in it: undefined.
 */
function sitePath(recorded: string): string | undefined {
    const p = path.posix.normalize(recorded.replace(/\\/g, "/").replace(/^\.\.\/\.\.\//, ""));
    return p.startsWith("../") || p === ".." || path.posix.isAbsolute(p) ? undefined : p;
}

/** A file's sha256 (RECORD gives it as `sha256=` and URL-safe base64 without padding; sha256sum as hex). */
function sha256(file: string): Buffer {
    return createHash("sha256").update(fs.readFileSync(file)).digest();
}

/** What the site's RECORD files list: path -> the hashes given ("" where a line gives none: RECORD itself, and each .pyc pip compiled). */
function recorded(root: string, entries: readonly Entry[], problems: string[]): Map<string, Set<string>> {
    const listed = new Map<string, Set<string>>();
    for (const { rel } of entries.filter((e) => /^[^/]+\.dist-info\/RECORD$/.test(e.rel))) {
        for (const line of fs.readFileSync(path.join(root, rel), "utf8").split("\n")) {
            if (line.trim() === "") continue;
            const [file = "", hash = ""] = csvFields(line.replace(/\r$/, ""));
            const p = sitePath(file);
            if (p === undefined) continue;
            if (hash !== "" && !hash.startsWith("sha256=")) {
                problems.push(`${rel} lists ${p} with a ${hash.split("=")[0]} hash, not sha256`);
                continue;
            }
            const hashes = listed.get(p) ?? new Set<string>();
            hashes.add(hash);
            listed.set(p, hashes);
        }
    }
    return listed;
}

/** install.sh's list of the files pip compiled: path -> sha256 (hex). */
function compiled(root: string, entries: readonly Entry[]): Map<string, string> {
    const out = new Map<string, string>();
    if (!entries.some((e) => e.rel === COMPILED_FILE)) return out;
    for (const line of fs.readFileSync(path.join(root, COMPILED_FILE), "utf8").split("\n")) {
        const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
        if (m) out.set(m[2]!, m[1]!);
    }
    return out;
}

/** The problem with one file of the site, if any. */
function fileProblem(root: string, { rel, stat }: Entry, listed: Map<string, Set<string>>, pyc: Map<string, string>): string | undefined {
    if (!stat.isFile()) return `${rel} is ${stat.isSymbolicLink() ? "a symbolic link" : "not a regular file"}, which no wheel installs`;
    const hashes = listed.get(rel);
    if (hashes === undefined) return `${rel} is in no installed distribution's RECORD (added after the install)`;
    const compiledHash = pyc.get(rel);
    if (compiledHash !== undefined) {
        return sha256(path.join(root, rel)).toString("hex") === compiledHash
            ? undefined
            : `${rel} differs from the sha256 install.sh recorded when pip compiled it`;
    }
    if ([...hashes].some((h) => h !== "")) {
        return hashes.has(`sha256=${sha256(path.join(root, rel)).toString("base64url")}`) ? undefined : `${rel} differs from the sha256 its RECORD gives`;
    }
    // RECORD lists itself (and a wheel's signature files) without a hash: metadata, never imported.
    return /^[^/]+\.dist-info\/[^/]+$/.test(rel) ? undefined : `${rel} has no hash in RECORD and is not a file pip compiled at the install`;
}

/** The full check: every file read and hashed. */
function checkContent(root: string, entries: readonly Entry[]): string[] {
    const problems: string[] = [];
    if (!entries.some((e) => e.rel === SITE_KEY_FILE)) problems.push(`${SITE_KEY_FILE} is missing (an install that did not complete)`);
    const listed = recorded(root, entries, problems);
    const pyc = compiled(root, entries);
    const present = new Set(entries.map((e) => e.rel));
    for (const entry of entries) {
        if (entry.rel === SITE_KEY_FILE || entry.rel === COMPILED_FILE) continue;
        const problem = fileProblem(root, entry, listed, pyc);
        if (problem !== undefined) problems.push(problem);
    }
    for (const p of listed.keys()) if (!present.has(p)) problems.push(`${p} is listed in a RECORD but missing`);
    return problems;
}

/** The entries' stat signature: a file changed, added, removed or replaced since changes it (ctime cannot be set back). */
function statSignature(entries: readonly Entry[]): string {
    const h = createHash("sha256").update("site-check 1\n");
    for (const { rel, stat } of entries) h.update(`${rel}\0${stat.ino}\0${stat.size}\0${stat.mtimeMs}\0${stat.ctimeMs}\0${stat.mode}\n`);
    return h.digest("hex");
}

/**
 * Whether the site dir `dir` holds only what its wheels' RECORDs list, as
 * they list it. A site whose stat signature (inode, size, mtime, ctime and
 * mode of every entry: a file changed, added, removed or replaced changes it,
 * and ctime cannot be set back) is the one recorded beside it (`<site>.checked`,
 * outside the site) when it last passed is not read again: the warm path is one walk of the tree
 * (about 0.1 s a site). Any other is read and hashed in full (about 2 s a
 * site), and its signature recorded when it passes. The record is no weaker
 * than RECORD itself: code that can rewrite one can rewrite the other.
 */
export function checkSite(dir: string): SiteCheck {
    let root: string;
    let entries: Entry[];
    try {
        root = fs.realpathSync(dir);
        entries = walk(root);
    } catch (e) {
        return { ok: false, problems: [`${dir} cannot be read: ${(e as Error).message}`] };
    }
    const signature = statSignature(entries);
    const record = `${root}.checked`;
    let last: string | undefined;
    try {
        last = fs.readFileSync(record, "utf8").trim();
    } catch {
        last = undefined;
    }
    const checked = `${root}\0${signature}`;
    if (last === signature) return { ok: true, checked };
    const problems = checkContent(root, entries);
    if (problems.length > 0) {
        try {
            fs.rmSync(record, { force: true });
        } catch {
            // Not this user's to remove: the signature differs anyway.
        }
        return { ok: false, problems: problems.slice(0, PROBLEMS_SHOWN) };
    }
    try {
        const tmp = `${record}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, `${signature}\n`);
        fs.renameSync(tmp, record);
    } catch {
        // A cache this user may read but not write: checked in full at each use.
    }
    return { ok: true, checked };
}

/** One line for a failed check: the site and its first problems. */
export function siteProblem(dir: string, check: SiteCheck): string {
    return check.ok ? `${dir}: ok` : `${dir} failed its RECORD check: ${check.problems.join("; ")}`;
}
