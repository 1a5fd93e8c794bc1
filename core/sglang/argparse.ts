/**
 * The declared release's own `sglang serve` options judging `extraArgs`
 * (pure). The tables (core/sglang/argparse-tables.json, one per release,
 * data the module imports) are dumped from each release's real wheel by
 * sglang-release/argparse_table.py: the parser `prepare_server_args`
 * builds, option by option. This replays what Python 3.11's argparse does
 * with the fragment (argparse.py `_parse_known_args`, `_parse_optional`,
 * `_get_option_tuples`, `_match_argument`, `_get_values`, `_check_value`),
 * so a flag the release does not have, a value outside its choices, a value
 * given to a switch, a missing or surplus value, or a number that is not one
 * is refused at preview with argparse's own text. Values are only checked for
 * the builtin types (int, float, str); SGLang's own type functions (JSON,
 * human-readable sizes) are left to the release at start.
 */
import ARGPARSE_TABLES from "./argparse-tables.json";

export interface ArgparseOption {
    flags: string[];
    /** argparse's nargs: null = one value, 0 = none (switches), "?", "*", "+", or a count. */
    nargs: null | number | "?" | "*" | "+";
    type: string | null;
    choices: Array<string | number | boolean> | null;
    booleanOptional: boolean;
    append: boolean;
}

export interface ArgparseTable {
    version: string;
    prog: string;
    allowAbbrev: boolean;
    options: ArgparseOption[];
}

const TABLES: Readonly<Record<string, ArgparseTable>> = ARGPARSE_TABLES as Record<string, ArgparseTable>;

/** The release's table, or undefined when none was dumped for it. */
export function argparseTable(version: string): ArgparseTable | undefined {
    return Object.hasOwn(TABLES, version) ? TABLES[version] : undefined;
}

/** The releases with a table. */
export function argparseVersions(): string[] {
    return Object.keys(TABLES);
}

/** argparse's refusal: the element it is about and the line it prints (`sglang serve: error: ...`). */
export interface ArgparseError {
    index: number;
    error: string;
}

/** argparse's `_negative_number_matcher`: such a token is a value when no option looks like a negative number (none of SGLang's does). */
const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/** How argparse reads one token (`_parse_optional`): a value, an option of the table, an unknown option, or an ambiguous abbreviation. */
type Reading =
    | { kind: "value" }
    | { kind: "option"; option: ArgparseOption; explicit?: string }
    | { kind: "unknown" }
    | { kind: "ambiguous"; name: string; matches: string[] };

/**
 * The option a `--flag` (without an inline value) sets, as argparse finds it:
 * the flag itself, an alias, `--no-x` of a `--x/--no-x` pair, or an
 * unambiguous abbreviation; undefined for a flag the release does not have or
 * an ambiguous abbreviation.
 */
export function argparseOption(table: ArgparseTable, flag: string): ArgparseOption | undefined {
    const exact = table.options.find((o) => o.flags.includes(flag));
    if (exact || !table.allowAbbrev || !flag.startsWith("--")) return exact;
    const matches = table.options.filter((o) => o.flags.some((f) => f.startsWith(flag)));
    // argparse counts spellings, not options: an abbreviation of two spellings of one option is ambiguous too.
    return matches.length === 1 && matches[0]!.flags.filter((f) => f.startsWith(flag)).length === 1 ? matches[0] : undefined;
}

function readToken(token: string, byFlag: ReadonlyMap<string, ArgparseOption>, allowAbbrev: boolean): Reading {
    if (!token.startsWith("-")) return { kind: "value" };
    const exact = byFlag.get(token);
    if (exact) return { kind: "option", option: exact };
    if (token.length === 1) return { kind: "value" };
    const eq = token.indexOf("=");
    const name = eq === -1 ? token : token.slice(0, eq);
    const explicit = eq === -1 ? undefined : token.slice(eq + 1);
    const named = eq === -1 ? undefined : byFlag.get(name);
    if (named) return { kind: "option", option: named, explicit };
    if (allowAbbrev && token.startsWith("--")) {
        const matches = [...byFlag.keys()].filter((flag) => flag.startsWith(name));
        if (matches.length > 1) return { kind: "ambiguous", name, matches };
        if (matches.length === 1) return { kind: "option", option: byFlag.get(matches[0]!)!, explicit };
    }
    if (NEGATIVE_NUMBER.test(token) || token.includes(" ")) return { kind: "value" };
    return { kind: "unknown" };
}

