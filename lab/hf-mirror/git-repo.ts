// Writes a lab repository (lab-repos.ts) as the git repository a Hub mirror
// serves: a working clone whose LFS files are committed as git-lfs pointers,
// their content in .git/lfs/objects/<2>/<2>/<oid> (where git-lfs keeps it
// and olah reads it), one commit per LabCommit with its fixed date, the tags.
// git-lfs itself is not needed: the pointer and the object store are its
// documented formats. Commits are made with no user or system git config.
import { spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { isLfsPath, LabRepo, lfsPointer } from "./lab-repos";

const IDENTITY = { name: "sglang-serve lab", email: "lab@sglang-serve.invalid" };

function git(dir: string, args: string[], env: Record<string, string> = {}): string {
    const r = spawnSync("git", args, {
        cwd: dir,
        encoding: "utf8",
        env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            HOME: dir,
            GIT_CONFIG_NOSYSTEM: "1",
            GIT_CONFIG_GLOBAL: "/dev/null",
            GIT_TERMINAL_PROMPT: "0",
            GIT_AUTHOR_NAME: IDENTITY.name,
            GIT_AUTHOR_EMAIL: IDENTITY.email,
            GIT_COMMITTER_NAME: IDENTITY.name,
            GIT_COMMITTER_EMAIL: IDENTITY.email,
            ...env,
        },
    });
    if (r.status !== 0) throw new Error(`lab: git ${args.join(" ")} in ${dir} failed (${r.error?.message ?? `exit ${r.status}`}): ${r.stderr}`);
    return r.stdout.trim();
}

/** Where git-lfs keeps the object with this sha256 in a clone at `dir`. */
export function lfsObjectPath(dir: string, oid: string): string {
    return path.join(dir, ".git", "lfs", "objects", oid.slice(0, 2), oid.slice(2, 4), oid);
}

/** Writes `repo` into `dir` (replacing what is there); returns its commit ids, oldest first. */
export function writeGitRepo(dir: string, repo: LabRepo): string[] {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    git(dir, ["init", "--quiet", "--initial-branch=main"]);
    const commits: string[] = [];
    for (const c of repo.commits) {
        for (const [file, bytes] of Object.entries(c.files)) {
            const target = path.join(dir, file);
            fs.mkdirSync(path.dirname(target), { recursive: true });
            if (isLfsPath(file)) {
                const object = lfsObjectPath(dir, createHash("sha256").update(bytes).digest("hex"));
                fs.mkdirSync(path.dirname(object), { recursive: true });
                fs.writeFileSync(object, bytes);
                fs.writeFileSync(target, lfsPointer(bytes));
            } else fs.writeFileSync(target, bytes);
        }
        git(dir, ["add", "--all"]);
        git(dir, ["commit", "--quiet", "--no-verify", "--message", c.message], { GIT_AUTHOR_DATE: c.date, GIT_COMMITTER_DATE: c.date });
        if (c.tag) git(dir, ["tag", c.tag]);
        commits.push(git(dir, ["rev-parse", "HEAD"]));
    }
    return commits;
}

/** The git LFS object behind `file` at `revision` in the clone at `dir` (from its committed pointer). */
export function lfsObjectOf(dir: string, revision: string, file: string): { oid: string; size: number; path: string } {
    const pointer = git(dir, ["cat-file", "blob", `${revision}:${file}`]);
    const m = /^oid sha256:([0-9a-f]{64})\nsize (\d+)$/m.exec(pointer.split("\n").slice(1).join("\n"));
    if (!m) throw new Error(`lab: ${file} at ${revision} in ${dir} is not a git LFS pointer`);
    return { oid: m[1]!, size: Number(m[2]), path: lfsObjectPath(dir, m[1]!) };
}
