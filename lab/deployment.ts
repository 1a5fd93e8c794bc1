import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { writeStackFile } from "./stack-file";

const repo = path.resolve(__dirname, "..");

/** What the project needs to run, copied (or linked) into a deployment's own folder (weights/: the box-side program the staging sends, read beside remote/). */
export const PROJECT_FILES = ["Pulumi.yaml", "package.json", "tsconfig.json", "index.ts", "ts-hook.cjs"];
export const PROJECT_DIRS = ["components", "core", "providers", "remote", "sglang-release", "weights"];

/**
 * A temporary folder that is the project as the engine sees it: the top-level
 * files copied, the code folders and node_modules linked to the repository's.
 */
export function projectCopy(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    for (const f of PROJECT_FILES) fs.copyFileSync(path.join(repo, f), path.join(dir, f));
    for (const d of [...PROJECT_DIRS, "node_modules"]) fs.symlinkSync(path.join(repo, d), path.join(dir, d));
    return dir;
}

export interface EngineResult {
    code: number;
    stdout: string;
    stderr: string;
    /** stdout and stderr, for messages. */
    output: string;
}

/**
 * A copy of the project with its own stack config, state backend and
 * passphrase, deployed with the real engine through `scripts/pulumi.sh`.
 * The work tree is never touched.
 */
/** The SglangService's type as the state records it (a dynamic provider's resource). */
export const SERVICE_STATE_TYPE = "pulumi-nodejs:dynamic/sglang-serve:SglangService";

export class Deployment {
    private constructor(
        readonly dir: string,
        readonly stack: string,
        /** Which CLI scripts/engine.sh gives: the pinned one, or the newest tested. */
        readonly engine: "pinned" | "next",
    ) {}

    static async create(stack: string, config: Record<string, unknown>, opts: { engine?: "pinned" | "next" } = {}): Promise<Deployment> {
        const dir = projectCopy(`sglang-serve-e2e-${stack}-`);
        const deployment = new Deployment(dir, stack, opts.engine ?? "pinned");
        deployment.writeConfig(config);
        return deployment;
    }

    /** Another stack of this project copy, with the same backend and passphrase: `--stack <name>` in the same checkout. */
    otherStack(stack: string): Deployment {
        return new Deployment(this.dir, stack, this.engine);
    }

    /** Writes Pulumi.<stack>.yaml with `config`; the stack's salt and the secrets set with setSecret are kept (lab/stack-file.ts). */
    writeConfig(config: Record<string, unknown>): void {
        writeStackFile(path.join(this.dir, `Pulumi.${this.stack}.yaml`), config);
    }

    /**
     * The deploy run's secrets, as a deploy job's environment gives them to
     * the engine (SGLANG_SERVE_API_KEY, SGLANG_SERVE_SECRET_ENVIRONMENT,
     * SGLANG_SERVE_GATEWAY_ADMIN_KEY): never
     * Pulumi config, never in the state (issue 19). Every engine run here gets them
     * (the bench's runEngine too: a Deployment is its Project).
     */
    readonly engineEnv: Record<string, string> = {};

    /** The server's API key for the deploy runs (the stack's service.requireApiKey: true). */
    giveApiKey(key: string): void {
        this.engineEnv.SGLANG_SERVE_API_KEY = key;
    }

    /** The gateway's admin key for the deploy runs (the stack's sglang-serve:gateway). */
    giveGatewayAdminKey(key: string): void {
        this.engineEnv.SGLANG_SERVE_GATEWAY_ADMIN_KEY = key;
    }

    /** `pulumi config set --secret KEY` with the value on stdin (never on a command line). */
    async setSecret(key: string, value: string): Promise<void> {
        const r = await this.run(["config", "set", "--secret", key], { input: value });
        if (r.code !== 0) throw new Error(`config set --secret ${key} failed: ${r.output}`);
    }

    /** The environment under which scripts/pulumi.sh (and the npm scripts over it) act on this deployment. */
    env(): NodeJS.ProcessEnv {
        return {
            ...process.env,
            SGLANG_SERVE_PROJECT_DIR: this.dir,
            SGLANG_SERVE_STATE_DIR: path.join(this.dir, ".state"),
            SGLANG_SERVE_ENGINE: this.engine,
            PULUMI_CONFIG_PASSPHRASE: "sglang-serve e2e test passphrase",
            PULUMI_CONFIG_PASSPHRASE_FILE: "",
            PULUMI_BACKEND_URL: "",
            PULUMI_HOME: "",
            ...this.engineEnv,
        };
    }

