/**
 * The SglangService's declared sources of weights (issue 33): staged and
 * verified on the box before the rollout stops anything (the stack's
 * huggingface_hub venv first, when missing), and what the state records of
 * them (per role, the revision and the manifest's digest). The staging itself
 * is remote/weights-staging.ts; this file only runs it for the props.
 */
import { formatBytes } from "../../core/weights/disk";
import { manifestDriftLines, pinnedWeightsDigest, VERIFY_WEIGHTS_VARIABLE } from "../../core/weights/manifest";
import { parseWeightsBoxRead, previewWeights, previewWithoutBox, weightsBoxReadArgv, type WeightsBoxFacts } from "../../core/weights/preview";
import type { WeightsPlan } from "../../core/weights/staging";
import type { HubFile } from "../../core/weights/hub-files";
import { sourceKey } from "../../core/weights/weights-layout";
import { readRevisionFiles, resolveUnpinned } from "../../remote/weights-revision";
import { isCommitId, revisionKind } from "../../core/weights/hf-source";
import { type RevisionQuery, revisionQueryKey, unpinnedRevisionMessage } from "../../core/weights/revision-pins";
import { checkStagedWeights, pruneCandidates, pruneWeights } from "../../remote/weights-staging";
import type { ProviderRun } from "../provider-run";
import { deploySecretsIfGiven } from "../deploy-secrets";
import { declaredSecrets } from "./secrets";
import { STAGED_MARKER } from "../../core/venv/venv-layout";
import { parseEnvironmentFile } from "../../core/unit/systemd-unit";
import type { RemoteHost } from "../../remote/remote-host";
import { stageVenv } from "../../remote/venv-staging";
import { stageWeights } from "../../remote/weights-staging";
import { say } from "../say";
import type { ServiceOutputs, ServiceProps, StagedWeightsRecord } from "./props";

/** The deploy secret huggingface_hub reads (service.secretEnvironment), never config, state, unit or argv. */
export const HF_TOKEN_ENV = "HF_TOKEN";

/** What staging the declared sources gave: the state's records, the drafter's pinned digest, and whether anything was fetched. */
export interface StagedSources {
    records: StagedWeightsRecord[];
    /** pinnedWeightsDigest of the drafter's manifest: the served-config key's drafter (replacing the folder's names, sizes and times). */
    drafterDigest?: string;
    /** Whether a folder was written (its box facts, read before, are stale). */
    fetched: boolean;
}

/**
 * HF_TOKEN's value in the deploy's secret environment: the props carry it at
 * deploy; a preview takes it from the deploy run's environment when given
 * (a pull request's preview has none: public repositories only).
 */
export function hubTokenOf(props: ServiceProps): string | undefined {
    if (props.environmentFile === undefined) return deploySecretsIfGiven(declaredSecrets(props))?.environment[HF_TOKEN_ENV] || undefined;
    try {
        return parseEnvironmentFile(props.environmentFile)[HF_TOKEN_ENV] || undefined;
    } catch {
        return undefined;
    }
}

/**
 * Stages every declared source (model first, then the drafter) while the
 * running server serves: nothing when a revision is staged already (its
 * manifest agrees with the folder). Throws naming the file and both hashes
 * on a mismatch (WeightsStagingFailed), or why else it failed (StagingFailed:
 * the hub venv); nothing was stopped either way.
 */
export async function stageDeclaredSources(remote: RemoteHost, props: ServiceProps): Promise<StagedSources> {
    const plans = props.weights ?? [];
    if (plans.length === 0 || props.hubVenv === undefined) return { records: [], fetched: false };
    // The check refuses it first (unpinnedSources); never staged under a name that moves.
    const unpinned = plans.find((p) => !isCommitId(p.revision));
    if (unpinned) throw new Error(`${sourceKey(unpinned.role)}.revision is "${unpinned.revision}", not a full commit id: nothing was staged`);
    const owner = props.owner ?? props.unitName;
    const hub = props.hubVenv;
    let fetched = false;
    const marked = await remote.run(["test", "-e", `${hub.dir}/${STAGED_MARKER}`]);
    if (marked.code !== 0) await stageVenv(remote, hub, props.unitName, owner, { say });
    const records: StagedWeightsRecord[] = [];
    let drafterDigest: string | undefined;
    for (const plan of plans) {
        const staged = await stageWeights(remote, plan, { unitName: props.unitName, owner, python: hub.python, token: hubTokenOf(props), say });
        fetched ||= staged.fetched;
        records.push({ role: plan.role, hf: plan.hf, revision: plan.revision, manifestDigest: staged.manifest.digest });
        if (plan.role === "drafter") drafterDigest = pinnedWeightsDigest(staged.manifest);
    }
    return { records, fetched, ...(drafterDigest !== undefined ? { drafterDigest } : {}) };
}

