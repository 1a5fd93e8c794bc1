/**
 * The SglangService resource's props and outputs, declared once: the
 * component (components/sglang-service.ts) passes exactly these fields (each
 * an Input), the provider (providers/sglang-server/) reads them.
 */
import type { Connection } from "../../core/connection";
import type { BoxExpectations } from "../../core/box/box-facts";
import type { ReadinessConfig } from "../../core/config/schema";
import type { DeclaredSecrets } from "../../core/secrets/deploy-secrets";
import type { ServingFigures } from "../../core/serving/serving-figures";
import type { VerifiedConfig } from "../../core/serving/serving-history";
import type { GatewayMembership } from "../../core/gateway/gateway";
import type { VenvPlan } from "../../core/venv/venv-layout";
import type { BoxFactsRead } from "../../core/box/box-facts";
import type { WeightsPlan } from "../../core/weights/staging";
import type { WeightsRole } from "../../core/weights/weights-layout";

/** What the state records of a set of weights the rollout staged: its revision and the digest of its manifest (the files verified against the Hub's hashes). */
export interface StagedWeightsRecord {
    role: WeightsRole;
    hf: string;
    revision: string;
    manifestDigest: string;
}

export interface ServiceProps {
    providerVersion: string;
    connection: Connection;
    unitName: string;
    unitText: string;
    command: string[];
    flags: Record<string, string>;
    environment: Record<string, string>;
    /** The secrets the config declares (names only); absent in states written before. */
    secrets?: DeclaredSecrets;
    /**
     * The 0600 files' texts and the API key: filled from the deploy run's
     * environment when the provider writes the box (providers/sglang-server/secrets.ts
     * withDeploySecrets), never inputs and never in the state (outputsFrom
     * leaves them out; states of older versions held them).
     */
    environmentFile?: string;
    serverConfigFile?: string;
    apiKey?: string;
    endpoint: string;
    servedModelName: string;
    speculativeAlgorithm?: string;
    gpuIndices: number[];
    /** host.gpus.name: the GPUs SGLang's own verdict at preview is run for (providers/sglang-server/verdict.ts); absent in states written before. */
    gpuName?: string;
    /** The compute capability of the server's GPUs as the GpuHost read it (nvidia-smi compute_cap), for the same verdict; absent in states written before. */
    gpuCapability?: string;
    readiness: ReadinessConfig;
    /**
     * `<project>/<stack>` that manages the unit, recorded in the unit file.
     * The inputs a refresh reads back hold the owner the box records instead
     * (so the preview shows a take-over, and check refuses one not asked for).
     * Absent in states written before owners were recorded.
     */
    owner?: string;
    /** service.takeOverFrom: the stack whose unit this one may take over. */
    takeOverFrom?: string;
    /** Shown by the preview: whether and why the server restarts. Set by check. */
    restart?: string;
    /** What the declared server needs of the box (core/box/box-facts.ts). */
    expectBox?: BoxExpectations;
    /** service.venv: the declared release's venv, staged by the rollout when missing, and the old ones it prunes (core/venv/venv-layout.ts). */
    venv?: VenvPlan;
    /** The declared sources of weights, staged and verified by the rollout before the stop (core/weights/staging.ts); absent without a source. */
    weights?: WeightsPlan[];
    /** The huggingface_hub venv the staging runs in, staged by the rollout when missing (core/weights/hub-venv.ts). */
    hubVenv?: VenvPlan;
    /** The gateway the server is behind (sglang-serve:gateway): a rollout takes it out, drains it, and puts it back (providers/sglang-server/gateway-drain.ts). */
    gateway?: GatewayMembership;
    /** What the box said at the last refresh (the inputs a refresh reads back carry it to check). */
    boxFacts?: BoxFactsRead;
    /**
     * What the last rollout verified serving measured (the prompt set's accept
     * length and throughput, or /server_info's accept length without it): the
     * last good config's figures, which the next rollout's serving-quality
     * check holds the new config to. A record, not a setting:
     * the refresh reads it back with the inputs and check carries it into the
     * new inputs (so the preview can say what a restart is held to), an update
     * that changes nothing and a rollout that puts the previous config back
     * keep it, a verified rollout replaces it; absent when nothing was measured.
     */
    servingFigures?: ServingFigures;
    /**
     * The last good figures per served config (core/serving/serving-history.ts), newest
     * first, a few kept: a verified rollout that measured puts its config
     * first. A rollout of a config found here is held to its own last figures
     * (a revert), any other to servingFigures. A record like servingFigures;
     * absent in states written before it, which hold servingFigures alone.
     */
    servingHistory?: VerifiedConfig[];
    /**
     * The drafter folder's digest (core/box/box-facts.ts folderDigest) when the
     * running server was started by a rollout: what it loaded. Kept by
     * refreshes; absent without a separate drafter.
     */
    drafterDigest?: string;
    /**
     * The drafter folder's digest as the last read found it (a rollout, a
     * refresh). Another than drafterDigest: the drafter was changed in place
     * since the server loaded it, which is drift (the next `up` rolls out again).
     */
    drafterDigestOnBox?: string;
    /**
     * Set by a refresh when the running server's accept length (/server_info)
     * has fallen more than readiness.acceptLengthDropLimit below servingFigures
     * (core/serving/serving-figures.ts acceptLengthDrift): what differs, naming both
     * figures. Drift: the drift check reports it, and the next `up` rolls out
     * again through the checks, which measure a fresh server against the
     * record. Absent while the server serves as recorded.
     */
    acceptLengthDrift?: string;
}

/** The record fields check carries from the refreshed inputs into the new ones. */
export const CARRIED_RECORD = ["servingFigures", "servingHistory", "drafterDigest", "drafterDigestOnBox", "acceptLengthDrift"] as const;

/**
 * A revision whose rollout was verified serving (the readiness wait:
 * readiness, checks, healthy window) and reported it, and the engine run it
 * was verified in
 * (providers/provider-run.ts `id`). The ReadinessCheck takes it as an input:
 * in the same run it confirms the server still serves instead of waiting and
 * reporting again; in a later run it means nothing.
 */
export interface ServingVerified {
    revision: string;
    run: string;
}

export interface ServiceOutputs extends ServiceProps {
    /** Changes with every rollout; the ReadinessCheck re-runs on it. */
    revision: string;
    /** Set by the create or update whose readiness wait succeeded; absent otherwise (and in states written before it existed). */
    servingVerified?: ServingVerified;
    activeState: string;
    enabled: boolean;
    /**
     * The EnvironmentFile as the box's unit read answers it (core/unit/unit-read.ts):
     * the declared file's digest when it is that file, "differs" when another,
     * "" when there is none; secrets drift without storing them.
     */
    secretsHash: string;
    /** The running server's args from /server_info, normalized to the fields the stack owns; null when unreachable. */
    liveArgs: Record<string, unknown> | null;
    /** False when the running process does not run what the unit file says (changed, not restarted). */
    liveMatchesUnit: boolean;
    /** The owner the unit on the box records (`<project>/<stack>`), if any. */
    boxOwner?: string;
    /** The declared sources the last rollout (or up) found staged and verified: per role, its revision and manifest digest. */
    stagedWeights?: StagedWeightsRecord[];
    /**
     * Set by a refresh when a staged revision folder no longer matches its
     * manifest (sizes and mtimes; every sha256 under `npm run drift -- --verify`):
     * one line per file, naming it. Drift; the next `up` refuses to serve over it.
     */
    weightsDrift?: string[];
}