    run(args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<EngineResult> {
        return runProcess(path.join(repo, "scripts", "pulumi.sh"), [...args, "--stack", this.stack, "--non-interactive"], {
            env: { ...this.env(), ...opts.env },
            input: opts.input,
        });
    }

    /**
     * `pulumi <args>` as a user runs it: the engine's bin directory (the CLI,
     * its language host and the official dynamic-provider launcher) first on
     * PATH, in the project directory, no wrapper script and nothing built
     * beforehand. Backend, passphrase and stack as the user set them up.
     */
    async plainPulumi(args: string[]): Promise<EngineResult> {
        const bin = (await runProcess(path.join(repo, "scripts", "engine.sh"), [this.engine], { env: process.env })).stdout.trim();
        const state = path.join(this.dir, ".state");
        fs.mkdirSync(path.join(state, "backend"), { recursive: true });
        const env: NodeJS.ProcessEnv = {
            ...process.env,
            PATH: `${bin}:${process.env.PATH ?? ""}`,
            PULUMI_BACKEND_URL: `file://${path.join(state, "backend")}`,
            PULUMI_HOME: path.join(state, "home"),
            PULUMI_CONFIG_PASSPHRASE: "sglang-serve e2e test passphrase",
            PULUMI_SKIP_UPDATE_CHECK: "true",
            ...this.engineEnv,
        };
        return runProcess("pulumi", [...args, "--stack", this.stack, "--non-interactive"], { env, cwd: this.dir });
    }

    /** `npm run -s <script> -- <args>` from the repository, acting on this deployment (what the workflows call). */
    npmScript(script: string, args: string[]): Promise<EngineResult> {
        return runProcess("npm", ["run", "-s", script, "--", ...args], { env: this.env(), cwd: repo });
    }

    async up(): Promise<EngineResult> {
        return this.run(["up", "--yes", "--skip-preview", "--diff"]);
    }

    /**
     * `pulumi up` in the background, in a process group of its own as a
     * terminal runs it, to interrupt it (Ctrl-C is SIGINT to the group) or to
     * race another command against it.
     */
    startUp(): RunningEngine {
        const child = spawn(path.join(repo, "scripts", "pulumi.sh"), ["up", "--yes", "--skip-preview", "--stack", this.stack, "--non-interactive"], {
            env: this.env(),
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
        });
        return new RunningEngine(child);
    }

    async preview(...extra: string[]): Promise<EngineResult> {
        return this.run(["preview", "--diff", ...extra]);
    }

    /** The SglangService in the state (`pulumi stack export`): its URN and what the last `up` recorded of the server; undefined when there is none. */
    async serviceInState(): Promise<{ urn: string; outputs?: Record<string, unknown> } | undefined> {
        const r = await this.run(["stack", "export"]);
        if (r.code !== 0) throw new Error(`stack export failed: ${r.output}`);
        const state = JSON.parse(r.stdout) as { deployment: { resources?: Array<{ urn: string; type: string; outputs?: Record<string, unknown> }> } };
        return state.deployment.resources?.find((x) => x.type === SERVICE_STATE_TYPE);
    }

    async outputs(): Promise<Record<string, unknown>> {
        const r = await this.run(["stack", "output", "--json"]);
        if (r.code !== 0) throw new Error(`stack output failed: ${r.output}`);
        return JSON.parse(r.stdout) as Record<string, unknown>;
    }

    cleanup(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** An engine command running in the background (Deployment.startUp). */
export class RunningEngine {
    private out = "";
    private stdoutText = "";
    private stderrText = "";
    private readonly waiters: Array<{ re: RegExp; resolve: () => void }> = [];
    readonly done: Promise<EngineResult>;

    constructor(private readonly child: ChildProcess) {
        const take = (d: Buffer, stream: "stdout" | "stderr") => {
            this.out += d;
            if (stream === "stdout") this.stdoutText += d;
            else this.stderrText += d;
            for (const w of [...this.waiters]) {
                if (w.re.test(this.out)) {
                    this.waiters.splice(this.waiters.indexOf(w), 1);
                    w.resolve();
                }
            }
        };
        child.stdout!.on("data", (d: Buffer) => take(d, "stdout"));
        child.stderr!.on("data", (d: Buffer) => take(d, "stderr"));
        this.done = new Promise((resolve, reject) => {
            child.on("error", reject);
            child.on("close", (code) => resolve({ code: code ?? -1, stdout: this.stdoutText, stderr: this.stderrText, output: this.out }));
        });
    }

    /** Resolves once the output so far matches `re`; rejects when the command ends or `timeoutMs` passes first. */
    waitFor(re: RegExp, timeoutMs = 300_000): Promise<void> {
        if (re.test(this.out)) return Promise.resolve();
        return new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no ${re} within ${timeoutMs} ms:\n${this.out.slice(-4000)}`)), timeoutMs);
            this.waiters.push({
                re,
                resolve: () => {
                    clearTimeout(timer);
                    resolve();
                },
            });
            void this.done.then((r) => {
                clearTimeout(timer);
                if (!re.test(r.output)) reject(new Error(`the command ended (exit ${r.code}) without ${re}:\n${r.output.slice(-4000)}`));
            });
        });
    }

    /** A signal to the whole process group (as a terminal's Ctrl-C sends SIGINT). */
    signalGroup(signal: NodeJS.Signals): void {
        process.kill(-this.child.pid!, signal);
    }
}

function runProcess(command: string, args: string[], opts: { env: NodeJS.ProcessEnv; input?: string; cwd?: string }): Promise<EngineResult> {
    return new Promise((resolve, reject) => {
        const child = spawn(command, args, {
            env: opts.env,
            cwd: opts.cwd,
            stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        });
        if (opts.input !== undefined) child.stdin!.end(opts.input);
        let stdout = "";
        let stderr = "";
        let output = "";
        child.stdout!.on("data", (d: Buffer) => {
            stdout += d;
            output += d;
        });
        child.stderr!.on("data", (d: Buffer) => {
            stderr += d;
            output += d;
        });
        child.on("error", reject);
        child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr, output }));
    });
}

/** Fails with the engine's output when the exit code is not the expected one. */
export function expectExit(result: EngineResult, code: number, what: string): void {
    if (result.code !== code) {
        throw new Error(`${what}: expected exit ${code}, got ${result.code}\n${result.output.slice(-6000)}`);
    }
}
