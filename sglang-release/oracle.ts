// The real SGLang releases as the judge of a command line (the preview's
// verdict, providers/sglang-server/verdict.ts) and as the tests' oracle: a typed
// front for install.sh and oracle.py (see README.md). A release's Python
// process serves the calls made while it runs or waits for the next
// (oracle-process.ts); each call's cases go in as JSON lines on its stdin,
// results come back one line each, in order.
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { OracleProcess } from "./oracle-process";
import { checkSite, SITE_KEY_FILE, siteProblem } from "./site-check";

export type OracleEntry = "sglang-serve" | "launch-server";

export interface OracleCase {
    /** Arguments after the program name (`sglang serve` / `python -m sglang.launch_server`). */
    argv: readonly string[];
    entry: OracleEntry;
    /** Added to the case's environment (like a unit's Environment= lines). */
    env?: Readonly<Record<string, string>>;
    /** Lab GPUs the stubs report (default 2 x 49140 MiB RTX A6000). */
    gpuCount?: number;
    gpuMemoryMiB?: number;
}

/** ok: the release handed its ServerArgs to the server launcher; exit: it ended without (e.g. --help). */
export type OracleStatus = "ok" | "argparse-error" | "exception" | "exit";
export type OracleLauncher = "http" | "grpc" | "encode" | "encode-grpc" | "ray";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface OracleLog {
    level: string;
    logger: string;
    message: string;
    /** Python warnings only: the category (UserWarning) and file:line. */
    category?: string;
    source?: string;
}

export interface OracleResult {
    status: OracleStatus;
    exitCode: number;
    /** `ValueError`, `AssertionError`, or module-qualified for non-builtins, as Python prints it; null unless "exception". */
    exceptionType: string | null;
    /** str(exc), or argparse's message (without `prog: error:`); null when ok. */
    message: string | null;
    /** For an exception: the settings the check that raised it reads, from the release's source (ServerArgs fields, `env:VAR`); null when no frame of the release raised it. */
    checkReads?: string[] | null;
    stdout: string;
    stderr: string;
    logs: OracleLog[];
    /** The release's own dump of the resolved args (dataclasses.asdict; resolved_dict() from 0.5.2x); null unless ok. */
    serverArgs: Record<string, JsonValue> | null;
    /** GET /server_info as that release's handler builds it; scheduler-only values are null and listed in serverInfoSimulated. */
    serverInfo: Record<string, JsonValue> | null;
    serverInfoSimulated: string[] | null;
    serverInfoError?: string;
    launcher: OracleLauncher | null;
    /** Stubbed names (placeholders) this case used beyond the import-time ones. */
    stubsTouched: string[];
}

export interface OracleOptions {
    /** Cases run at once (default: the CPU count). */
    jobs?: number;
    /** Per case, in seconds (default 120). */
    caseTimeoutSeconds?: number;
    /** The environment oracle.py runs in (default: this process's); each case still gets a fresh one of its own. */
    env?: NodeJS.ProcessEnv;
    /** How long the release's process waits for the next call after this one (default ORACLE_LINGER_MS; inside keepOracles, until the scope ends). */
    lingerMs?: number;
}

/** sglang-release/ in the checkout, also when this file runs compiled from dist/lab/<build>/. */
export function releaseDir(): string {
    if (fs.existsSync(path.join(__dirname, "oracle.py"))) return __dirname;
    let dir = __dirname;
    while (dir !== path.dirname(dir)) {
        const candidate = path.join(dir, "sglang-release");
        if (fs.existsSync(path.join(candidate, "oracle.py"))) return candidate;
        dir = path.dirname(dir);
    }
    throw new Error(`sglang-release/ not found above ${__dirname}`);
}

/** The python3 this machine runs the release's code with (SGLANG_SERVE_PYTHON, else python3 on PATH). */
export function python(): string {
    return process.env.SGLANG_SERVE_PYTHON || "python3";
}

/** A release as install.sh takes it (its own check, the same pattern). */
const RELEASE = /^[0-9]+(\.[0-9]+)*([.-]?(a|b|rc|post|dev)[0-9]*)*$/;

/**
 * VERSIONS' text as its releases, in file order: one a line, blank lines and
 * `#` comments skipped. A line that is not a release, or a release given
 * twice, throws naming the line (install.sh would try to install it).
 */
