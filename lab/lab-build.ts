// Compiles the stand-ins once (tsc, lab/tsconfig.json) into
// <repo>/dist/lab/<hash of the sources>/, so each call starts plain node on
// plain JS. Builds are keyed by content: labs sharing a checkout share them.
import { createHash } from "crypto";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";

function sources(dir: string): string[] {
    const out: string[] = [];
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) out.push(...sources(p));
        else if (e.name.endsWith(".ts") || e.name === "tsconfig.json") out.push(p);
    }
    return out.sort();
}

export function buildStandIns(repo: string): string {
    const labSrc = path.join(repo, "lab");
    const hash = createHash("sha256");
    for (const f of sources(labSrc)) hash.update(`${path.relative(labSrc, f)}\0${fs.readFileSync(f)}\0`);
    const key = hash.digest("hex").slice(0, 16);
    const root = path.join(repo, "dist", "lab");
    const out = path.join(root, key);
    if (fs.existsSync(path.join(out, ".complete"))) return out;
    const tmp = `${out}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    const tsc = path.join(repo, "node_modules", "typescript", "bin", "tsc");
    const r = spawnSync(process.execPath, [tsc, "-p", path.join(labSrc, "tsconfig.json"), "--outDir", tmp], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`lab: compiling the stand-ins failed:\n${r.stdout}${r.stderr}`);
    fs.writeFileSync(path.join(tmp, ".complete"), new Date().toISOString());
    if (fs.existsSync(path.join(out, ".complete"))) fs.rmSync(tmp, { recursive: true, force: true });
    else {
        fs.rmSync(out, { recursive: true, force: true });
        fs.renameSync(tmp, out);
    }
    // Old builds: dropped after a day (a lab still running on one keeps working until then).
    for (const e of fs.readdirSync(root)) {
        const p = path.join(root, e);
        if (p === out) continue;
        let mtimeMs: number;
        try {
            mtimeMs = fs.statSync(p).mtimeMs;
        } catch {
            continue; // another lab's build in flight, renamed or removed since the listing
        }
        if (Date.now() - mtimeMs > 86_400_000) fs.rmSync(p, { recursive: true, force: true });
    }
    return out;
}

/** A word for sh, single-quoted. */
export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A tiny launcher: `before` (shell lines that may exec something else), the lab dir for the stand-in, then exec node on the compiled JS. */
export function writeShim(file: string, nodePath: string, js: string, labDir: string, before = ""): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const text = `#!/bin/sh\n${before ? `${before}\n` : ""}export SGLANG_LAB_DIR=${shellQuote(labDir)}\nexport SGLANG_LAB_ARGV0="$0"\nexec ${shellQuote(nodePath)} ${shellQuote(js)} "$@"\n`;
    fs.writeFileSync(file, text, { mode: 0o755 });
    fs.chmodSync(file, 0o755);
}
