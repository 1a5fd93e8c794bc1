// Simulated GPU memory: each simulated server process keeps one file
// (<gpuStateDir>/<pid>.json) saying what it holds on each GPU; nvidia-smi
// adds them up. Memory stays "used" for a release delay after the process
// exits (a dead process that wrote no exit time is noticed by the next reader).
// The server runs in the container's PID namespace and nvidia-smi also on
// the host, so liveness is not a pid: the server holds a FIFO
// (<pid>.alive) open for reading, and a reader that can open it for writing
// without blocking knows the server is alive (the kernel closes it when the
// process dies, however it dies).
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { writeJsonAtomic } from "../lab-info";

export interface GpuHolding {
    /** The server's pid in its own (the container's) PID namespace. */
    pid: number;
    processName: string;
    /** GPU index -> MiB held. */
    perGpuMiB: Record<string, number>;
    releaseDelaySeconds: number;
    exitedAtMs?: number;
}

const aliveFile = (dir: string, pid: number) => path.join(dir, `${pid}.alive`);

/** The server's side: the FIFO it keeps open for as long as it lives (the fd is never closed). */
const held = new Set<string>();
export function holdAlive(dir: string, pid: number): void {
    const fifo = aliveFile(dir, pid);
    if (held.has(fifo)) return;
    held.add(fifo);
    fs.mkdirSync(dir, { recursive: true });
    fs.rmSync(fifo, { force: true });
    const r = spawnSync("mkfifo", ["-m", "0600", fifo]);
    if (r.status !== 0) return;
    fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
}

function alive(dir: string, h: GpuHolding): boolean {
    try {
        fs.closeSync(fs.openSync(aliveFile(dir, h.pid), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
        return true;
    } catch {
        // ENXIO: nobody holds it for reading any more; ENOENT: gone
        return false;
    }
}

export function writeHolding(dir: string, h: GpuHolding): void {
    writeJsonAtomic(path.join(dir, `${h.pid}.json`), h);
}

export function markExited(dir: string, pid: number, releaseDelaySeconds?: number): void {
    const file = path.join(dir, `${pid}.json`);
    try {
        const h = JSON.parse(fs.readFileSync(file, "utf8")) as GpuHolding;
        h.exitedAtMs = Date.now();
        if (releaseDelaySeconds !== undefined) h.releaseDelaySeconds = releaseDelaySeconds;
        writeJsonAtomic(file, h);
    } catch {
        // nothing held
    }
}

export interface GpuUsage {
    usedMiB: Map<number, number>;
    apps: Array<{ pid: number; name: string; gpu: number; usedMiB: number }>;
}

export function readUsage(dir: string, now = Date.now()): GpuUsage {
    const usage: GpuUsage = { usedMiB: new Map(), apps: [] };
    let files: string[];
    try {
        files = fs.readdirSync(dir).filter((f) => /^\d+\.json$/.test(f));
    } catch {
        return usage;
    }
    for (const f of files) {
        const file = path.join(dir, f);
        let h: GpuHolding;
        try {
            h = JSON.parse(fs.readFileSync(file, "utf8")) as GpuHolding;
        } catch {
            continue;
        }
        const live = h.exitedAtMs === undefined && alive(dir, h);
        if (!live && h.exitedAtMs === undefined) {
            h.exitedAtMs = now;
            try {
                writeJsonAtomic(file, h);
            } catch {
                // read-only reader: count it this time anyway
            }
        }
        if (!live && now >= (h.exitedAtMs ?? now) + h.releaseDelaySeconds * 1000) {
            fs.rmSync(file, { force: true });
            fs.rmSync(aliveFile(dir, h.pid), { force: true });
            continue;
        }
        for (const [idx, mib] of Object.entries(h.perGpuMiB)) {
            const i = Number(idx);
            usage.usedMiB.set(i, (usage.usedMiB.get(i) ?? 0) + mib);
            if (live) usage.apps.push({ pid: h.pid, name: h.processName, gpu: i, usedMiB: mib });
        }
    }
    return usage;
}