export function parseVersions(text: string): string[] {
    const versions: string[] = [];
    text.split("\n").forEach((raw, i) => {
        const line = raw.trim();
        if (line === "" || line.startsWith("#")) return;
        if (!RELEASE.test(line)) throw new Error(`sglang-release/VERSIONS line ${i + 1}: ${JSON.stringify(line)} is not a release (e.g. 0.5.23)`);
        if (versions.includes(line)) throw new Error(`sglang-release/VERSIONS line ${i + 1}: ${line} is listed twice`);
        versions.push(line);
    });
    return versions;
}

let versionsRead: readonly string[] | undefined;

/**
 * The releases in VERSIONS, in file order (oldest first), read once: the one
 * list of the releases the project runs for real. install.sh installs them,
 * the lab gives each a venv (lab/sglang/venvs.ts), and the tests that hold the
 * stack to the real releases run each (README.md, "Adding a release").
 */
export function sglangVersions(): readonly string[] {
    versionsRead ??= parseVersions(fs.readFileSync(path.join(releaseDir(), "VERSIONS"), "utf8"));
    return versionsRead;
}

interface Ran {
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
}

function run(cmd: string, args: string[], input: string, env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
    return new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], env });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        child.stdout.on("data", (b: Buffer) => out.push(b));
        child.stderr.on("data", (b: Buffer) => err.push(b));
        child.on("error", reject);
        child.on("close", (code, signal) =>
            resolve({ code, signal, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }),
        );
        // A process that exits before reading all of stdin is reported by its exit, not as EPIPE.
        child.stdin.on("error", () => undefined);
        child.stdin.end(input);
    });
}

/** The site dirs install.sh keeps for `versions` (none: those of VERSIONS), the shared deps first. */
function sitesFor(versions: readonly string[]): string[] {
    const root = releaseCacheRoot();
    return [path.join(root, "deps", "site"), ...(versions.length > 0 ? versions : sglangVersions()).map((v) => path.join(root, v, "site"))];
}

/**
 * Runs install.sh (idempotent; instant when the cache is current): the
 * releases in VERSIONS, or `versions`. Then checks each of their site dirs
 * against its wheels' RECORDs (site-check.ts); a site that fails is rebuilt
 * (its key removed, so install.sh installs it again), never used. Returns
 * what was rebuilt and why, one line per site; throws if a rebuilt site still
 * fails. `env`: install.sh's (and pip's) whole environment; the default is
 * this process's.
 */
export async function ensureInstalled(versions: readonly string[] = [], env?: NodeJS.ProcessEnv): Promise<string[]> {
    const install = async () => {
        const r = await run("bash", [path.join(releaseDir(), "install.sh"), ...versions], "", env);
        if (r.code !== 0) throw new Error(`sglang-release/install.sh ${versions.join(" ")} failed (exit ${r.code ?? r.signal}):\n${r.stderr}`);
    };
    await install();
    const failed = sitesFor(versions)
        .map((site) => ({ site, check: checkSite(site) }))
        .filter((s) => !s.check.ok);
    if (failed.length === 0) return [];
    for (const { site } of failed) fs.rmSync(path.join(site, SITE_KEY_FILE), { force: true });
    fs.rmSync(path.join(releaseCacheRoot(), ".installed"), { force: true });
    await install();
    const still = failed.map(({ site }) => ({ site, check: checkSite(site) })).filter((s) => !s.check.ok);
    if (still.length > 0) throw new Error(`sglang-release/install.sh rebuilt ${still.map((s) => siteProblem(s.site, s.check)).join("\n")}`);
    return failed.map(({ site, check }) => `rebuilt ${siteProblem(site, check)}`);
}

/**
 * The project's cache on this machine: SGLANG_SERVE_CACHE, else XDG_CACHE_HOME or ~/.cache, then sglang-serve (the
 * releases' sites, the lab's rootfs; install.sh and oracle.py find the same root). scripts/engine.sh and
 * scripts/lint-workflows.sh keep theirs in the same sglang-serve folder, each moved by a variable of its own.
 */
export function cacheRoot(): string {
    return process.env.SGLANG_SERVE_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "sglang-serve");
}

/** install.sh's cache: `<root>/<version>/site`, `<root>/deps/site`. */
export function releaseCacheRoot(): string {
    return path.join(cacheRoot(), "sglang");
}

/** The sites of `version` (and the shared deps) that fail the check before use (site-check.ts), one line each; none when both pass. */
export function siteProblems(version: string): string[] {
    return sitesFor([version])
        .map((site) => ({ site, check: checkSite(site) }))
        .filter((s) => !s.check.ok)
        .map((s) => siteProblem(s.site, s.check));
}

