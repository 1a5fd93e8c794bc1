// A temporary directory that only root owns and writes, on a path whose every
// directory is root's alone (/run, not the world-writable /tmp): the box-facts
// read runs an interpreter only through such paths (core/box/box-facts.ts
// BOX_FACTS_LAUNCHER), so the tests' boxes live in one. Run as another user,
// it is an ordinary temporary directory, and box-facts reads there are refused.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export function rootOnlyTempDir(prefix: string): string {
    const base = process.getuid?.() === 0 && fs.existsSync("/run") ? "/run" : os.tmpdir();
    const dir = fs.mkdtempSync(path.join(base, prefix));
    fs.chmodSync(dir, 0o755);
    return dir;
}
