import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { LineTail, TimedLine } from "./tail";
import { nowMs } from "./stats";

const repo = path.resolve(__dirname, "..", "..");
let pulumiSh = path.join(repo, "scripts", "pulumi.sh");
let floorSource = path.join(repo, "bench", "floor");

/** Run the engine through this copy of scripts/pulumi.sh, and take the floor from this tree (a Snapshot). */
export function useTree(dir: string): void {
    pulumiSh = path.join(dir, "scripts", "pulumi.sh");
    floorSource = path.join(dir, "bench", "floor");
}

/** The passphrase lab/deployment.ts uses; the floor uses it too, so both pay the same secrets set-up. */
export const E2E_PASSPHRASE = "sglang-serve e2e test passphrase";

/** A project folder and stack run through scripts/pulumi.sh exactly as lab/deployment.ts runs it. */
export interface Project {
    dir: string;
    stack: string;
    /** Environment for every engine run of this project. */
    engineEnv?: Record<string, string>;
}

export interface EngineEvent {
    /** When the bench saw the event in the --event-log file (epoch ms). */
    t: number;
    sequence: number;
    /** The engine's own stamp: Unix seconds (too coarse for latencies; kept for cross-checks). */
    timestamp: number;
    type: string;
    urn?: string;
    op?: string;
    message?: string;
    severity?: string;
}

export interface RunResult {
    args: string[];
    code: number;
    /** Spawn and exit of scripts/pulumi.sh (epoch ms). */
    startMs: number;
    endMs: number;
    wallMs: number;
    output: string;
    stdout: TimedLine[];
    /** Parsed --event-log, when asked for. */
    events: EngineEvent[];
    /** Lines appended to other files while it ran (sshd logs, profile logs), by file. */
    tails: Record<string, TimedLine[]>;
}

export interface RunOptions {
    env?: Record<string, string>;
    input?: string;
    /** Pass --event-log (with PULUMI_DEBUG_COMMANDS=true, which the flag needs) and parse it. */
    eventLog?: boolean;
    /** Files to follow while the command runs. */
    tail?: string[];
    /** Grace after exit for followed files (sshd logs a connection's last lines when it closes). */
    tailGraceMs?: number;
}

function parseEvent(t: number, line: string): EngineEvent | null {
    let e: Record<string, unknown>;
    try {
        e = JSON.parse(line) as Record<string, unknown>;
    } catch {
        return null;
    }
    const type = Object.keys(e).find((k) => k.endsWith("Event")) ?? "unknown";
    const body = (e[type] ?? {}) as Record<string, unknown>;
    const meta = (body.metadata ?? {}) as Record<string, unknown>;
    return {
        t,
        sequence: Number(e.sequence ?? -1),
        timestamp: Number(e.timestamp ?? 0),
        type,
        urn: (meta.urn as string | undefined) ?? (body.urn as string | undefined),
        op: meta.op as string | undefined,
        message: body.message as string | undefined,
        severity: body.severity as string | undefined,
    };
}

const running = new Set<ChildProcess>();

/**
 * Interrupts the engine commands still running (SIGINT: the engine cancels and
 * stops its plugins) and waits for them, SIGKILL after `graceMs`. For Ctrl-C:
 * an engine left running would keep its provider processes alive.
 */
export async function stopRunningEngines(graceMs = 10_000): Promise<void> {
    await Promise.all(
        [...running].map(
            (child) =>
                new Promise<void>((resolve) => {
                    if (child.exitCode !== null || child.signalCode !== null) return resolve();
                    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
                    child.once("close", () => {
                        clearTimeout(timer);
                        resolve();
                    });
                    child.kill("SIGINT");
                }),
        ),
    );
}

