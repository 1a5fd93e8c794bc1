/**
 * The server's systemd unit and its EnvironmentFile: rendered from the typed
 * service config, parsed back (so a unit on the box can be compared field by
 * field), and escaped by systemd's own rules (systemd.service "Command
 * lines", systemd.unit "Specifiers", systemd.exec "Environment=").
 */
import type { ServiceConfig } from "../config/schema";
import type { ArgvFields } from "../sglang/argv-fields";
import { parseArgv, renderArgv } from "../sglang/args";
import { readsSpecV2Env, SPEC_V2_ENV } from "../sglang/rules";
import { environmentFilePath, serverConfigFilePath } from "./unit-paths";

// ---------------------------------------------------------------------------
// Escaping
// ---------------------------------------------------------------------------

export class UnitSyntaxError extends Error {}

/** `%` starts a specifier in every unit setting; `%%` is a literal percent. */
export function escapeSpecifiers(text: string): string {
    return text.replace(/%/g, "%%");
}

/** Characters that force a word into double quotes: separators, quotes, backslash, control characters. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this must find
const NEEDS_QUOTES = /[\s"'\\\x00-\x1f\x7f]/;

const C_ESCAPES: Record<string, string> = { "\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"' };

/**
 * One word as systemd's unquoting reads it back: bare when it has nothing
 * special, else in double quotes with C escapes (systemd unescapes inside
 * quotes too). Specifiers and `$` must already be escaped by the caller.
 */
export function quoteWord(word: string): string {
    if (word.includes("\0")) throw new UnitSyntaxError("a unit setting cannot hold a NUL character");
    if (word !== "" && !NEEDS_QUOTES.test(word)) return word;
    let out = '"';
    for (const ch of word) {
        const code = ch.codePointAt(0) ?? 0;
        if (C_ESCAPES[ch]) out += C_ESCAPES[ch];
        else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
        else out += ch;
    }
    return `${out}"`;
}

/**
 * One ExecStart argument: `%` -> `%%`, `$` -> `$$` (systemd expands `$` at
 * exec time; nothing the stack writes is meant to be expanded: the API key
 * is in SGLang's --config file). A lone `;` separates commands in ExecStart,
 * so it is written `\;`; the two characters `\;` are quoted, `"\\;"`, which
 * systemd's parser does not take for that escape (config_parse_exec checks
 * for a bare `\;` before unquoting).
 */
export function escapeExecArg(arg: string): string {
    if (arg === ";") return "\\;";
    return quoteWord(escapeSpecifiers(arg).replace(/\$/g, "$$$$"));
}

/** systemd reads a leading `-@:+!` as prefix flags and needs an absolute path: only plain absolute executables are written. */
function assertAbsoluteExecutable(argv: readonly string[]): void {
    if (argv.length === 0 || !argv[0].startsWith("/")) throw new UnitSyntaxError(`ExecStart needs an absolute executable, got ${JSON.stringify(argv[0])}`);
}

const SIMPLE_ESCAPES: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"', "'": "'", s: " " };

/** One C escape after a backslash at `text[i]`: the character(s) and how many input characters it used, or undefined. */
function cunescapeOne(text: string, i: number): { out: string; used: number } | undefined {
    const c = text[i];
    if (c === undefined) return undefined;
    if (SIMPLE_ESCAPES[c] !== undefined) return { out: SIMPLE_ESCAPES[c], used: 1 };
    const hex = (len: number) => {
        const digits = text.slice(i + 1, i + 1 + len);
        if (digits.length !== len || !/^[0-9a-fA-F]+$/.test(digits)) return undefined;
        const code = parseInt(digits, 16);
        return code === 0 || code > 0x10ffff ? undefined : { out: String.fromCodePoint(code), used: 1 + len };
    };
    if (c === "x") return hex(2);
    if (c === "u") return hex(4);
    if (c === "U") return hex(8);
    if (/[0-7]/.test(c)) {
        const digits = text.slice(i, i + 3);
        if (!/^[0-7]{3}$/.test(digits)) return undefined;
        const code = parseInt(digits, 8);
        return code === 0 || code > 0xff ? undefined : { out: String.fromCharCode(code), used: 3 };
    }
    return undefined;
}

