// Simulated GPU memory: each simulated server process keeps one file
// (<gpuStateDir>/<pid>.json) saying what it holds on each GPU; nvidia-smi
// adds them up. Memory stays "used" for a release delay after the process
// exits (a dead process that wrote no exit time is noticed by the next reader).
import * as fs from "fs";
import * as path from "path";
import { writeJsonAtomic } from "../lab-info";

export interface GpuHolding {
  pid: number;
  /** /proc/<pid>/stat start time, to tell a reused pid. */
  startTicks: string;
  processName: string;
  /** GPU index -> MiB held. */
  perGpuMiB: Record<string, number>;
  releaseDelaySeconds: number;
  exitedAtMs?: number;
}

export function processStartTicks(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

function alive(h: GpuHolding): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${h.pid}/stat`, "utf8");
    const after = stat.slice(stat.lastIndexOf(")") + 2);
    return after[0] !== "Z" && after.split(" ")[19] === h.startTicks;
  } catch {
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
  let files: string[] = [];
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
    const live = h.exitedAtMs === undefined && alive(h);
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
