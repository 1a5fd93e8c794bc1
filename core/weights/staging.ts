/**
 * What the rollout needs to stage a server's declared sources of weights on
 * the box while the running server serves (issue 33 item 2), as a release's
 * venv is staged (core/venv/venv-layout.ts): the plan per source, the
 * transient unit that runs the box-side program (weights/sglang-serve-weights.py,
 * with the interpreter of the stack's small huggingface_hub venv, hub-venv.ts), the poll
 * of its progress, log, exit status and result, and their parsing. Pure: run
 * by remote/weights-staging.ts.
 */
import type { ServiceConfig } from "../config/schema";
import { isRecord } from "../is-record";
import { hubEndpoint } from "./hf-source";
import type { Mismatch } from "./hub-files";
import { modelsRoot } from "./model-folders";
import { parseProgress, ProgressSnapshot } from "./progress";
import { revisionFolder, weightsStateDir, weightsTokenFile, weightsUnitName, WeightsRole } from "./weights-layout";

/** One declared source to stage: where from, where to, with what budget. */
export interface WeightsPlan {
    role: WeightsRole;
    hf: string;
    revision: string;
    allowPatterns?: string[];
    ignorePatterns?: string[];
    /** Without a trailing slash. */
    endpoint: string;
    /** The revision folder. */
    dir: string;
    root: string;
    keepPrevious: number;
    downloadTimeoutSeconds: number;
}

/** The plans of a service's declared sources (model first), none when it declares folders by hand. */
export function weightsPlansOf(service: Pick<ServiceConfig, "model" | "speculative" | "weights">): WeightsPlan[] {
    const root = modelsRoot(service);
    const sources: Array<[WeightsRole, NonNullable<ServiceConfig["model"]["source"]>]> = [];
    if (service.model.source) sources.push(["model", service.model.source]);
    if (service.speculative?.draftModelSource) sources.push(["drafter", service.speculative.draftModelSource]);
    return sources.map(([role, s]) => ({
        role,
        hf: s.hf,
        revision: s.revision,
        ...(s.allowPatterns ? { allowPatterns: s.allowPatterns } : {}),
        ...(s.ignorePatterns ? { ignorePatterns: s.ignorePatterns } : {}),
        endpoint: hubEndpoint(s),
        dir: revisionFolder(root, s),
        root,
        keepPrevious: service.weights?.keepPrevious ?? 1,
        downloadTimeoutSeconds: service.weights?.downloadTimeoutSeconds ?? 86400,
    }));
}

/** How the messages name a plan: `drafter sglang-lab/Tiny-Qwen3-DFlash@0123abc`. */
export function describePlan(plan: Pick<WeightsPlan, "role" | "hf" | "revision">): string {
    return `${plan.role} ${plan.hf}@${plan.revision.slice(0, 12)}`;
}

/** Exit statuses of the box-side program. */
export const WEIGHTS_EXIT = { ok: 0, failed: 1, unpinned: 64, notOurs: 65, mismatch: 66, disk: 67 } as const;

/**
 * The command that starts the staging: the state folder emptied (so a poll
 * never reads an earlier run's exit status), then systemd-run with the
 * program. Its environment is systemd's, plus what huggingface_hub is told
 * here: its home in the state folder (no token or cache of the box's is
 * read), no telemetry, no progress bars (the program reports progress). The
 * token reaches the program in `tokenFile` (0600, HF_TOKEN=...), never in
 * argv or the unit's environment.
 */
