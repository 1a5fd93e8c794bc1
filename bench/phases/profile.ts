import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { execFileSync } from "child_process";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { expectCode, Project, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { buildProfile, Profile } from "../lib/profile";
import type { Snapshot } from "../lib/snapshot";
import { nowMs } from "../lib/stats";

const repo = path.resolve(__dirname, "..", "..");

export async function phaseProfile(report: Report, tree: Snapshot, d: Deployment, floor: Project, info: LabInfo): Promise<void> {
    log("profile: one no-op preview --refresh of the stack and of the floor, node processes hooked, event log and sshd log followed");
    const profiles: Record<string, Profile> = {};
    for (const [name, project] of [
        ["stack", d],
        ["floor", floor],
    ] as const) {
        const hookLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-prof-")), "hook.jsonl");
        fs.writeFileSync(hookLog, "");
        const hookEnv = {
            SGLANG_BENCH_PROFILE_LOG: hookLog,
            NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${path.join(repo, "bench", "profile-hook.js")}`.trim(),
        };
        const r = expectCode(
            await runEngine(project, ["preview", "--refresh", "--expect-no-changes"], {
                eventLog: true,
                tail: [hookLog, info.host.sshdLog],
                env: hookEnv,
            }),
            0,
            `profiled preview --refresh (${name})`,
        );
        profiles[name] = buildProfile(r, hookLog, info.host.sshdLog);
        fs.rmSync(path.dirname(hookLog), { recursive: true, force: true });
    }
    // The wrapper alone: scripts/pulumi.sh runs `pulumi stack ls --json` before every command with --stack.
    const ls: number[] = [];
    for (let i = 0; i < 3; i++) {
        const t = nowMs();
        execFileSync(tree.pulumiSh, ["stack", "ls", "--json"], {
            env: {
                ...process.env,
                SGLANG_SERVE_PROJECT_DIR: d.dir,
                SGLANG_SERVE_STATE_DIR: path.join(d.dir, ".state"),
                PULUMI_CONFIG_PASSPHRASE: "x",
                PULUMI_CONFIG_PASSPHRASE_FILE: "",
                PULUMI_BACKEND_URL: "",
                PULUMI_HOME: "",
            },
            stdio: "ignore",
        });
        ls.push((nowMs() - t) / 1000);
    }
    report.figure("profile.stackLs", "scripts/pulumi.sh stack ls --json (the wrapper's per-command stack check)", "s", ls);
    report.extra.profile = profiles;
}
