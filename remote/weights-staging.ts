/**
 * Stages a declared source of weights on the box while the running server
 * serves (core/weights/staging.ts), as remote/venv-staging.ts stages a
 * release's venv: the box-side program (weights/sglang-serve-weights.py)
 * runs in a transient systemd unit, so a dropped SSH session does not end
 * it (a later run finds it running and polls it instead of starting
 * another), and its progress is polled into lines (files, bytes, rate, ETA;
 * one at least every 15 s). It downloads with huggingface_hub, verifies
 * every file against the Hub's hashes and writes the manifest last; a
 * mismatch fails naming the file and both hashes, with the file quarantined.
 * Nothing here stops anything. Also: the manifest checks of a staged folder
 * (cheap: sizes and mtimes; full: every sha256) and the prune.
 */
import * as fs from "fs";
import * as path from "path";
import { sha256 } from "../core/digest";
import { mismatchLines } from "../core/weights/hub-files";
import {
    compareWithManifest,
    Manifest,
    manifestCheckArgv,
    ManifestDrift,
    manifestDriftLines,
    parseManifest,
    parseManifestCheck,
} from "../core/weights/manifest";
import { diskVerdict, formatBytes, Prunable } from "../core/weights/disk";
import { INITIAL_PROGRESS, progressStep } from "../core/weights/progress";
import { parsePruneList, pruneListArgv, pruneRemoveArgv, selectPrune } from "../core/weights/prune";
import {
    describePlan,
    parseWeightsPoll,
    stageWeightsArgv,
    tokenFileOf,
    tokenFileText,
    WEIGHTS_EXIT,
    weightsPollArgv,
    WeightsPlan,
    WeightsPoll,
    WeightsResult,
} from "../core/weights/staging";
import { weightsProgramPath, weightsUnitName } from "../core/weights/weights-layout";
import { transientUnitRuns } from "../core/unit/transient-unit";
import { writeFileScript } from "../core/write-file-script";
import type { RemoteRunner } from "./remote-host";

/** The box-side program's text, as the repository holds it. */
export function weightsProgramText(): string {
    return fs.readFileSync(path.join(__dirname, "..", "weights", "sglang-serve-weights.py"), "utf8");
}

export interface WeightsStageOptions {
    /** The server's unit (names the transient unit and the state folder). */
    unitName: string;
    /** Who stages (the stack), written into the marker: only this owner's folders are ever pruned. */
    owner: string;
    /** The interpreter of the stack's huggingface_hub venv on the box. */
    python: string;
    /** HF_TOKEN's value (from the deploy's secrets); reaches the box in a 0600 file through stdin. */
    token?: string;
    say: (message: string) => void;
    /** What the prune would free, for the refusal when the disk is short (the caller lists it: pruneCandidates). */
    prunable?: readonly Prunable[];
    /** Seams for tests. Defaults: weightsProgramText(), setTimeout, Date.now, 1 s between polls, a line at least every 15 s. */
    programText?: string;
    sleep?: (ms: number) => Promise<void>;
    now?: () => number;
    pollIntervalMs?: number;
    everyMs?: number;
}

export class WeightsStagingFailed extends Error {
    constructor(
        message: string,
        readonly result?: WeightsResult,
    ) {
        super(message);
    }
}

/** What a staging gave: the manifest (its digest is what the state records), and whether anything was fetched. */
export interface StagedWeights {
    manifest: Manifest;
    fetched: boolean;
    seconds: number;
}

/**
 * Stages plan.dir: nothing when its manifest is there and the folder agrees
 * with it (sizes and mtimes); else the program in its transient unit (or the
 * one already running for this server and role), polled to its end. Throws
 * WeightsStagingFailed; nothing was stopped either way.
 */