export function stageWeightsArgv(plan: WeightsPlan, o: { unitName: string; owner: string; python: string; programPath: string; tokenFile?: string }): string[] {
    const state = weightsStateDir(o.unitName, plan.role);
    return [
        "sh",
        "-c",
        'rm -rf -- "$1" && mkdir -p -m 0700 -- "$1" && printf "%s\\n" "$2" > "$1/target" && shift 2 && exec "$@"',
        "sh",
        state,
        plan.dir,
        "systemd-run",
        `--unit=${weightsUnitName(o.unitName, plan.role)}`,
        "--collect",
        "--quiet",
        `--property=RuntimeMaxSec=${plan.downloadTimeoutSeconds}`,
        `--setenv=HF_HOME=${state}/hf-home`,
        "--setenv=HF_HUB_DISABLE_TELEMETRY=1",
        "--setenv=HF_HUB_DISABLE_PROGRESS_BARS=1",
        o.python,
        "-I",
        o.programPath,
        "stage",
        "--repo",
        plan.hf,
        "--revision",
        plan.revision,
        "--dir",
        plan.dir,
        "--state",
        state,
        "--owner",
        o.owner,
        "--endpoint",
        plan.endpoint,
        ...(plan.allowPatterns ?? []).flatMap((p) => ["--allow", p]),
        ...(plan.ignorePatterns ?? []).flatMap((p) => ["--ignore", p]),
        ...(o.tokenFile ? ["--env-file", o.tokenFile] : []),
    ];
}

/** The token file's path for a plan, and its text. */
export function tokenFileOf(plan: Pick<WeightsPlan, "role">, unitName: string): string {
    return weightsTokenFile(unitName, plan.role);
}

export function tokenFileText(token: string): string {
    return `HF_TOKEN=${token}\n`;
}

const SEP = "---sglang-serve-weights---";

/**
 * `sh -c WEIGHTS_POLL_SCRIPT sh <state folder> <unit>`: the progress
 * snapshot, the log, the exit status, the result, the folder the staging
 * stages (written before it starts), the unit's state, between separators. The unit's state is read first: the program writes its exit
 * status before its unit ends (as STAGE_POLL_SCRIPT, core/venv/venv-layout.ts).
 */
export const WEIGHTS_POLL_SCRIPT = `state=$(systemctl is-active "$2" 2>/dev/null || true)
for f in progress.json log exit result.json target; do cat "$1/$f" 2>/dev/null; echo; echo ${SEP}; done
echo "$state"
`;

export function weightsPollArgv(plan: Pick<WeightsPlan, "role">, unitName: string): string[] {
    return ["sh", "-c", WEIGHTS_POLL_SCRIPT, "sh", weightsStateDir(unitName, plan.role), weightsUnitName(unitName, plan.role)];
}

/** What the program reports when it ends (result.json). */
export interface WeightsResult {
    exitStatus: number;
    staged?: boolean;
    /** The folder had its manifest already: nothing was fetched. */
    already?: boolean;
    /** The manifest's digest. */
    digest?: string;
    mismatches?: Mismatch[];
    quarantined?: Array<{ path: string; to: string }>;
    extras?: string[];
    needBytes?: number;
    freeBytes?: number;
    error?: string;
    message?: string;
}

export interface WeightsPoll {
    progress?: ProgressSnapshot;
    lines: string[];
    exitStatus?: number;
    result?: WeightsResult;
    /** The folder the staging in the state folder stages. */
    target?: string;
    unitState: string;
}

export function parseWeightsPoll(stdout: string): WeightsPoll {
    const parts = stdout.split(`\n${SEP}\n`);
    const [progress = "", log = "", exit = "", result = "", target = "", state = ""] = parts;
    let parsed: WeightsResult | undefined;
    try {
        const r: unknown = JSON.parse(result);
        if (isRecord(r) && typeof r.exitStatus === "number") parsed = r as unknown as WeightsResult;
    } catch {
        parsed = undefined;
    }
    const p = parseProgress(progress.trim());
    return {
        ...(p ? { progress: p } : {}),
        lines: log
            .replace(/\n+$/, "")
            .split("\n")
            .filter((l) => l.length > 0),
        ...(/^\d+$/.test(exit.trim()) ? { exitStatus: Number(exit.trim()) } : {}),
        ...(parsed ? { result: parsed } : {}),
        ...(target.trim() ? { target: target.trim() } : {}),
        unitState: state.trim(),
    };
}