/** A commit's files as the Hub lists them, read from the machine running pulumi once per engine run (the preview's count, the box facts' weights size). */
export function hubFilesOf(run: ProviderRun, plan: WeightsPlan, token: string | undefined): Promise<HubFile[]> {
    return run.reads.once(
        ["hub-files", plan.endpoint, plan.hf, plan.revision].join("\0"),
        async () => (await readRevisionFiles(plan.endpoint, plan.hf, plan.revision, { token })).files,
    );
}

/** A preview's refusal of a declared source, under its key. */
export interface SourceFailure {
    property: string;
    reason: string;
}

/**
 * The declared sources whose revision is not a full commit id, refused under
 * the revision's key with the commit it names now as the line to pin
 * (core/weights/revision-pins.ts): asked of the Hub (or the source's
 * mirror) from the machine running pulumi, with HF_TOKEN from the deploy's
 * secrets when the run gives it. A Hub that cannot be reached still refuses
 * the revision, saying why it could not be resolved. The program's load
 * leaves these to the check (components/stack-config.ts), which can wait for
 * the answer.
 */
export async function unpinnedSources(news: ServiceProps): Promise<SourceFailure[]> {
    const queries: RevisionQuery[] = (news.weights ?? [])
        .filter((p) => !isCommitId(p.revision))
        .map((p) => ({ key: `${sourceKey(p.role)}.revision`, hf: p.hf, revision: p.revision, endpoint: p.endpoint }));
    if (queries.length === 0) return [];
    // An upper-case commit needs no answer: its lower-case spelling is the line to pin.
    const resolved = await resolveUnpinned(
        queries.filter((q) => revisionKind(q.revision) !== "upper-case commit"),
        { token: hubTokenOf(news) },
    );
    return queries.map((q) => ({ property: q.key, reason: unpinnedRevisionMessage(q, resolved.get(revisionQueryKey(q))) }));
}

/**
 * What the preview says of each declared source before anything is
 * downloaded (issue 33 item 5): a revision staged already costs nothing (the
 * box read alone); else the files and bytes `up` fetches (the Hub's list,
 * read from the machine running pulumi, less what the folder holds) and the
 * disk left after, or the refusal with the arithmetic when it does not fit.
 * Sources under one models root share its free disk: the second is judged
 * with what the first leaves. A box that cannot be read (a first deploy's
 * container not there yet, a read-only key) leaves the disk unknown: the
 * files and bytes are said from the Hub's list alone. `serving`: folders the
 * running server loads, never counted as prunable.
 */
export async function previewSources(run: ProviderRun, news: ServiceProps, serving: readonly string[] = []): Promise<SourceFailure[]> {
    const plans = news.weights ?? [];
    if (plans.length === 0) return [];
    const remote = run.remoteFor(news.connection, "server");
    const owner = news.owner ?? news.unitName;
    const failures: SourceFailure[] = [];
    // What earlier sources of this preview take from each models root's free disk.
    const taken = new Map<string, number>();
    for (const plan of plans) {
        // Refused by unpinnedSources: there is nothing pinned to count.
        if (!isCommitId(plan.revision)) continue;
        const property = sourceKey(plan.role);
        const tag = `[${news.unitName}]`;
        let box: WeightsBoxFacts | undefined;
        let unread: string | undefined;
        try {
            const r = await remote.run(weightsBoxReadArgv(plan));
            if (r.code !== 0) throw new Error(`exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 200)}`);
            box = parseWeightsBoxRead(r.stdout);
        } catch (e) {
            // Not a refusal: a first deploy's box may not be there yet, and a read-only key whose line does not pin this folder
            // may not read it; `up` checks the disk again before it fetches.
            unread = `the box's read of ${plan.dir} failed (${(e as Error).message})`;
        }
        // A revision staged already costs nothing: no request to the Hub.
        const staged = box ? previewWeights(plan, [], box) : undefined;
        if (staged?.kind === "staged") {
            say(`${tag} ${staged.line}`);
            continue;
        }
        let hubFiles;
        try {
            hubFiles = await hubFilesOf(run, plan, hubTokenOf(news));
        } catch (e) {
            if (!box) {
                // Nothing known of the box either (a pull request's preview: the read-only key, no token): said, not refused; `up` asks both again.
                say(
                    `${tag} what up fetches for the ${plan.role} ${plan.hf}@${plan.revision.slice(0, 12)} is not known here: ${unread}, and its files cannot be read from ${plan.endpoint} (from the machine running pulumi): ${(e as Error).message}`,
                );
                continue;
            }
            failures.push({
                property,
                reason: `${property}: the files of ${plan.hf}@${plan.revision} cannot be read from ${plan.endpoint} (from the machine running pulumi): ${(e as Error).message}`,
            });
            continue;
        }
        if (!box) {
            say(`${tag} ${previewWithoutBox(plan, hubFiles, unread ?? "the box was not read")}`);
            continue;
        }
        const shared = { ...box, freeBytes: box.freeBytes - (taken.get(plan.root) ?? 0) };
        let seen = previewWeights(plan, hubFiles, shared);
        if (seen.kind === "short") seen = previewWeights(plan, hubFiles, shared, await prunableNow(remote, plan, owner, serving));
        switch (seen.kind) {
            case "staged":
                say(`${tag} ${seen.line}`);
                break;
            case "fetch":
                taken.set(plan.root, (taken.get(plan.root) ?? 0) + seen.plan.fetchBytes);
                say(`${tag} ${seen.line}`);
                break;
            case "short": {
                const before = taken.get(plan.root) ?? 0;
                const shares = before > 0 ? ` (free after the ${formatBytes(before)} that the other declared source fetches there first)` : "";
                failures.push({ property, reason: `${property}: ${seen.message}${shares}` });
                break;
            }
            default: {
                const never: never = seen;
                throw new Error(`unhandled weights preview ${JSON.stringify(never)}`);
            }
        }
    }
    return failures;
}

