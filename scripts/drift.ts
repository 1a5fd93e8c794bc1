/**
 * `npm run drift -- --stack <name> [--json] [--verify]`: does the box still
 * match what the stack deployed? `--verify` also re-hashes every file of the
 * staged weights against its manifest (each refresh compares sizes and
 * mtimes). Runs `refresh --preview-only` on the stack through the Automation API (`Stack.previewRefresh({ onEvent })`) and builds
 * the report from the engine's events (core/drift/drift-report.ts). Nothing is
 * written to the stack's state.
 *
 * `npm run drift` is `scripts/pulumi.sh --env-exec node ... scripts/drift.ts`:
 * pulumi.sh picks the CLI (SGLANG_SERVE_ENGINE), sets the offline settings,
 * the backend, PULUMI_HOME and the passphrase, and tells this script the CLI's
 * bin directory and the project directory (SGLANG_SERVE_ENGINE_BIN,
 * SGLANG_SERVE_PROJECT_DIR). The Automation API's CLI processes inherit that
 * environment, so nothing here repeats those settings.
 *
 * Prints a table (or, with --json, `{ stack, drift, changes: [{ resource,
 * type, field, declared, actual }] }`) and exits like the engine's
 * `--expect-no-changes`: 0 no drift, 7 drift; 1 when the engine failed (its
 * error text on stderr), 2 on usage.
 */
import * as path from "node:path";
import { parseArgs as parseNodeArgs } from "node:util";
import { CommandError, EngineEvent, LocalWorkspace, PulumiCommand, Stack, StackNotFoundError } from "@pulumi/pulumi/automation";
import { DriftReport, driftReport, engineErrors, formatDriftTable } from "../core/drift/drift-report";
import { VERIFY_WEIGHTS_VARIABLE } from "../core/weights/manifest";

/** The engine's exit code under `--expect-no-changes` when the refresh found changes. */
export const EXIT_DRIFT = 7;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

const STACK_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export interface DriftOptions {
    stack: string;
    /** The project directory; default SGLANG_SERVE_PROJECT_DIR (set by scripts/pulumi.sh --env-exec). */
    projectDir?: string;
    /** The CLI's bin directory; default SGLANG_SERVE_ENGINE_BIN (set by scripts/pulumi.sh --env-exec). */
    engineBin?: string;
    /** Variables added to the CLI's environment (it inherits this process's). */
    env?: Record<string, string>;
}

export interface DriftResult {
    /** 0 no drift, 7 drift, 1 engine error, 2 bad options. */
    code: number;
    report: DriftReport;
    /** The engine's error text when code is 1 or 2. */
    error?: string;
}

/**
 * The CLI's stderr from a CommandError. The error keeps the CLI's result
 * private and its message wraps it (`code: -2 ... stderr: Command failed with
 * exit code N: <command>\n<stderr>\n<stdout> ... err?: ...`, automation/cmd.ts:
 * execa rejects on any non-zero exit and the SDK wraps that rejection), so
 * this reads the stderr part of the message, without the command line.
 */
function stderrOfCommandError(err: Error): string {
    const m = /\n stderr: ([\s\S]*?)\n err\?: /.exec(err.message);
    if (!m) return err.message;
    return m[1]
        .split("\n")
        .filter((line) => !/^Command failed with exit code \d+: /.test(line) && !/^Command failed: /.test(line))
        .join("\n");
}

/** The Pulumi CLI in `bin`: `PulumiCommand.get({ root })` takes the directory above `bin/pulumi`. Never installs one. */
function pulumiIn(bin: string): Promise<PulumiCommand> {
    // An installed CLI may sit in a directory not named bin (scripts/engine.sh
    // accepts any with pulumi and its language host): pulumi.sh put it first on PATH.
    return path.basename(bin) === "bin" ? PulumiCommand.get({ root: path.dirname(bin) }) : PulumiCommand.get();
}