export async function stageWeights(remote: RemoteRunner, plan: WeightsPlan, o: WeightsStageOptions): Promise<StagedWeights> {
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const now = o.now ?? Date.now;
    const started = now();
    const tag = `[${o.unitName}]`;
    const what = describePlan(plan);
    const unit = weightsUnitName(o.unitName, plan.role);
    const fail = (why: string, lines: readonly string[] = [], result?: WeightsResult): never => {
        const tail = lines
            .slice(-15)
            .map((l) => `    ${l}`)
            .join("\n");
        throw new WeightsStagingFailed(
            `${tag} staging the ${what} in ${plan.dir} failed: ${why}. Nothing was stopped: the running server serves on.${tail ? `\n${tail}` : ""}`,
            result,
        );
    };

    const staged = await checkStagedWeights(remote, plan.dir, { rehash: false });
    if (staged.kind === "staged") {
        if (staged.drift.length > 0) {
            fail(
                `the folder has a manifest, but its files changed since they were verified; the stack does not stage over it (move it away, and the next up stages it again)`,
                manifestDriftLines(plan.dir, staged.drift),
            );
        }
        o.say(`${tag} the ${what} is staged already in ${plan.dir} (manifest ${staged.manifest.digest.slice(0, 16)}): nothing to fetch`);
        return { manifest: staged.manifest, fetched: false, seconds: 0 };
    }

    const attach = await followOrClear(remote, plan, o.unitName, (m) => o.say(`${tag} ${m}`), fail);
    const tokenFile = o.token ? tokenFileOf(plan, o.unitName) : undefined;
    try {
        if (attach) {
            o.say(`${tag} a staging of the ${what} is running already (${unit}, left by an earlier run): following it`);
        } else {
            const text = o.programText ?? weightsProgramText();
            const programPath = weightsProgramPath(sha256(text));
            const wrote = await remote.run(["sh", "-c", `mkdir -p "$(dirname "$0")" || exit 1; ${writeFileScript(programPath, 0o644)}`, programPath], {
                stdin: text,
            });
            if (wrote.code !== 0) fail(`writing the staging program to ${programPath} failed (exit ${wrote.code}): ${wrote.stderr.trim().slice(0, 200)}`);
            if (tokenFile) {
                const t = await remote.run(["sh", "-c", `mkdir -p "$(dirname "$0")" || exit 1; ${writeFileScript(tokenFile, 0o600)}`, tokenFile], {
                    stdin: tokenFileText(o.token!),
                });
                if (t.code !== 0) fail(`writing the token file failed (exit ${t.code})`);
            }
            o.say(`${tag} staging the ${what} in ${plan.dir} from ${plan.endpoint} while the running server serves`);
            // Not retried on a dropped connection: a second systemd-run of the same unit is refused while the first runs.
            const start = await remote.run(stageWeightsArgv(plan, { unitName: o.unitName, owner: o.owner, python: o.python, programPath, tokenFile }), {
                retry: false,
            });
            if (start.code !== 0) {
                fail(
                    `systemd-run exited ${start.code} (${(start.stderr || start.stdout).trim().slice(0, 300)}); an earlier staging may still run: systemctl status ${unit}`,
                );
            }
        }
        let shown = 0;
        let progress = INITIAL_PROGRESS;
        for (;;) {
            await sleep(o.pollIntervalMs ?? 1000);
            const poll = await lookAtStaging(remote, plan, o.unitName);
            for (const line of poll.lines.slice(shown)) if (!line.startsWith("    ")) o.say(`${tag} ${plan.role}: ${line.replace(/^sglang-serve: /, "")}`);
            shown = Math.max(shown, poll.lines.length);
            if (poll.progress) {
                const step = progressStep(progress, poll.progress, now(), { everyMs: o.everyMs });
                progress = step.state;
                if (step.line && poll.exitStatus === undefined) o.say(`${tag} ${what}: ${step.line}`);
            } else if (now() - (progress.lastLineAt ?? started) >= (o.everyMs ?? 15_000)) {
                o.say(`${tag} ${what}: starting (${Math.round((now() - started) / 1000)} s)`);
                progress = { ...progress, lastLineAt: now() };
            }
            if (poll.exitStatus !== undefined) {
                const result = poll.result ?? { exitStatus: poll.exitStatus };
                if (poll.exitStatus === WEIGHTS_EXIT.ok) break;
                failed(plan, poll.exitStatus, result, poll.lines, o.prunable ?? [], fail);
            }
            if (!transientUnitRuns(poll.unitState)) {
                fail(
                    `the staging ended without an exit status after ${Math.round((now() - started) / 1000)} s (unit ${unit} is ${poll.unitState || "gone"}; ` +
                        `service.weights.downloadTimeoutSeconds is ${plan.downloadTimeoutSeconds}); the next up resumes it (complete files are kept)`,
                    poll.lines,
                );
            }
        }
    } finally {
        // Also when this run followed one it did not start: the token file an earlier run wrote is removed once its staging ends.
        if (tokenFile || attach) await remote.run(["rm", "-f", "--", tokenFileOf(plan, o.unitName)]).catch(() => undefined);
    }
    const done = await checkStagedWeights(remote, plan.dir, { rehash: false });
    if (done.kind !== "staged") return fail(`the staging ended well but ${plan.dir} has no manifest (${done.kind === "absent" ? done.why : "?"})`);
    const seconds = Math.round((now() - started) / 1000);
    const bytes = done.manifest.files.reduce((s, f) => s + f.size, 0);
    o.say(
        `${tag} staged the ${what} in ${plan.dir} in ${seconds} s: ${done.manifest.files.length} files, ${formatBytes(bytes)}, ` +
            `each verified against the Hub's hashes; manifest ${done.manifest.digest.slice(0, 16)}`,
    );
    return { manifest: done.manifest, fetched: true, seconds };
}

