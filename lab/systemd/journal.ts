// The lab's journal: one JSON-lines file per unit, written by the supervisor,
// read by journalctl and `systemctl status`. Cursors look like journald's
// ("s=...;i=<seq hex>;b=...;m=...;t=...;x=...") and resume by sequence number.
import * as fs from "fs";
import * as path from "path";

export interface JournalEntry {
  seq: number;
  realtimeUs: number;
  monotonicUs: number;
  bootId: string;
  pid: number;
  ident: string;
  unit: string;
  hostname: string;
  priority: number;
  message: string;
}

export function unitFile(dir: string, unit: string): string {
  return path.join(dir, `${unit}.jsonl`);
}

export class JournalWriter {
  private last = 0;

  constructor(
    private readonly dir: string,
    private readonly bootId: string,
    private readonly hostname: string,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    for (const e of readEntries(dir)) this.last = Math.max(this.last, e.seq);
  }

  append(unit: string, ident: string, pid: number, message: string, priority = 6): JournalEntry {
    const realtimeUs = Date.now() * 1000;
    // Unique and increasing across supervisor restarts (a new "boot" continues the numbering).
    this.last = Math.max(this.last + 1, realtimeUs);
    const entry: JournalEntry = {
      seq: this.last,
      realtimeUs,
      monotonicUs: Number(process.hrtime.bigint() / 1000n),
      bootId: this.bootId,
      pid,
      ident,
      unit,
      hostname: this.hostname,
      priority,
      message,
    };
    fs.appendFileSync(unitFile(this.dir, unit), JSON.stringify(entry) + "\n");
    return entry;
  }
}

/** Entries of the given units (all units when empty), in sequence order. */
export function readEntries(dir: string, units: string[] = []): JournalEntry[] {
  let files: string[];
  try {
    files = fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
  } catch {
    return [];
  }
  if (units.length > 0) files = files.filter((f) => units.includes(f.slice(0, -".jsonl".length)));
  const out: JournalEntry[] = [];
  for (const f of files) {
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as JournalEntry);
      } catch {
        // a line being written right now
      }
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

export function formatCursor(e: JournalEntry): string {
  const x = (e.seq ^ 0x5bd1e995).toString(16).replace("-", "");
  return `s=${e.bootId};i=${e.seq.toString(16)};b=${e.bootId};m=${e.monotonicUs.toString(16)};t=${e.realtimeUs.toString(16)};x=${x}`;
}

/** The sequence number of a cursor, or null when it is not one of ours. */
export function parseCursor(cursor: string): number | null {
  const m = /(?:^|;)i=([0-9a-f]+)(?:;|$)/.exec(cursor.trim());
  return m ? parseInt(m[1]!, 16) : null;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const p2 = (n: number) => String(n).padStart(2, "0");

/** journalctl's short format: "Dec 01 04:00:00 llm-two python3[1234]: message" (UTC, like the lab machines). */
export function formatShort(e: JournalEntry): string {
  const d = new Date(e.realtimeUs / 1000);
  return `${MONTHS[d.getUTCMonth()]} ${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} ${e.hostname} ${e.ident}[${e.pid}]: ${e.message}`;
}

/** short-iso: "2026-12-01T04:00:00+0000 llm-two python3[1234]: message". */
export function formatShortIso(e: JournalEntry): string {
  const d = new Date(e.realtimeUs / 1000);
  return `${isoDate(d)}+0000 ${e.hostname} ${e.ident}[${e.pid}]: ${e.message}`;
}

export function formatShortPrecise(e: JournalEntry): string {
  const d = new Date(e.realtimeUs / 1000);
  const us = String(e.realtimeUs % 1_000_000).padStart(6, "0");
  return `${MONTHS[d.getUTCMonth()]} ${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}.${us} ${e.hostname} ${e.ident}[${e.pid}]: ${e.message}`;
}

function isoDate(d: Date): string {
  return `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}T${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`;
}

export function formatJson(e: JournalEntry): string {
  return JSON.stringify({
    __CURSOR: formatCursor(e),
    __REALTIME_TIMESTAMP: String(e.realtimeUs),
    __MONOTONIC_TIMESTAMP: String(e.monotonicUs),
    _BOOT_ID: e.bootId,
    PRIORITY: String(e.priority),
    _HOSTNAME: e.hostname,
    SYSLOG_IDENTIFIER: e.ident,
    _PID: String(e.pid),
    _SYSTEMD_UNIT: e.unit,
    MESSAGE: e.message,
  });
}

/** "Tue 2026-12-01 04:05:06 UTC" (systemd's format_timestamp). */
export function formatTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]} ${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} UTC`;
}
