/**
 * The SglangService's declared sources of weights (issue 33): staged and
 * verified on the box before the rollout stops anything (the stack's
 * huggingface_hub venv first, when missing), and what the state records of
 * them (per role, the revision and the manifest's digest). The staging itself
 * is remote/weights-staging.ts; this file only runs it for the props.
 */
import { pinnedWeightsDigest } from "../../core/weights/manifest";
import { STAGED_MARKER } from "../../core/venv/venv-layout";
import { parseEnvironmentFile } from "../../core/unit/systemd-unit";
import type { RemoteHost } from "../../remote/remote-host";
import { stageVenv } from "../../remote/venv-staging";
import { stageWeights } from "../../remote/weights-staging";
import { say } from "../say";
import type { ServiceProps, StagedWeightsRecord } from "./props";

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

/** HF_TOKEN's value in the deploy's secret environment (the props carry it at deploy), if declared. */
export function hubTokenOf(props: ServiceProps): string | undefined {
    if (props.environmentFile === undefined) return undefined;
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
