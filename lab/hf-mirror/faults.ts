// The mirror's fault knobs. On the mirror's side: a corrupted blob (an LFS
// object's bytes changed on the mirror's disk, its pointer and so the Hub
// metadata unchanged) and the mirror dying mid-download (the whole mirror,
// olah and its front, SIGKILLed after it sent part of a file). The box's
// side (a disk too small) is small-disk.ts.
import * as fs from "fs";
import { lfsObjectOf } from "./git-repo";
import { MirrorDir, modelRepoDir } from "./mirror-dir";

export interface MirrorFaults {
    /**
     * The next download (GET .../resolve/...) of `file` (its path in the
     * repository) kills the mirror after `afterBytes` bytes of the response's
     * body: the client gets those bytes, then the connection ends short, and
     * the mirror's address refuses connections until it is started again.
     * Used once: cleared when it fires, so a restarted mirror serves the file.
     */
    dieMidDownload?: { file: string; afterBytes: number };
}

export function readMirrorFaults(file: string): MirrorFaults {
    try {
        return JSON.parse(fs.readFileSync(file, "utf8")) as MirrorFaults;
    } catch {
        return {};
    }
}

export function setMirrorFaults(d: MirrorDir, faults: MirrorFaults): void {
    fs.writeFileSync(`${d.faultsFile}.tmp`, JSON.stringify(faults));
    fs.renameSync(`${d.faultsFile}.tmp`, d.faultsFile);
}

export function clearMirrorFaults(d: MirrorDir): void {
    fs.rmSync(d.faultsFile, { force: true });
}

/** How many bytes corruptBlob changes: a run in the middle of the object. */
export const CORRUPT_BYTES = 4096;

/**
 * Corrupts the LFS object behind `file` at `revision` in the mirror's clone of
 * `repoId`: CORRUPT_BYTES bytes from its middle XORed with 0xff (same size, so
 * only a checksum tells). Returns the object's sha256 (what the pointer and
 * the Hub metadata still say) and `restore` (the same XOR again).
 */
export function corruptBlob(d: MirrorDir, repoId: string, revision: string, file: string): { oid: string; offset: number; restore: () => void } {
    const object = lfsObjectOf(modelRepoDir(d, repoId), revision, file);
    const offset = Math.max(0, Math.floor(object.size / 2) - CORRUPT_BYTES / 2);
    const flip = () => {
        const fd = fs.openSync(object.path, "r+");
        try {
            const run = Buffer.alloc(Math.min(CORRUPT_BYTES, object.size - offset));
            fs.readSync(fd, run, 0, run.length, offset);
            for (let i = 0; i < run.length; i++) run[i] = run[i]! ^ 0xff;
            fs.writeSync(fd, run, 0, run.length, offset);
        } finally {
            fs.closeSync(fd);
        }
    };
    flip();
    return { oid: object.oid, offset, restore: flip };
}