/**
 * Splits a setting's value into words the way systemd does for ExecStart and
 * Environment= (extract_first_word with UNQUOTE|CUNESCAPE|CUNESCAPE_RELAX):
 * whitespace separates, single or double quotes group (anywhere in a word),
 * C escapes are decoded in and out of quotes, and an unknown escape keeps
 * its backslash. Specifiers and `$` are left as written.
 */
export function splitWords(value: string): string[] {
    return splitRawWords(value).map((w) => w.word);
}

/** splitWords, with each word's text as written (quotes and escapes included). */
function splitRawWords(value: string): { word: string; raw: string }[] {
    const words: { word: string; raw: string }[] = [];
    let i = 0;
    const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r";
    while (i < value.length) {
        while (i < value.length && isSpace(value[i])) i++;
        if (i >= value.length) break;
        const start = i;
        let word = "";
        let quote: string | undefined;
        for (; i < value.length; i++) {
            const c = value[i];
            if (quote === undefined && isSpace(c)) break;
            if (c === "\\") {
                if (i + 1 >= value.length) throw new UnitSyntaxError(`trailing backslash in ${JSON.stringify(value)}`);
                const esc = cunescapeOne(value, i + 1);
                if (esc) {
                    word += esc.out;
                    i += esc.used;
                } else {
                    word += `\\${value[i + 1]}`;
                    i += 1;
                }
            } else if (quote !== undefined && c === quote) {
                quote = undefined;
            } else if (quote === undefined && (c === '"' || c === "'")) {
                quote = c;
            } else {
                word += c;
            }
        }
        if (quote !== undefined) throw new UnitSyntaxError(`unbalanced quoting in ${JSON.stringify(value)}`);
        words.push({ word, raw: value.slice(start, i) });
    }
    return words;
}

/** `%%` -> `%`; other specifiers are left as written (the stack never writes them). */
export function unescapeSpecifiers(text: string): string {
    return text.replace(/%%/g, "%");
}

/**
 * The argv an ExecStart value runs, with `$$` -> `$` and `${NAME}` left for
 * the caller to recognise. A bare `\;` is the argument `;`; a quoted `"\\;"`
 * is the two characters (systemd tells them apart by the raw text).
 */
export function parseExecStart(value: string): string[] {
    const words = splitRawWords(value).map(({ word, raw }) => (raw === "\\;" ? ";" : unescapeSpecifiers(word).replace(/\$\$/g, "$")));
    if (words.length > 0) words[0] = words[0].replace(/^[-@:+!]+/, "");
    return words;
}

// ---------------------------------------------------------------------------
// The unit
// ---------------------------------------------------------------------------

/** The Pulumi project and stack that manage a unit on the box. */
export interface UnitOwner {
    project: string;
    stack: string;
}

export interface UnitOptions {
    /** The service has an API key: `--config <0600 yaml>` (SGLang reads the key there) and EnvironmentFile=. */
    hasSecrets: boolean;
    /** service.secretEnvironment is not empty: EnvironmentFile= (its values are there, never in the unit). */
    hasSecretEnvironment?: boolean;
    /** Recorded in the unit so that another stack refuses to change or delete it (core/unit/ownership.ts). */
    owner?: UnitOwner;
    /**
     * Start budget (readiness.startupTimeoutSeconds). With Type=simple systemd
     * counts the unit started at fork, so this bounds only a future
     * ExecStartPre or notify-type start; the stack's readiness wait is what
     * waits for loading and CUDA-graph capture.
     */
    startupTimeoutSeconds?: number;
}

/** A crash loop ends after this many failed starts within the interval: a config SGLang rejects fails the same way every time. */
export const START_LIMIT_BURST = 3;
export const START_LIMIT_INTERVAL_SECONDS = 600;
/** Between restarts, time for the driver to free the dead server's GPU memory (TP workers exit last). */
export const RESTART_SECONDS = 10;
/** SIGTERM lets SGLang stop its scheduler processes; after this, SIGKILL to the whole cgroup. */
export const STOP_TIMEOUT_SECONDS = 60;
export const DEFAULT_START_TIMEOUT_SECONDS = 900;

