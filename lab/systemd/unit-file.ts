// systemd unit files: the syntax (sections, continuation lines, list resets),
// the [Service] settings the supervisor honours, and the value grammars
// (timespans, Environment= words, EnvironmentFile= files).
import { cunescapeWords } from "./exec-line";

export type Entries = Array<[string, string]>;

export interface UnitText {
  /** Section name -> entries in file order (fragment first, then drop-ins). */
  sections: Map<string, Entries>;
}

export function parseUnitText(texts: string[]): UnitText {
  const sections = new Map<string, Entries>();
  for (const text of texts) {
    let current: Entries | undefined;
    const raw = text.split("\n");
    for (let i = 0; i < raw.length; i++) {
      let line = raw[i]!;
      // A trailing backslash continues the line (comment lines inside are skipped).
      while (/\\\s*$/.test(line) && i + 1 < raw.length) {
        let next = raw[++i]!;
        while (/^\s*[#;]/.test(next) && i + 1 < raw.length) next = raw[++i]!;
        line = line.replace(/\\\s*$/, " ") + next;
      }
      const t = line.trim();
      if (t === "" || t.startsWith("#") || t.startsWith(";")) continue;
      const sec = /^\[([^\]]+)\]$/.exec(t);
      if (sec) {
        current = sections.get(sec[1]!) ?? [];
        sections.set(sec[1]!, current);
        continue;
      }
      const eq = t.indexOf("=");
      if (eq < 0 || !current) continue;
      current.push([t.slice(0, eq).trim(), t.slice(eq + 1).trim()]);
    }
  }
  return { sections };
}

/** Last value of a key (assignments override), or undefined. */
export function lastValue(u: UnitText, section: string, key: string): string | undefined {
  const e = u.sections.get(section) ?? [];
  for (let i = e.length - 1; i >= 0; i--) if (e[i]![0] === key) return e[i]![1];
  return undefined;
}

/** All values of a list setting; an empty assignment resets the list. */
export function listValues(u: UnitText, section: string, key: string): string[] {
  const out: string[] = [];
  for (const [k, v] of u.sections.get(section) ?? []) {
    if (k !== key) continue;
    if (v === "") out.length = 0;
    else out.push(v);
  }
  return out;
}

const TIME_UNITS: Array<[RegExp, number]> = [
  [/^(us|usec|µs)$/, 1e-3],
  [/^(ms|msec)$/, 1],
  [/^(s|sec|second|seconds|)$/, 1000],
  [/^(m|min|minute|minutes)$/, 60_000],
  [/^(h|hr|hour|hours)$/, 3_600_000],
  [/^(d|day|days)$/, 86_400_000],
  [/^(w|week|weeks)$/, 604_800_000],
];

/** systemd time span ("90", "5s", "1min 30s", "500ms", "infinity") in ms; null when invalid. */
export function parseTimespan(value: string): number | null {
  const v = value.trim();
  if (v === "infinity") return Infinity;
  if (v === "") return null;
  let total = 0;
  let consumed = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)\s*([a-zµ]*)\s*/g)) {
    if (m.index !== consumed) return null;
    const unit = TIME_UNITS.find(([r]) => r.test(m[2]!));
    if (!unit) return null;
    total += Number(m[1]) * unit[1];
    consumed += m[0].length;
  }
  return consumed === v.length ? Math.round(total) : null;
}

/** systemd's format_timespan: "100ms", "5s", "1min 30s", "infinity". */
export function formatTimespan(ms: number): string {
  if (ms === Infinity) return "infinity";
  if (ms === 0) return "0";
  const parts: string[] = [];
  const units: Array<[string, number]> = [["w", 604_800_000], ["d", 86_400_000], ["h", 3_600_000], ["min", 60_000], ["s", 1000], ["ms", 1]];
  let rest = ms;
  for (const [name, size] of units) {
    if (rest >= size) {
      const n = Math.floor(rest / size);
      parts.push(`${n}${name}`);
      rest -= n * size;
    }
  }
  return parts.join(" ");
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Environment= value: quoted words, each VAR=VALUE (invalid words are ignored, as systemd does with a warning). */
export function parseEnvironmentAssignments(value: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const word of cunescapeWords(value)) {
    const eq = word.indexOf("=");
    if (eq <= 0 || !ENV_NAME.test(word.slice(0, eq))) continue;
    out.push([word.slice(0, eq), word.slice(eq + 1)]);
  }
  return out;
}

/** An EnvironmentFile= (systemd's load_env_file grammar, the common subset). */
export function parseEnvironmentFile(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const s = text;
  let i = 0;
  while (i < s.length) {
    while (i < s.length && /[ \t\r\n]/.test(s[i]!)) i++;
    if (i >= s.length) break;
    if (s[i] === "#" || s[i] === ";") {
      while (i < s.length && s[i] !== "\n") i++;
      continue;
    }
    let key = "";
    while (i < s.length && s[i] !== "=" && s[i] !== "\n") key += s[i++];
    key = key.trim();
    if (s[i] !== "=") continue;
    i++;
    while (i < s.length && (s[i] === " " || s[i] === "\t")) i++;
    let value = "";
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === "\\" && i + 1 < s.length) {
          const n = s[i + 1]!;
          if (n === "\n") i += 2;
          else if ('"\\`$'.includes(n)) {
            value += n;
            i += 2;
          } else {
            value += "\\";
            i++;
          }
        } else value += s[i++];
      }
      i++;
      while (i < s.length && s[i] !== "\n") i++;
    } else if (s[i] === "'") {
      i++;
      while (i < s.length && s[i] !== "'") value += s[i++];
      i++;
      while (i < s.length && s[i] !== "\n") i++;
    } else {
      while (i < s.length && s[i] !== "\n") {
        if (s[i] === "\\" && i + 1 < s.length) {
          if (s[i + 1] !== "\n") value += s[i + 1];
          i += 2;
        } else value += s[i++];
      }
      value = value.replace(/[ \t\r]+$/, "");
    }
    if (ENV_NAME.test(key)) out.push([key, value]);
  }
  return out;
}