/** Whether install.sh completed `version`'s site dir (its key file is written last). */
export function isInstalled(version: string): boolean {
    const root = releaseCacheRoot();
    return fs.existsSync(path.join(root, version, "site", ".sglang-serve-key")) && fs.existsSync(path.join(root, "deps", "site", ".sglang-serve-key"));
}

const STATUSES: readonly string[] = ["ok", "argparse-error", "exception", "exit"];

function parseResult(line: string, index: number): OracleResult {
    const value: unknown = JSON.parse(line);
    if (typeof value !== "object" || value === null || !STATUSES.includes(String((value as { status?: unknown }).status))) {
        throw new Error(`oracle.py: result ${index + 1} is not a result: ${line.slice(0, 200)}`);
    }
    return value as OracleResult;
}

/**
 * The variables oracle.py's process reads from the environment it is started
 * in (cache_root, base_env: GPU_DEFAULTS are the SGLANG_LAB_ ones); it runs
 * the release under an environment of its own made from these alone. Calls
 * whose environments are alike in these can share a process.
 */
const ORACLE_READS = /^(HOME|TMPDIR|XDG_CACHE_HOME|SGLANG_SERVE_CACHE|SGLANG_LAB_.*)$/;

/**
 * How long a release's process waits for the next call: the next step of a
 * test, the next test file in the same worker, the next check of a preview.
 * It holds the release imported (a few hundred MB) meanwhile.
 */
export const ORACLE_LINGER_MS = 60_000;

/**
 * The `oracle.py --serve` processes running now, by what they were started
 * with: this process's, whoever calls (each is a run of a pure function of its
 * key and the cases, so sharing one changes only what it costs).
 */
const running = new Map<string, OracleProcess>();

/** Open keepOracles scopes: while there is one, a release's process waits for its next call until the scope ends. */
let keeping = 0;

/**
 * Keeps each release's process waiting for its next call, however long that
 * takes, until the returned function is called; that function ends the ones
 * that wait (and the busy ones once their calls are answered). For a test
 * file whose calls to the same release are minutes apart under a full run's
 * load (tests/lab/sglang-releases.test.ts): after ORACLE_LINGER_MS each call
 * would import the release again. A call sent before the scope opened keeps
 * its own linger. The processes never keep this process alive, and end with
 * it.
 */
export function keepOracles(): () => void {
    keeping++;
    let ended = false;
    return () => {
        if (ended) return;
        ended = true;
        if (--keeping > 0) return;
        for (const [key, oracle] of running) {
            oracle.endIfIdle();
            running.delete(key);
        }
    };
}

/**
 * Runs each case through the real release `version` (one of sglangVersions()).
 * A call made while a process runs the same release (the same interpreter, the
 * sites as checked, what oracle.py reads of `opts.env`), or waits for the next
 * call, is sent to that process (oracle-process.ts): the release is imported
 * once for all of them.
 */
export async function runOracle(version: string, cases: readonly OracleCase[], opts: OracleOptions = {}): Promise<OracleResult[]> {
    // Never run a site that fails its RECORD check: ensureInstalled rebuilds it.
    const checked: string[] = [];
    for (const site of [path.join(releaseCacheRoot(), version, "site"), path.join(releaseCacheRoot(), "deps", "site")]) {
        const check = checkSite(site);
        if (!check.ok) throw new Error(`oracle.py --version ${version} not run: ${siteProblem(site, check)}; ensureInstalled(["${version}"]) rebuilds it`);
        checked.push(check.checked);
    }
    const env = opts.env ?? process.env;
    const reads = Object.entries(env)
        .filter(([k]) => ORACLE_READS.test(k))
        .sort(([a], [b]) => a.localeCompare(b));
    const key = JSON.stringify([python(), version, checked, reads]);
    let oracle = running.get(key);
    if (!oracle?.accepting) {
        oracle = new OracleProcess(`oracle.py --version ${version}`, python(), [path.join(releaseDir(), "oracle.py"), "--version", version, "--serve"], env);
        running.set(key, oracle);
    }
    const lines = await oracle.run({
        cases: cases.map((c) => JSON.stringify(c)),
        jobs: opts.jobs,
        timeoutSeconds: opts.caseTimeoutSeconds,
        lingerMs: keeping > 0 ? Infinity : (opts.lingerMs ?? ORACLE_LINGER_MS),
    });
    if (lines.length !== cases.length) throw new Error(`oracle.py --version ${version}: ${lines.length} results for ${cases.length} cases`);
    return lines.map(parseResult);
}
