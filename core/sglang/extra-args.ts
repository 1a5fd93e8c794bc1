/**
 * `service.extraArgs`: an argv fragment appended to the server's command line
 * unchanged. Each `--flag` token is followed by zero or more value tokens (a
 * token not starting with `--`), or carries its one value inline as
 * `--flag=value`:
 *
 *     ["--enable-metrics"]                       a switch
 *     ["--context-length=32768"]                 one token
 *     ["--reasoning-parser", "qwen3"]            flag, then its value
 *     ["--cuda-graph-bs", "1", "2", "4", "8"]    several values (nargs="+")
 *     ["--json-model-override-args", "{\"rope_scaling\": {\"factor\": 4.0}}"]
 *
 * The tokens reach SGLang's argv exactly as written (core/unit/systemd-unit.ts
 * quotes them for ExecStart), so what argparse does with them is what it
 * does on a shell command line. This file knows the grammar: the groups of a
 * fragment, the value(s) a flag is given, and what the schema refuses.
 */
/** A flag name as SGLang spells its options: lowercase, digits and `-`. */
export const EXTRA_FLAG_NAME = /^--[a-z0-9][a-z0-9-]*$/;

/** One `--flag` of a fragment with the values that follow it. */
export interface ExtraFlag {
    /** `--flag`, without an inline value. */
    flag: string;
    /** Index of the flag's token in the fragment (where a config issue points). */
    index: number;
    /** Its values: the inline one, or the tokens after it up to the next `--` token. */
    values: string[];
    /** Written as one `--flag=value` token. */
    inline: boolean;
}

export function isFlagToken(token: string): boolean {
    return token.startsWith("--");
}

/**
 * The flags of a fragment in order, each with its values. Value tokens before
 * the first flag or after an inline `--flag=value` belong to no flag and are
 * left out (the schema refuses them; a unit edited by hand may have them).
 */
export function extraFlags(tokens: readonly string[]): ExtraFlag[] {
    const flags: ExtraFlag[] = [];
    let open: ExtraFlag | undefined;
    tokens.forEach((token, index) => {
        if (isFlagToken(token)) {
            const eq = token.indexOf("=");
            const flag: ExtraFlag =
                eq === -1
                    ? { flag: token, index, values: [], inline: false }
                    : { flag: token.slice(0, eq), index, values: [token.slice(eq + 1)], inline: true };
            flags.push(flag);
            open = flag.inline ? undefined : flag;
        } else {
            open?.values.push(token);
        }
    });
    return flags;
}

/**
 * The occurrence of `flag` that SGLang's argparse acts on (the last one: see
 * repeatedExtraFlags), in either form, or undefined when the fragment does
 * not give it.
 */
export function extraFlagValues(tokens: readonly string[], flag: string): ExtraFlag | undefined {
    return extraFlags(tokens)
        .filter((f) => f.flag === flag)
        .pop();
}

/**
 * The flags of a fragment that set one option more than once: one group per
 * option, its occurrences in order. argparse runs an option's action at each
 * occurrence, and every action of SGLang's releases (store, store_true,
 * BooleanOptionalAction, nargs "+"/"*"/"?", and its own LoRAPathAction and
 * Deprecated*Action, as read in 0.5.9-0.5.23) sets the value anew: the last
 * occurrence wins, and SGLang starts. None appends, extends or counts
 * (tests/core/extra-args.test.ts checks each release's dumped table).
 * `optionOf` names the option a flag sets (an alias, an abbreviation or
 * `--no-x` set the same one as `--x`), or undefined for an option that
 * accumulates its occurrences (its table's `append`); by default, the flag.
 */
export function repeatedExtraFlags(tokens: readonly string[], optionOf: (flag: string) => string | undefined = (flag) => flag): ExtraFlag[][] {
    const byOption = new Map<string, ExtraFlag[]>();
    for (const given of extraFlags(tokens)) {
        const option = optionOf(given.flag);
        if (option === undefined) continue;
        const group = byOption.get(option) ?? [];
        group.push(given);
        byOption.set(option, group);
    }
    return [...byOption.values()].filter((group) => group.length > 1);
}

