// The lab's Hugging Face mirror, driven from the lab machine: install it
// (install.sh, from the pinned PINS), write the lab's repositories into a
// mirror directory, start it on a loopback address (serve.ts: olah behind
// the front), stop it. HF_ENDPOINT=<endpoint> points huggingface_hub at it.
// See lab/README.md, "The Hugging Face mirror".
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { cacheRoot } from "../../sglang-release/oracle";
import { writeGitRepo } from "./git-repo";
import { labRepos } from "./lab-repos";
import { MirrorDir, mirrorDir, modelRepoDir } from "./mirror-dir";

const here = __dirname;
const repo = path.resolve(here, "..", "..");

/** install.sh's venvs: olah's and the huggingface_hub client's. */
export function hfMirrorVenvs(): { olah: string; client: string } {
    const root = path.join(cacheRoot(), "hf-mirror");
    return { olah: path.join(root, "olah"), client: path.join(root, "client") };
}

/** Runs install.sh (a few hundred ms when current; about 30 s from PyPI when cold). */
export function ensureHfMirrorInstalled(): void {
    const r = spawnSync(path.join(here, "install.sh"), [], { encoding: "utf8", stdio: ["ignore", "inherit", "pipe"], timeout: 600_000 });
    if (r.status !== 0) throw new Error(`lab/hf-mirror/install.sh failed (${r.signal ?? `exit ${r.status}`}): ${r.stderr}`);
}

/** Writes the lab's repositories (lab-repos.ts) into the mirror directory; their commit ids, oldest first, by repository. */
export function writeMirrorRepos(dir: string): Record<string, string[]> {
    const d = mirrorDir(dir);
    return Object.fromEntries(labRepos().map((r) => [r.id, writeGitRepo(modelRepoDir(d, r.id), r)]));
}

export interface MirrorOptions {
    /** The mirror directory (mirror-dir.ts), with the repositories written. */
    dir: string;
    /** A loopback address of the mirror's own. */
    address: string;
    /** The front's port (HF_ENDPOINT's). */
    port: number;
    /** olah's port on the same address. */
    olahPort: number;
}

export interface RunningMirror {
    /** HF_ENDPOINT for it: http://address:port */
    endpoint: string;
    paths: MirrorDir;
    pid: number;
    /** Settles when the mirror's process ends (a fault, a stop). */
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
    /** Ends the mirror (SIGTERM: it takes olah with it) and waits for it. */
    stop(): Promise<void>;
}

/** Starts the mirror; resolves once its front listens (olah may still be starting: the front holds requests until it answers). */
export function startMirror(o: MirrorOptions): Promise<RunningMirror> {
    const paths = mirrorDir(o.dir);
    const child: ChildProcess = spawn(
        process.execPath,
        [
            "--require",
            path.join(repo, "ts-hook.cjs"),
            path.join(here, "serve.ts"),
            "--dir",
            o.dir,
            "--address",
            o.address,
            "--port",
            String(o.port),
            "--olah-port",
            String(o.olahPort),
            "--olah-venv",
            hfMirrorVenvs().olah,
        ],
        // Its stdin is this process's lifeline: the mirror ends when it closes.
        { stdio: ["pipe", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" } },
    );
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    return new Promise((resolve, reject) => {
        let out = "";
        child.stdout!.on("data", (c: Buffer) => {
            out += c.toString();
            if (!out.includes("listening ")) return;
            resolve({
                endpoint: `http://${o.address}:${o.port}`,
                paths,
                pid: child.pid!,
                exited,
                stop: async () => {
                    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
                    await exited;
                },
            });
        });
        void exited.then(({ code, signal }) => reject(new Error(`lab: the HF mirror ended before it listened (${signal ?? `exit ${code}`}): ${stderr}`)));
    });
}

/** The access log's entries (front.ts), oldest first. */
export function accessLog(d: MirrorDir): Array<{ method: string; url: string; range: string | null; status: number; bytes: number | null; died?: boolean }> {
    if (!fs.existsSync(d.accessLog)) return [];
    return fs
        .readFileSync(d.accessLog, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { method: string; url: string; range: string | null; status: number; bytes: number | null; died?: boolean });
}