/** Python's repr of a str or number, as argparse's messages show values. */
function repr(value: string | number | boolean): string {
    if (typeof value === "boolean") return value ? "True" : "False";
    if (typeof value === "number") return String(value);
    return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/** Python's int() and float() on a command-line string; undefined when they raise ValueError. */
function convert(type: string | null, value: string): string | number | undefined {
    const text = value.trim();
    if (type === "int") return /^[+-]?\d+(_\d+)*$/.test(text) ? Number(text.replaceAll("_", "")) : undefined;
    if (type === "float") {
        if (/^[+-]?(inf|infinity|nan)$/i.test(text)) return Number(text.replace(/^([+-]?)inf(inity)?$/i, "$1Infinity"));
        return /^[+-]?((\d+(_\d+)*)?\.?\d+(_\d+)*|\d+(_\d+)*\.)([eE][+-]?\d+(_\d+)*)?$/.test(text) ? Number(text.replaceAll("_", "")) : undefined;
    }
    return value;
}

/**
 * What argparse does with `tokens` after the options the stack renders: the
 * first error it raises, or `unrecognized arguments` for what no option took.
 * `index` points into `tokens`.
 */
export function judgeExtraArgs(table: ArgparseTable, tokens: readonly string[]): ArgparseError | undefined {
    const byFlag = new Map<string, ArgparseOption>();
    for (const option of table.options) for (const flag of option.flags) byFlag.set(flag, option);
    const fail = (index: number, message: string): ArgparseError => ({ index, error: `${table.prog}: error: ${message}` });
    // argparse reads every token first (an ambiguous abbreviation fails there), then takes the options left to right.
    const readings = tokens.map((token) => readToken(token, byFlag, table.allowAbbrev));
    const ambiguous = readings.findIndex((r) => r.kind === "ambiguous");
    if (ambiguous !== -1) {
        const r = readings[ambiguous] as Extract<Reading, { kind: "ambiguous" }>;
        return fail(ambiguous, `ambiguous option: ${r.name} could match ${r.matches.join(", ")}`);
    }
    const extras: number[] = [];
    let i = 0;
    while (i < tokens.length) {
        const reading = readings[i]!;
        if (reading.kind !== "option") {
            extras.push(i);
            i++;
            continue;
        }
        const { option, explicit } = reading;
        const shown = `argument ${option.flags.join("/")}`;
        const at = i;
        const following: string[] = [];
        for (let j = i + 1; j < tokens.length && readings[j]!.kind === "value"; j++) following.push(tokens[j]!);
        let values: string[];
        if (explicit !== undefined) {
            if (option.nargs === 0) return fail(at, `${shown}: ignored explicit argument ${repr(explicit)}`);
            if (typeof option.nargs === "number" && option.nargs > 1) return fail(at, `${shown}: expected ${option.nargs} arguments`);
            values = [explicit];
            i++;
        } else {
            const n = option.nargs;
            if (n === null || n === 1) {
                if (following.length < 1) return fail(at, `${shown}: expected one argument`);
                values = following.slice(0, 1);
            } else if (n === 0) {
                values = [];
            } else if (n === "?") {
                values = following.slice(0, 1);
            } else if (n === "*") {
                values = following;
            } else if (n === "+") {
                if (following.length < 1) return fail(at, `${shown}: expected at least one argument`);
                values = following;
            } else {
                if (following.length < n) return fail(at, `${shown}: expected ${n} arguments`);
                values = following.slice(0, n);
            }
            i += 1 + values.length;
        }
        for (const value of values) {
            const converted = convert(option.type, value);
            if (converted === undefined) return fail(at, `${shown}: invalid ${option.type} value: ${repr(value)}`);
            if (option.choices && !option.choices.some((c) => c === converted)) {
                return fail(at, `${shown}: invalid choice: ${repr(converted)} (choose from ${option.choices.map(repr).join(", ")})`);
            }
        }
    }
    if (extras.length > 0) return fail(extras[0]!, `unrecognized arguments: ${extras.map((e) => tokens[e]).join(" ")}`);
    return undefined;
}