/** `scripts/pulumi.sh <args> --stack <stack> --non-interactive` in the project's folder, timed. */
export function runEngine(project: Project, args: string[], opts: RunOptions = {}): Promise<RunResult> {
    const eventFile = opts.eventLog ? path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-ev-")), "events.jsonl") : null;
    const fullArgs = [...args, "--stack", project.stack, "--non-interactive", ...(eventFile ? ["--event-log", eventFile] : [])];
    const tails = (opts.tail ?? []).map((f) => new LineTail(f));
    const evTail = eventFile ? new LineTail(eventFile, { fromStart: true }) : null;
    return new Promise<RunResult>((resolve, reject) => {
        const startMs = nowMs();
        const child = spawn(pulumiSh, fullArgs, {
            env: {
                ...process.env,
                SGLANG_SERVE_PROJECT_DIR: project.dir,
                SGLANG_SERVE_STATE_DIR: path.join(project.dir, ".state"),
                PULUMI_CONFIG_PASSPHRASE: E2E_PASSPHRASE,
                PULUMI_CONFIG_PASSPHRASE_FILE: "",
                PULUMI_BACKEND_URL: "",
                PULUMI_HOME: "",
                ...(eventFile ? { PULUMI_DEBUG_COMMANDS: "true" } : {}),
                ...project.engineEnv,
                ...opts.env,
            },
            stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        });
        running.add(child);
        if (opts.input !== undefined) child.stdin!.end(opts.input);
        let output = "";
        const stdout: TimedLine[] = [];
        let partial = "";
        child.stdout!.on("data", (d: Buffer) => {
            const t = nowMs();
            const s = d.toString("utf8");
            output += s;
            const parts = (partial + s).split("\n");
            partial = parts.pop() ?? "";
            for (const line of parts) stdout.push({ t, line });
        });
        child.stderr!.on("data", (d: Buffer) => {
            output += d.toString("utf8");
        });
        child.on("error", (e) => {
            running.delete(child);
            for (const t of tails) t.stop();
            evTail?.stop();
            reject(e);
        });
        child.on("close", (code) => {
            const endMs = nowMs();
            running.delete(child);
            if (partial) stdout.push({ t: endMs, line: partial });
            setTimeout(
                () => {
                    const events = (evTail?.stop() ?? []).map((l) => parseEvent(l.t, l.line)).filter((e): e is EngineEvent => e !== null);
                    if (eventFile) fs.rmSync(path.dirname(eventFile), { recursive: true, force: true });
                    const tailed: Record<string, TimedLine[]> = {};
                    for (const t of tails) tailed[t.file] = t.stop();
                    resolve({ args: fullArgs, code: code ?? -1, startMs, endMs, wallMs: endMs - startMs, output, stdout, events, tails: tailed });
                },
                opts.tailGraceMs ?? (tails.length > 0 || evTail ? 150 : 0),
            );
        });
    });
}

/** Throws with the output's tail unless the exit code is the expected one. */
export function expectCode(r: RunResult, code: number, what: string): RunResult {
    if (r.code !== code) throw new Error(`${what}: expected exit ${code}, got ${r.code}\n${r.output.slice(-4000)}`);
    return r;
}

/**
 * The floors: bench/floor copied to a temporary folder with the repo's
 * node_modules linked in, a stack of its own, deployed once (so the state
 * holds what a deployed stack's does).
 *
 * - `typescript`: the empty TypeScript program as Pulumi runs one by default
 *   (ts-node, type-checked);
 * - `transpile-only`: the same with PULUMI_NODEJS_TRANSPILE_ONLY=true, the
 *   fastest way Pulumi runs TypeScript (the target's floor);
 * - `javascript`: the same program as JavaScript (runtime typescript: false);
 * - `dynamic`: the transpile-only program plus one dynamic resource whose
 *   provider does nothing, served by the SDK's dynamic-provider plugin under
 *   the official launcher: what any stack of dynamic resources pays at least.
 */
export type FloorKind = "typescript" | "transpile-only" | "javascript" | "dynamic";

export function createFloorProject(kind: FloorKind, stack = "floor"): Project {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sglang-bench-floor-${kind}-`));
    const src = floorSource;
    for (const f of fs.readdirSync(src)) fs.copyFileSync(path.join(src, f), path.join(dir, f));
    fs.symlinkSync(path.join(repo, "node_modules"), path.join(dir, "node_modules"));
    fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), "config: {}\n");
    if (kind === "javascript") {
        fs.writeFileSync(path.join(dir, "index.js"), `"use strict";\nconst pulumi = require("@pulumi/pulumi");\nexports.stack = pulumi.getStack();\n`);
        fs.rmSync(path.join(dir, "index.ts"));
        const yaml = path.join(dir, "Pulumi.yaml");
        fs.writeFileSync(yaml, fs.readFileSync(yaml, "utf8").replace("typescript: true", "typescript: false"));
        const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Record<string, unknown>;
        fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ ...pkg, main: "index.js" }, null, 2) + "\n");
    }
    if (kind === "dynamic") {
        // Registered as pulumi.dynamic.Resource registers one, with the provider as module text.
        const provider = `exports.handler = () => ({ async create(inputs) { return { id: "floor", outs: inputs }; }, async read(id, props) { return { id, props }; }, async diff() { return { changes: false }; } });`;
        fs.appendFileSync(
            path.join(dir, "index.ts"),
            `new pulumi.CustomResource("pulumi-nodejs:dynamic:Resource", "floor-dynamic", { value: 1, __provider: ${JSON.stringify(provider)} });\n`,
        );
    }
    const env: Record<string, string> = kind === "typescript" || kind === "javascript" ? {} : { PULUMI_NODEJS_TRANSPILE_ONLY: "true" };
    return { dir, stack, engineEnv: env };
}

/** The deployed floors, one of each kind. */
export type Floors = Record<FloorKind, Project>;

/** How the bench's table names each floor. */
export const FLOOR_LABEL: Record<FloorKind, string> = {
    typescript: "empty TypeScript program, type-checked (Pulumi's default)",
    "transpile-only": "empty TypeScript program, transpile-only (the target's floor)",
    javascript: "empty JavaScript program",
    dynamic: "transpile-only program with one no-op dynamic resource",
};