/**
 * Characters a token may not hold: NUL and line breaks cannot travel through
 * a unit line, the journal or a preview intact, and the other control
 * characters are never meant (a paste accident). Tab is allowed. Also a lone
 * UTF-16 surrogate, which is not text at all (systemd wants UTF-8).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this must find
const FORBIDDEN_CHARACTER = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]|\p{Surrogate}/u;

/** Names of the forbidden characters people paste by accident. */
const CHARACTER_NAMES: Record<string, string> = { "\0": "NUL", "\n": "a newline", "\r": "a carriage return", "\u2028": "a line separator" };

/** What is wrong with a text meant for argv or the environment, as a phrase, or undefined when it is fine. */
export function forbiddenCharacter(text: string): string | undefined {
    const m = FORBIDDEN_CHARACTER.exec(text);
    if (!m) return undefined;
    const ch = m[0];
    const code = `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
    return `${CHARACTER_NAMES[ch] ?? "a control character"} (${code}) at position ${m.index}`;
}

/** argparse's test for a negative number (ArgumentParser._negative_number_matcher): such a token is a value, not an option. */
const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/**
 * A value token argparse would take for an option: it starts with `-`, is not
 * a negative number and has no space (argparse reads a token with a space
 * as a value). `--flag=-x` passes such a value.
 */
function looksLikeOption(token: string): boolean {
    return token.startsWith("-") && token !== "-" && !NEGATIVE_NUMBER.test(token) && !token.includes(" ");
}

/** One problem with the fragment's shape: the element it is about and the sentence (after the key) saying what and how to fix it. */
export interface ExtraArgProblem {
    index: number;
    message: string;
}

/**
 * What the schema refuses in a fragment, per element: a first element that
 * is not a `--flag`, a flag name SGLang cannot have, characters that cannot
 * travel, and a value argparse would read as an option. `key` names the list
 * in messages (`service.extraArgs`).
 */
export function extraArgsShapeProblems(tokens: readonly string[], key: string): ExtraArgProblem[] {
    const problems: ExtraArgProblem[] = [];
    tokens.forEach((token, index) => {
        const bad = forbiddenCharacter(token);
        if (bad) {
            problems.push({
                index,
                message: `holds ${bad}, which cannot be passed to SGLang through the unit: remove it (write JSON on one line; an escape such as \\n inside a JSON string is fine)`,
            });
            return;
        }
        if (isFlagToken(token)) {
            const eq = token.indexOf("=");
            const name = eq === -1 ? token : token.slice(0, eq);
            if (!EXTRA_FLAG_NAME.test(name)) {
                problems.push({
                    index,
                    message:
                        `is not a flag SGLang can have: a flag is -- and a lowercase name of letters, digits and - (e.g. --context-length); ` +
                        `a value that starts with -- goes inline, as --flag=--value`,
                });
            }
            return;
        }
        if (index === 0) {
            problems.push({
                index,
                message: `must be a --flag: extraArgs is a list of --flag tokens, each followed by its values (e.g. ["--reasoning-parser", "qwen3"]); put the flag before ${JSON.stringify(token)}`,
            });
            return;
        }
        const previous = tokens[index - 1];
        if (isFlagToken(previous) && previous.includes("=")) {
            const flag = previous.slice(0, previous.indexOf("="));
            problems.push({
                index,
                message: `follows ${key}[${index - 1}] (${flag}=...), which already carries its value inline: give the values after ${flag} as separate elements, or remove this one`,
            });
            return;
        }
        if (looksLikeOption(token)) {
            problems.push({
                index,
                message: `starts with -, so SGLang's argparse would read it as an option, not a value: join it to its flag as one element, --flag=${token}`,
            });
        }
    });
    return problems;
}

/** `flag`'s whole-number value where the fragment gives it exactly one (argparse's type=int then reads it), with where it is. */
export function extraFlagInteger(tokens: readonly string[], flag: string): { value: number; given: ExtraFlag } | undefined {
    const given = extraFlagValues(tokens, flag);
    if (!given || given.values.length !== 1 || !/^\d+$/.test(given.values[0])) return undefined;
    return { value: Number(given.values[0]), given };
}

/** A flag with its values as the user wrote them, for messages: `--x=1`, `--x 1 2`, `--x`. */
export function shownExtraFlag(f: ExtraFlag): string {
    return f.inline ? `${f.flag}=${f.values[0]}` : [f.flag, ...f.values].join(" ");
}
