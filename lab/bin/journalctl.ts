// journalctl stand-in over the lab journal (lab/systemd/journal.ts): -u, -n,
// --since/--until, -o short|short-iso|short-precise|cat|json, -f,
// --show-cursor, --after-cursor, --cursor, --cursor-file, -g, -t, -r, -q.
import * as fs from "fs";
import { currentLab } from "../lab-info";
import { formatCursor, formatJson, formatShort, formatShortIso, formatShortPrecise, JournalEntry, parseCursor, readEntries } from "../systemd/journal";
import { unitName } from "../systemd/systemctl-cli";
import { parseTimespan } from "../systemd/unit-file";

interface Opts {
  units: string[];
  lines: number | null;
  follow: boolean;
  output: string;
  since: number | null;
  until: number | null;
  afterCursor: number | null;
  cursor: number | null;
  cursorFile: string | null;
  showCursor: boolean;
  quiet: boolean;
  reverse: boolean;
  grep: RegExp | null;
  idents: string[];
  noHostname: boolean;
  pagerEnd: boolean;
}

function fail(msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(1);
}

/** journalctl's timestamp grammar (the common subset); epoch ms. */
export function parseJournalTime(s: string, now = Date.now()): number | null {
  const t = s.trim();
  const midnight = (offsetDays: number) => {
    const d = new Date(now);
    d.setHours(0, 0, 0, 0);
    return d.getTime() + offsetDays * 86_400_000;
  };
  if (t === "now") return now;
  if (t === "today") return midnight(0);
  if (t === "yesterday") return midnight(-1);
  if (t === "tomorrow") return midnight(1);
  let m: RegExpExecArray | null;
  if ((m = /^@(\d+(?:\.\d+)?)$/.exec(t))) return Number(m[1]) * 1000;
  if ((m = /^([+-])\s*(.+)$/.exec(t))) {
    const span = parseTimespan(m[2]!);
    return span === null ? null : now + (m[1] === "-" ? -span : span);
  }
  if ((m = /^(.+?)\s+ago$/.exec(t))) {
    const span = parseTimespan(m[1]!);
    return span === null ? null : now - span;
  }
  if ((m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(UTC|Z)?$/.exec(t))) {
    const [y, mo, d, h, mi, sec, frac] = m.slice(1, 8).map((x) => (x === undefined ? 0 : Number(x))) as number[];
    const utc = m[8] !== undefined;
    const ms = frac ? Number(`0.${m[7]}`) * 1000 : 0;
    return utc ? Date.UTC(y!, mo! - 1, d!, h!, mi!, sec!, ms) : new Date(y!, mo! - 1, d!, h!, mi!, sec!, ms).getTime();
  }
  if ((m = /^(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(t))) {
    return midnight(0) + Number(m[1]) * 3_600_000 + Number(m[2]) * 60_000 + Number(m[3] ?? 0) * 1000;
  }
  return null;
}

function parseArgs(argv: string[]): Opts {
  const o: Opts = {
    units: [], lines: null, follow: false, output: "short", since: null, until: null, afterCursor: null, cursor: null,
    cursorFile: null, showCursor: false, quiet: false, reverse: false, grep: null, idents: [], noHostname: false, pagerEnd: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const long = a.startsWith("--") ? a.slice(2).split("=")[0]! : null;
    const inline = a.startsWith("--") && a.includes("=") ? a.slice(a.indexOf("=") + 1) : a.length > 2 && !a.startsWith("--") ? a.slice(2) : undefined;
    const short = !a.startsWith("--") && a.startsWith("-") ? a.slice(1, 2) : null;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined) fail(`journalctl: option '${a}' requires an argument`);
      return v;
    };
    const cursorOf = (v: string): number => parseCursor(v) ?? fail("Failed to seek to cursor: Invalid argument");
    const time = (v: string): number => parseJournalTime(v) ?? fail(`Failed to parse timestamp: ${v}`);
    if (long === "unit" || short === "u") o.units.push(unitName(value()));
    else if (long === "lines" || short === "n") {
      let v = inline;
      if (v === undefined && argv[i + 1] !== undefined && /^(\+?\d+|all)$/.test(argv[i + 1]!)) v = argv[++i];
      if (v === undefined) o.lines = 10;
      else if (v === "all") o.lines = null;
      else if (/^\+?\d+$/.test(v)) o.lines = Number(v.replace("+", ""));
      else fail(`Failed to parse lines '${v}'`);
    } else if (long === "follow" || a === "-f") o.follow = true;
    else if (long === "output" || short === "o") {
      o.output = value();
      if (!["short", "short-iso", "short-precise", "cat", "json", "short-full", "with-unit"].includes(o.output)) fail(`Unknown output format '${o.output}'.`);
    } else if (long === "since" || short === "S") o.since = time(value());
    else if (long === "until" || short === "U") o.until = time(value());
    else if (long === "after-cursor") o.afterCursor = cursorOf(value());
    else if (long === "cursor" || short === "c") o.cursor = cursorOf(value());
    else if (long === "cursor-file") o.cursorFile = value();
    else if (long === "show-cursor") o.showCursor = true;
    else if (long === "quiet" || a === "-q") o.quiet = true;
    else if (long === "reverse" || a === "-r") o.reverse = true;
    else if (long === "grep" || short === "g") o.grep = new RegExp(value());
    else if (long === "identifier" || short === "t") o.idents.push(value());
    else if (long === "no-hostname") o.noHostname = true;
    else if (long === "pager-end" || a === "-e") o.pagerEnd = true;
    else if (long === "boot" || short === "b") {
      if (inline === undefined && argv[i + 1] !== undefined && /^(-?\d+|[0-9a-f]{32})$/.test(argv[i + 1]!)) i++;
    } else if (long === "priority" || short === "p") value();
    else if (["no-pager", "catalog", "all", "full", "utc", "system", "merge", "no-tail"].includes(long ?? "") || ["-x", "-a", "-l", "-m"].includes(a)) continue;
    else if (a.startsWith("-")) fail(a.startsWith("--") ? `journalctl: unrecognized option '${a}'` : `journalctl: invalid option -- '${a.slice(1, 2)}'`);
    else {
      // MATCHES like _SYSTEMD_UNIT=x.service
      const m = /^_SYSTEMD_UNIT=(.+)$/.exec(a);
      if (m) o.units.push(m[1]!);
      else fail(`Failed to add match '${a}': Invalid argument`);
    }
  }
  if (o.pagerEnd && o.lines === null) o.lines = 1000;
  if (o.follow && o.lines === null) o.lines = 10;
  if (o.cursorFile && o.afterCursor === null && o.cursor === null) {
    try {
      const c = fs.readFileSync(o.cursorFile, "utf8").trim();
      if (c) o.afterCursor = parseCursor(c);
    } catch {
      // first run: no cursor yet
    }
  }
  return o;
}