/** What the prune would free under a plan's root now, for the refusal; nothing when it cannot be listed (a read-only key). */
async function prunableNow(remote: RemoteHost, plan: WeightsPlan, owner: string, serving: readonly string[]): Promise<Array<{ dir: string; bytes: number }>> {
    try {
        const { remove } = await pruneCandidates(remote, { root: plan.root, owner, serving: [...serving, plan.dir], keepPrevious: plan.keepPrevious });
        return remove.map((c) => ({ dir: c.dir, bytes: c.bytes }));
    } catch {
        return [];
    }
}

/** Whether this run re-hashes staged files (`npm run drift -- --verify` sets VERIFY_WEIGHTS_VARIABLE for its refresh). */
export function verifiesWeights(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
    return env[VERIFY_WEIGHTS_VARIABLE] === "1";
}

/**
 * The staged revisions the record names, against their manifests on the box:
 * one line per difference naming the file (a changed, missing or added file,
 * a folder or manifest gone, another manifest than recorded); empty when
 * every one matches. `rehash`: every file's sha256 again, else sizes and mtimes.
 */
export async function stagedWeightsDrift(remote: RemoteHost, recorded: Pick<ServiceOutputs, "weights" | "stagedWeights">, rehash: boolean): Promise<string[]> {
    const lines: string[] = [];
    for (const record of recorded.stagedWeights ?? []) {
        const plan = (recorded.weights ?? []).find((p) => p.role === record.role && p.revision === record.revision);
        if (!plan) continue;
        try {
            const now = await checkStagedWeights(remote, plan.dir, { rehash });
            if (now.kind === "absent") {
                lines.push(`${plan.dir}: the staged ${record.role} revision is gone (${now.why})`);
                continue;
            }
            if (now.manifest.digest !== record.manifestDigest) {
                lines.push(`${plan.dir}: its manifest's digest is ${now.manifest.digest}, the state records ${record.manifestDigest}`);
            }
            lines.push(...manifestDriftLines(plan.dir, now.drift));
        } catch (e) {
            lines.push(`${plan.dir}: its manifest cannot be checked (${(e as Error).message})`);
        }
    }
    return lines;
}

/**
 * After a good rollout: under each models root of the declared sources,
 * removes the revisions this stack staged that nothing serves or names (a
 * unit, its .previous) beyond service.weights.keepPrevious, saying each;
 * never a folder the stack did not stage. A prune that fails is said, not
 * fatal: the rollout succeeded.
 */
export async function pruneDeclaredSources(remote: RemoteHost, props: ServiceProps): Promise<string[]> {
    const plans = props.weights ?? [];
    const owner = props.owner ?? props.unitName;
    const serving = plans.map((p) => p.dir);
    const removed: string[] = [];
    for (const root of [...new Set(plans.map((p) => p.root))]) {
        const keepPrevious = Math.max(...plans.filter((p) => p.root === root).map((p) => p.keepPrevious));
        try {
            removed.push(...(await pruneWeights(remote, { root, owner, serving, keepPrevious, unitName: props.unitName, say })));
        } catch (e) {
            say(`[${props.unitName}] the staged weights under ${root} were not pruned: ${(e as Error).message}`);
        }
    }
    return removed;
}

/**
 * The drafter's key in the serving-quality record when it comes from a
 * source and its revision is staged already (its manifest's
 * pinnedWeightsDigest, as the rollout keys it): so the preview says what a
 * return to it is held to. Undefined without a drafter source, or when its
 * folder is not staged or cannot be read here.
 */
export async function stagedDrafterDigest(run: ProviderRun, props: ServiceProps): Promise<string | undefined> {
    const plan = (props.weights ?? []).find((p) => p.role === "drafter");
    if (!plan) return undefined;
    try {
        const staged = await checkStagedWeights(run.remoteFor(props.connection, "server"), plan.dir, { rehash: false });
        return staged.kind === "staged" && staged.drift.length === 0 ? pinnedWeightsDigest(staged.manifest) : undefined;
    } catch {
        return undefined;
    }
}
