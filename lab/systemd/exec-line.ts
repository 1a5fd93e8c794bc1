// ExecStart= command lines the way systemd reads them: words split at
// whitespace, "double" and 'single' quotes, C escapes (\n, \s, \xNN, \\ ...),
// specifiers (%n, %%) at load time, and $VAR / ${VAR} at exec time.

function cunescapeOne(s: string, i: number): { text: string; len: number } {
  const c = s[i + 1];
  const simple: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"', "'": "'", s: " " };
  if (c === undefined) return { text: "\\", len: 1 };
  if (c in simple) return { text: simple[c]!, len: 2 };
  let m: RegExpExecArray | null;
  if ((m = /^x([0-9a-fA-F]{2})/.exec(s.slice(i + 1)))) return { text: String.fromCharCode(parseInt(m[1]!, 16)), len: 4 };
  if ((m = /^u([0-9a-fA-F]{4})/.exec(s.slice(i + 1)))) return { text: String.fromCodePoint(parseInt(m[1]!, 16)), len: 6 };
  if ((m = /^U([0-9a-fA-F]{8})/.exec(s.slice(i + 1)))) return { text: String.fromCodePoint(parseInt(m[1]!, 16)), len: 10 };
  if ((m = /^([0-7]{3})/.exec(s.slice(i + 1)))) return { text: String.fromCharCode(parseInt(m[1]!, 8)), len: 4 };
  // Unknown escapes are kept as the escaped character (systemd's relaxed mode).
  return { text: c, len: 2 };
}

/** Splits into words: whitespace separates, quotes group, C escapes are resolved everywhere. */
export function cunescapeWords(value: string): string[] {
  const words: string[] = [];
  let i = 0;
  const s = value;
  while (i < s.length) {
    while (i < s.length && /\s/.test(s[i]!)) i++;
    if (i >= s.length) break;
    let word = "";
    let quote: string | null = null;
    while (i < s.length) {
      const c = s[i]!;
      if (quote) {
        if (c === quote) {
          quote = null;
          i++;
        } else if (c === "\\") {
          const e = cunescapeOne(s, i);
          word += e.text;
          i += e.len;
        } else {
          word += c;
          i++;
        }
      } else if (/\s/.test(c)) {
        break;
      } else if (c === '"' || c === "'") {
        quote = c;
        i++;
      } else if (c === "\\") {
        const e = cunescapeOne(s, i);
        word += e.text;
        i += e.len;
      } else {
        word += c;
        i++;
      }
    }
    words.push(word);
  }
  return words;
}

export interface ExecCommand {
  /** As written in the unit (for `systemctl show` / status). */
  raw: string;
  path: string;
  argv: string[];
  ignoreFailure: boolean;
  /** ':' prefix: no environment variable substitution. */
  noEnvExpand: boolean;
}

export interface SpecifierContext {
  unit: string;
  hostname: string;
}

/** Resolves %-specifiers in one word; throws on an unknown one. */
export function expandSpecifiers(word: string, ctx: SpecifierContext): string {
  const prefix = ctx.unit.replace(/\.[^.]+$/, "");
  const at = prefix.indexOf("@");
  const table: Record<string, string> = {
    "%": "%",
    n: ctx.unit,
    N: prefix,
    p: at >= 0 ? prefix.slice(0, at) : prefix,
    P: at >= 0 ? prefix.slice(0, at) : prefix,
    i: at >= 0 ? prefix.slice(at + 1) : "",
    I: at >= 0 ? prefix.slice(at + 1) : "",
    H: ctx.hostname,
    l: ctx.hostname.split(".")[0]!,
    h: "/root",
    u: "root",
    U: "0",
    t: "/run",
    S: "/var/lib",
    C: "/var/cache",
    L: "/var/log",
    E: "/etc",
    T: "/tmp",
    V: "/var/tmp",
  };
  return word.replace(/%(.)?/g, (_m, c: string | undefined) => {
    if (c === undefined || !(c in table)) throw new Error(`Failed to resolve specifiers in "${word}": Invalid slot`);
    return table[c]!;
  });
}

/** One ExecStart= value, at unit load time. */
export function parseExecLine(raw: string, ctx: SpecifierContext): ExecCommand {
  let words = cunescapeWords(raw);
  if (words.length === 0) throw new Error("Empty executable name or zero-length command line");
  let first = words[0]!;
  let ignoreFailure = false;
  let noEnvExpand = false;
  let separateArgv0 = false;
  while (/^[-@:+!]/.test(first)) {
    const p = first[0]!;
    if (p === "-") ignoreFailure = true;
    else if (p === ":") noEnvExpand = true;
    else if (p === "@") separateArgv0 = true;
    first = first.slice(1);
  }
  words = [first, ...words.slice(1)].map((w) => expandSpecifiers(w, ctx));
  const path = words[0]!;
  const argv = separateArgv0 ? words.slice(1) : words;
  if (path === "") throw new Error("Empty executable name or zero-length command line");
  return { raw, path, argv, ignoreFailure, noEnvExpand };
}

/**
 * $VAR / ${VAR} substitution at exec time: "$VAR" as a whole word splits at
 * whitespace into zero or more words; "${VAR}" anywhere is replaced as-is
 * (one word); "$$" is a literal "$".
 */
export function expandEnvInArgv(argv: string[], env: Record<string, string>): string[] {
  const out: string[] = [];
  for (const w of argv) {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(w);
    if (whole) {
      const v = env[whole[1]!] ?? "";
      out.push(...v.split(/\s+/).filter(Boolean));
      continue;
    }
    out.push(w.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string | undefined) => (m === "$$" ? "$" : (env[name!] ?? ""))));
  }
  return out;
}