function matches(o: Opts, e: JournalEntry): boolean {
  const ms = e.realtimeUs / 1000;
  if (o.since !== null && ms < o.since) return false;
  if (o.until !== null && ms > o.until) return false;
  if (o.afterCursor !== null && e.seq <= o.afterCursor) return false;
  if (o.cursor !== null && e.seq < o.cursor) return false;
  if (o.idents.length > 0 && !o.idents.includes(e.ident)) return false;
  if (o.grep && !o.grep.test(e.message)) return false;
  return true;
}

function format(o: Opts, e: JournalEntry): string {
  const host = (s: string) => (o.noHostname ? s.replace(` ${e.hostname} `, " ") : s);
  switch (o.output) {
    case "cat":
      return e.message;
    case "json":
      return formatJson(e);
    case "short-iso":
      return host(formatShortIso(e));
    case "short-precise":
      return host(formatShortPrecise(e));
    default:
      return host(formatShort(e));
  }
}

function main(argv: string[]): void {
  const info = currentLab();
  const o = parseArgs(argv);
  const dir = info.journalDir.inContainer;
  process.stdout.on("error", () => process.exit(0));
  let selected = readEntries(dir, o.units).filter((e) => matches(o, e));
  if (o.lines !== null) selected = selected.slice(Math.max(0, selected.length - o.lines));
  const shown = o.reverse ? [...selected].reverse() : selected;
  let out = shown.map((e) => `${format(o, e)}\n`).join("");
  const last = selected[selected.length - 1];
  if (shown.length === 0 && !o.quiet && !o.follow) out += "-- No entries --\n";
  if (o.showCursor && last) out += `-- cursor: ${formatCursor(last)}\n`;
  process.stdout.write(out);
  if (o.cursorFile && last) fs.writeFileSync(o.cursorFile, formatCursor(last));
  if (!o.follow) return;
  let lastSeq = last?.seq ?? Math.max(o.afterCursor ?? 0, ...readEntries(dir, o.units).map((e) => e.seq), 0);
  const follow = { ...o, afterCursor: null, cursor: null, lines: null };
  setInterval(() => {
    const fresh = readEntries(dir, o.units).filter((e) => e.seq > lastSeq && matches(follow, e));
    if (fresh.length === 0) return;
    lastSeq = fresh[fresh.length - 1]!.seq;
    process.stdout.write(fresh.map((e) => `${format(o, e)}\n`).join(""));
    if (o.cursorFile) fs.writeFileSync(o.cursorFile, formatCursor(fresh[fresh.length - 1]!));
  }, 200);
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(s, () => process.exit(0));
}

main(process.argv.slice(2));