const HEADER_PREFIX = "# Managed by sglang-serve";
const OWNER_PREFIX = "# sglang-serve owner: ";
const OWNER_LINE = /^# sglang-serve owner: ([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/;
const OWNER_NOTE = "# Another stack refuses to change or delete this unit (see sglang-serve:service.takeOverFrom).";

/** The comment line that records the owner: `# sglang-serve owner: <project>/<stack>`. */
export function ownerLine(owner: UnitOwner): string {
    const line = `${OWNER_PREFIX}${owner.project}/${owner.stack}`;
    if (!OWNER_LINE.test(line))
        throw new UnitSyntaxError(`owner ${JSON.stringify(`${owner.project}/${owner.stack}`)} is not <project>/<stack> of letters, digits and ._-`);
    return line;
}

/** The owner a unit's text records (its comment lines before the first section), if any. */
export function unitOwner(text: string): UnitOwner | undefined {
    for (const raw of text.split("\n")) {
        const line = raw.replace(/\r$/, "").trim();
        if (line.startsWith("[")) return undefined;
        const m = OWNER_LINE.exec(line);
        if (m) return { project: m[1], stack: m[2] };
    }
    return undefined;
}

/**
 * The unit text without what only records who manages it (our header line,
 * in any of its versions, and the owner line): two units equal here run the
 * same server, so changing only the owner needs no restart.
 */
export function unitTextWithoutOwner(text: string): string {
    return text
        .split("\n")
        .filter((line, i) => {
            const trimmed = line.replace(/\r$/, "").trim();
            return !(i === 0 && line.startsWith(HEADER_PREFIX)) && !OWNER_LINE.test(trimmed) && trimmed !== OWNER_NOTE;
        })
        .join("\n");
}

/**
 * The unit text as far as a running server goes: unitTextWithoutOwner, and
 * without TimeoutStartSec=, which bounds a start and nothing of a server
 * already started (Type=simple: systemd counts it started at fork). Two
 * units equal here run the same server: a change of the owner or of
 * readiness.startupTimeoutSeconds alone rewrites the file and restarts
 * nothing (the readiness section restarts nothing; a unit an older version
 * wrote with 900 whatever the budget is rewritten without a restart, issue 35).
 */
export function unitTextOfServer(text: string): string {
    return unitTextWithoutOwner(text)
        .split("\n")
        .filter((line) => !/^TimeoutStartSec=/.test(line.replace(/\r$/, "").trim()))
        .join("\n");
}

/**
 * The ExecStart value: one flag (and its values) per continuation line, so a
 * preview diff shows the flag that changed. Every word reaches the program
 * as written: a `${NAME}` is literal text, never a variable's value.
 */
export function renderExecStart(argv: readonly string[]): string {
    assertAbsoluteExecutable(argv);
    const lines: string[][] = [];
    for (const arg of argv) {
        if (lines.length === 0 || arg.startsWith("--")) lines.push([]);
        lines[lines.length - 1].push(escapeExecArg(arg));
    }
    return lines.map((words) => words.join(" ")).join(" \\\n    ");
}

/**
 * The environment the unit gives the server: the declared one, less what the
 * release no longer reads (SGLANG_ENABLE_SPEC_V2 from 0.5.14, core/sglang/rules.ts;
 * the config rules warn that it is left out); for a server declared with its
 * GPUs, those GPUs only (GPU_SCOPE_ENV).
 */
export function serverEnvironment(service: Pick<ServiceConfig, "environment" | "sglangVersion" | "gpus">): Record<string, string> {
    const environment = { ...service.environment };
    if (!readsSpecV2Env(service.sglangVersion)) delete environment[SPEC_V2_ENV];
    if (service.gpus !== undefined) {
        // CUDA numbers GPUs fastest first unless told PCI_BUS_ID; nvidia-smi, and so service.gpus, number them in PCI order.
        environment.CUDA_DEVICE_ORDER = "PCI_BUS_ID";
        environment.CUDA_VISIBLE_DEVICES = service.gpus.join(",");
    }
    return environment;
}

/** The variables serverEnvironment sets from service.gpus: service.environment leaves them to it (core/config/rules.ts). */
export const GPU_SCOPE_ENV = ["CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES"] as const;