/**
 * Whether a staging left running for this server and role is the one to
 * follow: only one that stages plan.dir and has not written its exit status.
 * Any other (another revision, declared before this run; or one that wrote
 * its exit status and is ending) is stopped, so that its state folder is not
 * read as this staging's: complete files are kept either way.
 */
async function followOrClear(
    remote: RemoteRunner,
    plan: WeightsPlan,
    unitName: string,
    say: (m: string) => void,
    fail: (why: string) => never,
): Promise<boolean> {
    const unit = weightsUnitName(unitName, plan.role);
    const look = await lookAtStaging(remote, plan, unitName);
    if (!transientUnitRuns(look.unitState)) return false;
    if (look.target === plan.dir && look.exitStatus === undefined) return true;
    if (look.exitStatus === undefined)
        say(`a staging of ${look.target ?? "another folder"} is running (${unit}), not of ${plan.dir}: stopping it (its complete files are kept)`);
    const stopped = await remote.run(["systemctl", "stop", unit]);
    // A staging that wrote its exit status may end, and its transient unit be unloaded, between the look and the stop
    // (systemctl then exits 5, "not loaded"): gone is what the stop was for.
    if (stopped.code !== 0 && transientUnitRuns((await lookAtStaging(remote, plan, unitName)).unitState)) {
        fail(`systemctl stop ${unit} exited ${stopped.code} (${stopped.stderr.trim().slice(0, 200)})`);
    }
    return false;
}

/** The staging unit of this server and role as the box shows it now: its state, the program's progress, log and exit status. */
async function lookAtStaging(remote: RemoteRunner, plan: WeightsPlan, unitName: string): Promise<WeightsPoll> {
    return parseWeightsPoll((await remote.run(weightsPollArgv(plan, unitName))).stdout);
}

