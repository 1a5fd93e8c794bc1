/**
 * Stages the declared release's venv on the box while the running server
 * serves (core/venv/venv-layout.ts): pip runs in a transient systemd unit, so a
 * dropped SSH session does not end it, and its log is polled for progress
 * lines. Then the installed release is checked (its package metadata and its
 * own parser with the rendered flags) and marked staged. A failure removes
 * the half-made venv and throws; nothing was stopped. After a successful
 * rollout, pruneVenvs removes the old venvs beyond venv.keepPrevious.
 */
import {
    DISCARD_STAGING_SCRIPT,
    describeSource,
    markStagedArgv,
    parseStagePoll,
    pruneArgv,
    installCheckArgv,
    productOf,
    STAGE_NOT_OURS_EXIT,
    STAGE_POLL_SCRIPT,
    stageArgv,
    stageLogPath,
    stageUnitName,
    VenvPlan,
} from "../core/venv/venv-layout";
import { transientUnitRuns } from "../core/unit/transient-unit";
import type { RemoteRunner } from "./remote-host";

export interface StageOptions {
    say: (message: string) => void;
    /** Seams for tests. Defaults: setTimeout, Date.now, 1 s between polls, a line every 15 s while pip is quiet. */
    sleep?: (ms: number) => Promise<void>;
    now?: () => number;
    pollIntervalMs?: number;
    quietProgressMs?: number;
}

export class StagingFailed extends Error {}

/** Installs plan.dir, checks it, marks it staged by `owner`; returns the seconds it took. Throws StagingFailed. */
export async function stageVenv(remote: RemoteRunner, plan: VenvPlan, unitName: string, owner: string, o: StageOptions): Promise<number> {
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const now = o.now ?? Date.now;
    const started = now();
    const tag = `[${unitName}]`;
    const { name } = productOf(plan);
    const fail = async (what: string, lines: string[], discard: boolean): Promise<never> => {
        if (discard) await remote.run(["sh", "-c", DISCARD_STAGING_SCRIPT, "sh", plan.dir]);
        const tail = lines
            .slice(-15)
            .map((l) => `    ${l}`)
            .join("\n");
        throw new StagingFailed(
            `${tag} staging ${name} ${plan.release} in ${plan.dir} failed: ${what}. Nothing was stopped: the running ${plan.product === "smg" ? "gateway" : "server"} serves on` +
                `${discard ? `, and the half-made venv was removed` : ""}.${tail ? `\n${tail}` : ""}`,
        );
    };
    o.say(`${tag} staging ${name} ${plan.release} in ${plan.dir} while the running server serves: ${describeSource(plan)}`);
    // Not retried on a dropped connection: a second systemd-run of the same unit would be refused while the first runs.
    const start = await remote.run(stageArgv(plan, unitName), { retry: false });
    if (start.code !== 0) {
        await fail(
            `systemd-run exited ${start.code} (${(start.stderr || start.stdout).trim().slice(0, 300)}); an earlier install may still run: systemctl status ${stageUnitName(unitName)}`,
            [],
            false,
        );
    }
    let shown = 0;
    let lastLineAt = now();
    for (;;) {
        await sleep(o.pollIntervalMs ?? 1000);
        const r = await remote.run(["sh", "-c", STAGE_POLL_SCRIPT, "sh", stageLogPath(unitName), stageUnitName(unitName)]);
        const poll = parseStagePoll(r.stdout);
        for (const line of poll.lines.slice(shown)) o.say(`${tag} pip: ${line}`);
        if (poll.lines.length > shown) lastLineAt = now();
        shown = Math.max(shown, poll.lines.length);
        const elapsed = Math.round((now() - started) / 1000);
        if (poll.exitStatus !== undefined) {
            if (poll.exitStatus === 0) break;
            await fail(`the install exited ${poll.exitStatus} after ${elapsed} s`, poll.lines, poll.exitStatus !== STAGE_NOT_OURS_EXIT);
        }
        if (!transientUnitRuns(poll.unitState)) {
            await fail(
                `the install ended without an exit status after ${elapsed} s (unit ${stageUnitName(unitName)} is ${poll.unitState || "gone"}; ` +
                    `service.venv.installTimeoutSeconds is ${plan.installTimeoutSeconds})`,
                poll.lines,
                true,
            );
        }
        if (now() - lastLineAt >= (o.quietProgressMs ?? 15_000)) {
            o.say(`${tag} staging ${name} ${plan.release}: pip still running (${elapsed} s elapsed)`);
            lastLineAt = now();
        }
    }
    // The release's own parser takes the rendered flags, and its package metadata says the declared release; no GPU is visible to it.
    const parsed = await remote.run(installCheckArgv(plan));
    // argparse's usage block is long: its `error:` line says what it refuses.
    const output = (parsed.stderr || parsed.stdout).trim().split("\n");
    const said = output.some((l) => / error: /.test(l)) ? output.filter((l) => / error: /.test(l)) : output;
    if (parsed.code !== 0) await fail(`SGLang ${plan.release}'s own parser refuses the server's flags (exit ${parsed.code})`, said, true);
    const installed = parsed.stdout.trim().split("\n").pop() ?? "";
    if (installed !== plan.release) await fail(`pip installed ${name} ${installed || "(no version)"}, not ${plan.release}`, said, true);
    const marked = await remote.run(markStagedArgv(plan, owner));
    if (marked.code !== 0) await fail(`marking it staged failed (exit ${marked.code}): ${marked.stderr.trim().slice(0, 200)}`, [], true);
    const seconds = Math.round((now() - started) / 1000);
    o.say(
        `${tag} staged ${name} ${plan.release} in ${plan.dir} in ${seconds} s${plan.product === undefined ? "; its own parser takes the server's flags" : ""}`,
    );
    return seconds;
}

/** After a successful rollout: removes this owner's venvs beyond plan.keepPrevious (never one a unit names). Says what it removed. */
export async function pruneVenvs(remote: RemoteRunner, plan: VenvPlan, unitName: string, owner: string, say: (message: string) => void): Promise<string[]> {
    const r = await remote.run(pruneArgv(plan, owner));
    const removed = r.stdout.split("\n").filter((l) => l.length > 0);
    for (const dir of removed) say(`[${unitName}] removed the old venv ${dir} (service.venv.keepPrevious: ${plan.keepPrevious})`);
    if (r.code !== 0) say(`[${unitName}] old venvs under ${plan.root} were left (the prune exited ${r.code}: ${r.stderr.trim().slice(0, 200)})`);
    return removed;
}
