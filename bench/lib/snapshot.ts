import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Deployment, PROJECT_DIRS, PROJECT_FILES } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";

const repo = path.resolve(__dirname, "..", "..");

/** What an engine run uses from the work tree: the project (as a deployment has it), the wrapper scripts, the engine's and Node.js's build inputs (scripts/engine.sh, scripts/node.sh). */
const FILES = [...PROJECT_FILES, ".pulumi-version"];
const DIRS = [...PROJECT_DIRS, "scripts", "tools/engine", "tools/node"];
/** The measuring program (the floor): always from the work tree, whatever is measured. */
const BENCH_DIRS = ["bench/floor"];

/**
 * A copy of the parts of the work tree an engine run uses, taken when the
 * bench starts: every figure of one run measures the same code even while the
 * tree is edited (the e2e Deployment links components/, core/, ... to the
 * live tree). node_modules is linked, not copied.
 */
export class Snapshot {
    private constructor(readonly dir: string) {}

    /**
     * The work tree as it is now, or with `ref` the project as committed at
     * that git revision (e.g. HEAD, to measure without uncommitted edits, or
     * an older commit to compare against).
     */
    static take(ref?: string): Snapshot {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-tree-"));
        const copy = (p: string) =>
            fs.cpSync(path.join(repo, p), path.join(dir, p), { recursive: true, filter: (src) => !/[\\/](\.build|node_modules)$/.test(src) });
        if (ref) {
            const inRef = [...FILES, ...DIRS].filter((p) => spawnSync("git", ["cat-file", "-e", `${ref}:${p}`], { cwd: repo }).status === 0);
            const archive = spawnSync("git", ["archive", "--format=tar", ref, "--", ...inRef], { cwd: repo, maxBuffer: 256 * 1024 * 1024 });
            if (archive.status !== 0) throw new Error(`git archive ${ref}: ${archive.stderr.toString()}`);
            const untar = spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
            if (untar.status !== 0) throw new Error(`tar: ${untar.stderr.toString()}`);
        } else {
            for (const p of [...FILES, ...DIRS]) if (fs.existsSync(path.join(repo, p))) copy(p);
        }
        for (const p of BENCH_DIRS) copy(p);
        fs.symlinkSync(path.join(repo, "node_modules"), path.join(dir, "node_modules"));
        return new Snapshot(dir);
    }

    /** scripts/pulumi.sh of the snapshot. */
    get pulumiSh(): string {
        return path.join(this.dir, "scripts", "pulumi.sh");
    }

    /**
     * lab/deployment.ts's Deployment, pointed at the snapshot: its
     * project files copied and its directories linked from the snapshot
     * instead of the live tree.
     */
    async deployment(stack: string, config: StackConfigFile | Record<string, unknown>): Promise<Deployment> {
        const d = await Deployment.create(stack, config as Record<string, unknown>);
        for (const f of FILES) {
            const src = path.join(this.dir, f);
            if (fs.existsSync(src)) fs.copyFileSync(src, path.join(d.dir, f));
        }
        for (const name of fs.readdirSync(d.dir)) {
            const p = path.join(d.dir, name);
            if (name === "node_modules" || !fs.lstatSync(p).isSymbolicLink()) continue;
            fs.unlinkSync(p);
            fs.symlinkSync(path.join(this.dir, name), p);
        }
        return d;
    }

    remove(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}