function environmentLines(environment: Readonly<Record<string, string>>): string[] {
    return Object.keys(environment)
        .sort()
        .map((name) => `Environment=${quoteWord(escapeSpecifiers(`${name}=${environment[name]}`))}`);
}

/** The text of `sglang-<name>.service`. */
export function renderUnit(service: ServiceConfig, opts: UnitOptions): string {
    const argv = renderArgv(service, opts.hasSecrets ? { configFile: serverConfigFilePath(service.name) } : {});
    const environmentFile = opts.hasSecrets || opts.hasSecretEnvironment === true;
    const body = [
        ...(opts.owner ? [ownerLine(opts.owner), OWNER_NOTE] : []),
        "[Unit]",
        `Description=${escapeSpecifiers(`SGLang server ${service.name} (${service.model.servedName})`)}`,
        "After=network-online.target",
        "Wants=network-online.target",
        "# A config SGLang rejects fails the same way on every start: stop retrying after a few.",
        `StartLimitIntervalSec=${START_LIMIT_INTERVAL_SECONDS}`,
        `StartLimitBurst=${START_LIMIT_BURST}`,
        "",
        "[Service]",
        "Type=simple",
        ...environmentLines(serverEnvironment(service)),
        ...(environmentFile ? [`EnvironmentFile=${environmentFilePath(service.name)}`] : []),
        `ExecStart=${renderExecStart(argv)}`,
        "Restart=on-failure",
        "# Time for the driver to free the dead server's GPU memory before the next start.",
        `RestartSec=${RESTART_SECONDS}`,
        `TimeoutStartSec=${opts.startupTimeoutSeconds ?? DEFAULT_START_TIMEOUT_SECONDS}`,
        `TimeoutStopSec=${STOP_TIMEOUT_SECONDS}`,
        "# Stop every process of the server (TP workers too) so none keeps GPU memory.",
        "KillMode=control-group",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
    return `${HEADER_PREFIX}; edits here are drift and are replaced by \`pulumi up\`.\n${body}`;
}

// ---------------------------------------------------------------------------
// Parsing a unit
// ---------------------------------------------------------------------------

export interface UnitEntry {
    key: string;
    value: string;
}

export interface UnitSection {
    name: string;
    entries: UnitEntry[];
}

export interface ParsedUnit {
    /** Comment lines before the first section. */
    header: string[];
    sections: UnitSection[];
}

/**
 * Sections and assignments of a unit file in order (keys may repeat). Joins
 * backslash-continued lines with a space, as systemd does, skipping comment
 * lines inside a continuation.
 */
export function parseUnit(text: string): ParsedUnit {
    const header: string[] = [];
    const sections: UnitSection[] = [];
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
        let line = lines[i].replace(/\r$/, "");
        const trimmed = line.trim();
        if (trimmed === "") continue;
        if (trimmed.startsWith("#") || trimmed.startsWith(";")) {
            if (sections.length === 0) header.push(trimmed);
            continue;
        }
        while (endsWithContinuation(line) && i + 1 < lines.length) {
            i++;
            const next = lines[i].replace(/\r$/, "");
            if (/^\s*[#;]/.test(next)) continue; // a comment inside a continuation is skipped
            line = `${line.slice(0, -1)} ${next}`;
        }
        const section = /^\[([^\]]+)\]$/.exec(line.trim());
        if (section) {
            sections.push({ name: section[1], entries: [] });
            continue;
        }
        const eq = line.indexOf("=");
        if (eq === -1 || sections.length === 0) throw new UnitSyntaxError(`line ${i + 1} is not "Key=value" inside a section: ${JSON.stringify(line)}`);
        sections[sections.length - 1].entries.push({ key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() });
    }
    return { header, sections };
}

/** An odd number of trailing backslashes: the last one continues the line (an even number is escaped backslashes). */
function endsWithContinuation(line: string): boolean {
    const trailing = /\\*$/.exec(line)?.[0].length ?? 0;
    return trailing % 2 === 1;
}

/** Every value of `key` in `section`, with systemd's "an empty assignment resets the list" rule applied. */
export function unitValues(unit: ParsedUnit, section: string, key: string): string[] {
    let values: string[] = [];
    for (const s of unit.sections.filter((x) => x.name === section)) {
        for (const entry of s.entries) {
            if (entry.key !== key) continue;
            values = entry.value === "" ? [] : [...values, entry.value];
        }
    }
    return values;
}

/** What a unit on the box says about the server, as typed fields. */
export interface UnitService {
    argv: string[];
    fields: ArgvFields;
    environment: Record<string, string>;
    environmentFiles: string[];
}

function environmentFromValues(values: readonly string[]): Record<string, string> {
    const environment: Record<string, string> = {};
    for (const value of values) {
        for (const word of splitWords(value)) {
            const assignment = unescapeSpecifiers(word);
            const eq = assignment.indexOf("=");
            if (eq <= 0) throw new UnitSyntaxError(`Environment= word is not NAME=value: ${JSON.stringify(word)}`);
            environment[assignment.slice(0, eq)] = assignment.slice(eq + 1);
        }
    }
    return environment;
}

export function serviceFromUnit(text: string): UnitService {
    const unit = parseUnit(text);
    const execStarts = unitValues(unit, "Service", "ExecStart");
    if (execStarts.length !== 1) throw new UnitSyntaxError(`expected one ExecStart= in [Service], found ${execStarts.length}`);
    const argv = parseExecStart(execStarts[0]);
    return {
        argv,
        fields: parseArgv(argv),
        environment: environmentFromValues(unitValues(unit, "Service", "Environment")),
        environmentFiles: unitValues(unit, "Service", "EnvironmentFile").map((v) => unescapeSpecifiers(v).replace(/^-/, "")),
    };
}

// ---------------------------------------------------------------------------
// The EnvironmentFile
// ---------------------------------------------------------------------------

const ENV_FILE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Values stay unquoted: nothing systemd's env-file parser treats specially (quotes, `\`, `$`, `#`, whitespace). */
const ENV_FILE_VALUE = /^[A-Za-z0-9._~+/=:@,%-]*$/;

/**
 * The EnvironmentFile text (`NAME=value` lines, sorted). The file must be
 * written with ENVIRONMENT_FILE_MODE. Throws on a name or value that would
 * need quoting, rather than risk systemd reading it differently.
 */
export function renderEnvironmentFile(secrets: Readonly<Record<string, string>>): string {
    const lines = ["# Managed by sglang-serve: secrets for the SGLang unit (mode 0600)."];
    for (const name of Object.keys(secrets).sort()) {
        const value = secrets[name];
        if (!ENV_FILE_NAME.test(name)) throw new UnitSyntaxError(`environment file: bad variable name ${JSON.stringify(name)}`);
        if (!ENV_FILE_VALUE.test(value)) {
            throw new UnitSyntaxError(`environment file: the value of ${name} has characters outside [A-Za-z0-9._~+/=:@,%-]`);
        }
        lines.push(`${name}=${value}`);
    }
    return `${lines.join("\n")}\n`;
}

/**
 * The text of SGLang's config file for the API key (mode 0600): `api-key`
 * as argparse spells the flag (the merger turns each key into `--<key>`
 * verbatim, so `api_key` would be an unknown flag), the value double-quoted
 * so YAML reads it as a string whatever it looks like (`0123` would be an
 * octal number). Throws on a key the quoting could not carry.
 */
export function renderServerConfigFile(apiKey: string): string {
    if (!ENV_FILE_VALUE.test(apiKey) || apiKey === "")
        throw new UnitSyntaxError("server config file: the API key has characters outside [A-Za-z0-9._~+/=:@,%-]");
    return `# Managed by sglang-serve: read by SGLang (--config); mode 0600.\napi-key: "${apiKey}"\n`;
}

/** Reads back what renderEnvironmentFile writes (comments and blank lines skipped). */
export function parseEnvironmentFile(text: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const raw of text.split("\n")) {
        const line = raw.trim();
        if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
        const eq = line.indexOf("=");
        if (eq <= 0) throw new UnitSyntaxError(`environment file line is not NAME=value: ${JSON.stringify(line)}`);
        out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    }
    return out;
}