/** Checks one stack for drift with the real engine. Never throws for engine failures: they come back as code 1. */
export async function runDrift(opts: DriftOptions): Promise<DriftResult> {
    const empty: DriftReport = { stack: opts.stack, drift: false, changes: [], servingFigures: [] };
    if (!STACK_NAME.test(opts.stack)) {
        return { code: EXIT_USAGE, report: empty, error: `not a stack name: ${JSON.stringify(opts.stack)}` };
    }
    const projectDir = opts.projectDir ?? process.env.SGLANG_SERVE_PROJECT_DIR;
    const bin = opts.engineBin ?? process.env.SGLANG_SERVE_ENGINE_BIN;
    if (!projectDir || !bin) {
        return {
            code: EXIT_USAGE,
            report: empty,
            error: "no engine set up: run it as `npm run drift` (scripts/pulumi.sh --env-exec sets SGLANG_SERVE_ENGINE_BIN and SGLANG_SERVE_PROJECT_DIR)",
        };
    }

    let stack: Stack;
    try {
        const pulumiCommand = await pulumiIn(bin);
        const workspace = await LocalWorkspace.create({ workDir: projectDir, pulumiCommand, envVars: opts.env });
        stack = await Stack.select(opts.stack, workspace);
    } catch (err) {
        const text = err instanceof CommandError ? stderrOfCommandError(err) : String(err);
        const lines = engineErrors([], text);
        const prefix = err instanceof StackNotFoundError ? "" : `cannot run the Pulumi CLI in ${bin}: `;
        return { code: EXIT_ERROR, report: empty, error: lines.length > 0 ? `${prefix}${lines.join("\n")}` : `${prefix}${String(err)}` };
    }

    const events: EngineEvent[] = [];
    let stderr = "";
    try {
        // `refresh --preview-only` (the SDK's previewRefresh; refresh({ previewOnly }) is its deprecated
        // form, which also reads the stack's history afterwards).
        await stack.previewRefresh({
            onEvent: (event) => events.push(event),
            onError: (chunk) => (stderr += chunk),
            color: "never",
        });
    } catch (err) {
        // Failed part way: what was refreshed is still worth showing beside the error.
        const partial = driftReport(opts.stack, events);
        // The resources' errors are diagnostic events (the CLI's stderr is empty
        // then); stderr has the rest (a wrong passphrase, a locked stack). Not
        // the CommandError's message: it carries the whole progress display.
        const errors = engineErrors(events, stderr);
        if (errors.length === 0 && !(err instanceof CommandError)) errors.push(String(err));
        return { code: EXIT_ERROR, report: partial, error: errors.length > 0 ? errors.join("\n") : "the engine failed and printed no message" };
    }
    const report = driftReport(opts.stack, events);
    return { code: report.drift ? EXIT_DRIFT : 0, report };
}

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

const USAGE = "usage: npm run drift -- --stack <name> [--json] [--verify]\n";

interface CliArgs {
    stack?: string;
    json: boolean;
    help: boolean;
    /** Re-hash every staged weights file against its manifest (issue 33), not only sizes and mtimes. */
    verify: boolean;
    /** Why the arguments are not usable (an unknown flag, a stray argument, a flag without its value). */
    error?: string;
}

export function parseArgs(argv: readonly string[]): CliArgs {
    try {
        const { values } = parseNodeArgs({
            args: [...argv],
            options: {
                stack: { type: "string", short: "s" },
                json: { type: "boolean", default: false },
                verify: { type: "boolean", default: false },
                help: { type: "boolean", short: "h", default: false },
            },
            strict: true,
            allowPositionals: false,
        });
        return { stack: values.stack, json: values.json, help: values.help, verify: values.verify };
    } catch (err) {
        return { json: false, help: false, verify: false, error: err instanceof Error ? err.message : String(err) };
    }
}

async function main(argv: readonly string[]): Promise<number> {
    const args = parseArgs(argv);
    if (args.help && args.error === undefined) {
        process.stdout.write(USAGE);
        return 0;
    }
    if (!args.stack || args.error !== undefined) {
        if (args.error !== undefined) process.stderr.write(`drift: ${args.error}\n`);
        process.stderr.write(USAGE);
        return EXIT_USAGE;
    }
    // A cold engine build's progress (`engine: ...`) reaches stderr from
    // scripts/engine.sh, run by pulumi.sh before this script starts.
    // The providers' refresh re-hashes the staged weights when the engine's environment says so.
    const result = await runDrift({ stack: args.stack, ...(args.verify ? { env: { [VERIFY_WEIGHTS_VARIABLE]: "1" } } : {}) });
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
