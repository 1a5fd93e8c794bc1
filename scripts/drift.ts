/**
 * `npm run drift -- --stack <name> [--json]`: does the box still match what
 * the stack deployed? Runs the pinned engine's
 *
 *   refresh --preview-only --expect-no-changes --json --stack <name> --non-interactive
 *
 * through scripts/pulumi.sh (so SGLANG_SERVE_PROJECT_DIR, SGLANG_SERVE_STATE_DIR,
 * PULUMI_BACKEND_URL and the passphrase variables apply as for any
 * `npm run pulumi`), plus `--event-log`: the `--json` digest does not carry
 * refreshed values for dynamic providers, the event log does (see
 * core/drift-report.ts). Nothing is written to the stack's state.
 *
 * Prints a table (or, with --json, `{ stack, drift, changes: [{ resource,
 * type, field, declared, actual }] }`) and exits like the engine: 0 no drift,
 * 7 drift; 1 when the engine failed (its error text on stderr), 2 on usage.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { DriftReport, driftReport, engineErrors, formatDriftTable, parseDigest, parseEventLog } from "../core/drift-report";

/** The engine's exit code under `--expect-no-changes` when the refresh found changes. */
export const EXIT_DRIFT = 7;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

const STACK_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export interface DriftOptions {
    stack: string;
    /** Environment for the engine; default process.env (SGLANG_SERVE_PROJECT_DIR etc. pass through). */
    env?: NodeJS.ProcessEnv;
    /** The wrapper to run; default scripts/pulumi.sh beside this file. */
    pulumiScript?: string;
    /** Called with the engine's stderr as it arrives (progress of a cold engine build, say). */
    onStderr?: (chunk: string) => void;
}

export interface DriftResult {
    /** 0 no drift, 7 drift, 1 engine error, 2 bad options. */
    code: number;
    report: DriftReport;
    /** The engine's error text when code is 1 or 2. */
    error?: string;
}

interface Engine {
    code: number;
    stdout: string;
    stderr: string;
}

function runEngine(script: string, args: string[], env: NodeJS.ProcessEnv, onStderr?: (chunk: string) => void): Promise<Engine> {
    return new Promise((resolve) => {
        const child = spawn(script, args, { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => {
            stderr += d;
            onStderr?.(d);
        });
        child.on("error", (err) => resolve({ code: -1, stdout, stderr: `${stderr}cannot run ${script}: ${err.message}\n` }));
        child.on("close", (code, signal) => resolve({ code: code ?? -1, stdout, stderr: signal ? `${stderr}engine killed by ${signal}\n` : stderr }));
    });
}

/** Checks one stack for drift with the real engine. Never throws for engine failures: they come back as code 1. */
export async function runDrift(opts: DriftOptions): Promise<DriftResult> {
    const empty: DriftReport = { stack: opts.stack, drift: false, changes: [] };
    if (!STACK_NAME.test(opts.stack)) {
        return { code: EXIT_USAGE, report: empty, error: `not a stack name: ${JSON.stringify(opts.stack)}` };
    }
    const script = opts.pulumiScript ?? path.join(__dirname, "pulumi.sh");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-drift-"));
    const eventLog = path.join(dir, "events.jsonl");
    try {
        const args = ["refresh", "--preview-only", "--expect-no-changes", "--json", "--stack", opts.stack, "--non-interactive", "--event-log", eventLog];
        // `--event-log` is registered only with PULUMI_DEBUG_COMMANDS set, as the Automation API does.
        const env = { ...(opts.env ?? process.env), PULUMI_DEBUG_COMMANDS: "true" };
        const engine = await runEngine(script, args, env, opts.onStderr);
        const digest = parseDigest(engine.stdout);
        const events = fs.existsSync(eventLog) ? parseEventLog(fs.readFileSync(eventLog, "utf8")) : [];
        if (engine.code === 0 || engine.code === EXIT_DRIFT) {
            const report = driftReport(opts.stack, { digest, events, exitCode: engine.code });
            return { code: report.drift ? EXIT_DRIFT : 0, report };
        }
        // Failed part way: what was refreshed is still worth showing beside the error.
        const partial = driftReport(opts.stack, { digest, events });
        const errors = engineErrors(digest, engine.stderr);
        const error = errors.length > 0 ? errors.join("\n") : `the engine exited with code ${engine.code} and no message`;
        return { code: EXIT_ERROR, report: partial, error };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

const USAGE = "usage: npm run drift -- --stack <name> [--json]\n";

interface CliArgs {
    stack?: string;
    json: boolean;
    help: boolean;
    unknown: string[];
}

export function parseArgs(argv: readonly string[]): CliArgs {
    const out: CliArgs = { json: false, help: false, unknown: [] };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "--stack" || a === "-s") out.stack = argv[++i];
        else if (a.startsWith("--stack=")) out.stack = a.slice("--stack=".length);
        else if (a === "--json") out.json = true;
        else if (a === "--help" || a === "-h") out.help = true;
        else out.unknown.push(a);
    }
    return out;
}

async function main(argv: readonly string[]): Promise<number> {
    const args = parseArgs(argv);
    if (args.help) {
        process.stdout.write(USAGE);
        return 0;
    }
    if (!args.stack || args.unknown.length > 0) {
        if (args.unknown.length > 0) process.stderr.write(`drift: unknown argument(s): ${args.unknown.join(" ")}\n`);
        process.stderr.write(USAGE);
        return EXIT_USAGE;
    }
    // Pass on only the engine build's progress (a cold build takes minutes); the rest is in the report.
    let partial = "";
    const onStderr = (chunk: string) => {
        const lines = (partial + chunk).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) if (line.startsWith("engine: ")) process.stderr.write(`${line}\n`);
    };
    const result = await runDrift({ stack: args.stack, onStderr });
    if (args.json) {
        const doc = result.error === undefined ? result.report : { ...result.report, error: result.error };
        process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    } else {
        process.stdout.write(formatDriftTable(result.report, { partial: result.error !== undefined }));
    }
    if (result.error !== undefined) {
        process.stderr.write(`drift: checking stack ${args.stack} failed:\n${result.error}\n`);
    }
    return result.code;
}

if (require.main === module) {
    main(process.argv.slice(2)).then(
        (code) => (process.exitCode = code),
        (err: Error) => {
            process.stderr.write(`drift: ${err.stack ?? err.message}\n`);
            process.exitCode = EXIT_ERROR;
        },
    );
}
