// Python argparse behaviour for SGLang's server flags: exact or unique-prefix
// long options, "--opt value" and "--opt=value", int/float conversion,
// choices, required options, and argparse's error output (usage + "prog:
// error: ..." on stderr, exit 2).
import { Flag, FLAGS } from "./server-flags";

export type ArgValue = string | number | boolean | null | number[] | string[];

export type ParseResult =
  | { ok: true; values: Record<string, ArgValue>; explicit: Set<string> }
  | { ok: false; code: number; stdout: string; stderr: string };

function metavar(fl: Flag): string {
  if (fl.choices) return `{${fl.choices.join(",")}}`;
  return fl.metavar ?? fl.dest.toUpperCase();
}

function usagePart(fl: Flag): string {
  let s = fl.opts[0]!;
  if (fl.kind !== "bool") {
    const mv = metavar(fl);
    s += fl.nargs === "+" ? ` ${mv} [${mv} ...]` : fl.nargs === "*" ? ` [${mv} ...]` : ` ${mv}`;
  }
  return fl.required ? s : `[${s}]`;
}

/** argparse's usage line for a non-tty (COLUMNS unset: 78 columns of text). */
export function usage(prog: string, positional?: string): string {
  const prefix = `usage: ${prog} `;
  const parts = ["[-h]", ...FLAGS.map(usagePart), ...(positional ? [positional] : [])];
  const width = 78;
  const indent = " ".repeat(prefix.length);
  const lines: string[] = [];
  let line = prefix.trimEnd();
  for (const p of parts) {
    if (line.length + 1 + p.length > width && line.trim() !== prefix.trim()) {
      lines.push(line);
      line = indent + p;
    } else line += ` ${p}`;
  }
  lines.push(line);
  return lines.join("\n") + "\n";
}

function error(prog: string, msg: string, positional?: string): ParseResult {
  return { ok: false, code: 2, stdout: "", stderr: `${usage(prog, positional)}${prog}: error: ${msg}\n` };
}

const argName = (fl: Flag) => `argument ${fl.opts.join("/")}`;

function convert(fl: Flag, raw: string): { value: string | number } | { error: string } {
  if (fl.kind === "int") {
    const t = raw.trim().replace(/_/g, "");
    if (!/^[+-]?\d+$/.test(t)) return { error: `${argName(fl)}: invalid int value: '${raw}'` };
    return { value: parseInt(t, 10) };
  }
  if (fl.kind === "float") {
    const t = raw.trim().toLowerCase();
    if (!/^[+-]?((\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?|inf|infinity|nan)$/.test(t)) return { error: `${argName(fl)}: invalid float value: '${raw}'` };
    return { value: t.includes("inf") ? (t.startsWith("-") ? -Infinity : Infinity) : Number(t) };
  }
  if (fl.choices && !fl.choices.includes(raw)) {
    return { error: `${argName(fl)}: invalid choice: '${raw}' (choose from ${fl.choices.map((c) => `'${c}'`).join(", ")})` };
  }
  return { value: raw };
}

const looksLikeOption = (s: string) => s.startsWith("-") && s !== "-" && !/^-\d+(\.\d+)?$/.test(s);

/**
 * Parses argv like SGLang's ArgumentParser. `positionalModelPath`: `sglang
 * serve` takes the model path as an optional first positional.
 */
export function parseServerArgs(prog: string, argv: string[], positionalModelPath = false): ParseResult {
  const positional = positionalModelPath ? "[model_path]" : undefined;
  const values: Record<string, ArgValue> = {};
  const explicit = new Set<string>();
  for (const fl of FLAGS) values[fl.dest] = fl.default;
  const extras: string[] = [];
  let seenPositional = false;
  const allOpts = FLAGS.flatMap((fl) => fl.opts.map((o): [string, Flag] => [o, fl]));
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i]!;
    if (tok === "--") {
      extras.push(...argv.slice(i + 1));
      break;
    }
    if (tok === "-h" || tok === "--help") {
      return { ok: false, code: 0, stdout: `${usage(prog, positional)}\noptions:\n  -h, --help            show this help message and exit\n`, stderr: "" };
    }
    if (!looksLikeOption(tok)) {
      if (positionalModelPath && !seenPositional) {
        seenPositional = true;
        values.model_path = tok;
        explicit.add("model_path");
      } else extras.push(tok);
      continue;
    }
    const eq = tok.indexOf("=");
    const opt = tok.startsWith("--") && eq > 0 ? tok.slice(0, eq) : tok;
    const inline = tok.startsWith("--") && eq > 0 ? tok.slice(eq + 1) : undefined;
    let fl = allOpts.find(([o]) => o === opt)?.[1];
    if (!fl && opt.startsWith("--")) {
      const matches = allOpts.filter(([o]) => o.startsWith(opt));
      const distinct = [...new Set(matches.map(([, x]) => x))];
      if (distinct.length > 1) {
        return error(prog, `ambiguous option: ${opt} could match ${matches.map(([o]) => o).join(", ")}`, positional);
      }
      fl = distinct[0];
    }
    if (!fl) {
      extras.push(tok);
      continue;
    }
    explicit.add(fl.dest);
    if (fl.kind === "bool") {
      if (inline !== undefined) return error(prog, `${argName(fl)}: ignored explicit argument '${inline}'`, positional);
      values[fl.dest] = true;
      continue;
    }
    if (fl.nargs) {
      const items: string[] = inline !== undefined ? [inline] : [];
      while (inline === undefined && i + 1 < argv.length && !looksLikeOption(argv[i + 1]!)) items.push(argv[++i]!);
      if (fl.nargs === "+" && items.length === 0) return error(prog, `${argName(fl)}: expected at least one argument`, positional);
      const conv = items.map((it) => convert(fl!, it));
      const bad = conv.find((c): c is { error: string } => "error" in c);
      if (bad) return error(prog, bad.error, positional);
      const vals = conv.map((c) => (c as { value: string | number }).value);
      values[fl.dest] = fl.kind === "int" || fl.kind === "float" ? (vals as number[]) : (vals as string[]);
      continue;
    }
    let raw = inline;
    if (raw === undefined) {
      const next = argv[i + 1];
      if (next === undefined || looksLikeOption(next)) return error(prog, `${argName(fl)}: expected one argument`, positional);
      raw = next;
      i++;
    }
    const c = convert(fl, raw);
    if ("error" in c) return error(prog, c.error, positional);
    values[fl.dest] = c.value;
  }
  const missing = FLAGS.filter((fl) => fl.required && !explicit.has(fl.dest)).map((fl) => fl.opts.join("/"));
  if (missing.length > 0 && !(positionalModelPath && explicit.has("model_path"))) {
    return error(prog, `the following arguments are required: ${missing.join(", ")}`, positional);
  }
  if (extras.length > 0) return error(prog, `unrecognized arguments: ${extras.join(" ")}`, positional);
  return { ok: true, values, explicit };
}