/** The refusal for each exit status of the program. */
function failed(
    plan: WeightsPlan,
    exit: number,
    result: WeightsResult,
    lines: readonly string[],
    prunable: readonly Prunable[],
    fail: (why: string, lines?: readonly string[], result?: WeightsResult) => never,
): never {
    switch (exit) {
        case WEIGHTS_EXIT.mismatch: {
            const moved = (result.quarantined ?? []).map((q) => `quarantined ${q.path} to ${q.to}`);
            return fail(
                `${(result.mismatches ?? []).length} file(s) do not match the Hub's hashes; no manifest was written`,
                [...mismatchLines(result.mismatches ?? []), ...moved],
                result,
            );
        }
        case WEIGHTS_EXIT.disk: {
            const verdict = diskVerdict({
                what: describePlan(plan),
                root: plan.root,
                needBytes: result.needBytes ?? 0,
                freeBytes: result.freeBytes ?? 0,
                prunable,
            });
            return fail(verdict.ok ? "the box said the disk was short" : verdict.message, [], result);
        }
        case WEIGHTS_EXIT.notOurs:
            return fail(`${plan.dir} exists and the stack did not stage it (no marker): move it away, or serve it as service.model.path`, lines, result);
        case WEIGHTS_EXIT.unpinned:
            return fail(`the revision is not a full commit id`, lines, result);
        default:
            return fail(`the staging exited ${exit} (${result.error ?? "?"}); the next up resumes it (complete files are kept)`, lines, result);
    }
}

export type StagedCheck = { kind: "staged"; manifest: Manifest; drift: ManifestDrift[] } | { kind: "absent"; why: string };

/**
 * A staged folder against its manifest: cheap (sizes and mtimes; what every
 * refresh runs) or with rehash (every file's sha256 again; `npm run drift --
 * --verify`). `absent` when the folder or its manifest is not there.
 */
export async function checkStagedWeights(remote: RemoteRunner, dir: string, o: { rehash: boolean; timeoutMs?: number }): Promise<StagedCheck> {
    const r = await remote.run(manifestCheckArgv(dir, o.rehash), o.timeoutMs ? { timeoutMs: o.timeoutMs } : {});
    if (r.code === 3) return { kind: "absent", why: r.stderr.trim().replace(/^sglang-serve: /, "") };
    if (r.code !== 0) throw new Error(`${remote.describe()}: the manifest check of ${dir} exited ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
    const { manifestText, files } = parseManifestCheck(r.stdout, o.rehash);
    const manifest = parseManifest(manifestText);
    return { kind: "staged", manifest, drift: compareWithManifest(manifest, files) };
}

/** The folders the prune would remove now, with their sizes (for the disk refusal, and the prune itself). */
export async function pruneCandidates(
    remote: RemoteRunner,
    o: { root: string; owner: string; serving: readonly string[]; keepPrevious: number },
): Promise<ReturnType<typeof selectPrune>> {
    const r = await remote.run(pruneListArgv(o.root));
    return selectPrune({ folders: parsePruneList(r.stdout), serving: o.serving, owner: o.owner, keepPrevious: o.keepPrevious });
}

/** After a good rollout: removes this owner's revisions beyond keepPrevious that nothing serves or names, saying each. */
export async function pruneWeights(
    remote: RemoteRunner,
    o: { root: string; owner: string; serving: readonly string[]; keepPrevious: number; unitName: string; say: (message: string) => void },
): Promise<string[]> {
    const { remove } = await pruneCandidates(remote, o);
    if (remove.length === 0) return [];
    const r = await remote.run(
        pruneRemoveArgv(
            o.owner,
            remove.map((c) => c.dir),
        ),
    );
    const removed = r.stdout.split("\n").filter((l) => l.length > 0);
    for (const c of remove.filter((c) => removed.includes(c.dir)))
        o.say(`[${o.unitName}] removed the staged weights ${c.dir} (${formatBytes(c.bytes)}): ${c.why}`);
    if (r.code !== 0) o.say(`[${o.unitName}] staged weights under ${o.root} were left (the prune exited ${r.code}: ${r.stderr.trim().slice(0, 200)})`);
    return removed;
}
