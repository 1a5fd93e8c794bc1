/**
 * What the preview says about a declared source before anything is
 * downloaded (issue 33 item 5): the files and bytes `up` will fetch (the
 * Hub's list after the patterns, less what the revision folder already
 * holds) and the free disk left after, or the refusal when it does not fit;
 * nothing for a revision already staged. The Hub's list is read from the
 * machine that runs the stack (remote/weights-revision.ts), the folder and
 * the free disk from the box (WEIGHTS_BOX_READ_SCRIPT, one command). Pure.
 */
import { diskVerdict, fetchPlan, FetchPlan, formatBytes, Prunable } from "./disk";
import { filterFiles, HubFile } from "./hub-files";
import { HUB_METADATA_DIR, MANIFEST_FILE, OURS_DIR } from "./weights-layout";
import { describePlan, WeightsPlan } from "./staging";

const SEP = "---sglang-serve-weights-read---";

/**
 * `sh -c WEIGHTS_BOX_READ_SCRIPT sh <revision folder> <models root>`: the
 * bytes free on the filesystem that will hold the folder (its nearest
 * existing parent's), whether the folder has its manifest, and the sizes of
 * the files already in it (`<size> <path>` records, NUL-terminated).
 */
export const WEIGHTS_BOX_READ_SCRIPT = `d=$1
while [ ! -d "$d" ]; do d=$(dirname "$d"); done
df -B1 --output=avail "$d" | tail -n 1
echo ${SEP}
if [ -f "$1/${OURS_DIR}/${MANIFEST_FILE}" ]; then echo staged; else echo absent; fi
echo ${SEP}
cd "$1" 2>/dev/null && find . -path ./${OURS_DIR} -prune -o -path ./${HUB_METADATA_DIR} -prune -o -type f -printf '%s %P\\0'
true
`;

export function weightsBoxReadArgv(plan: Pick<WeightsPlan, "dir" | "root">): string[] {
    return ["sh", "-c", WEIGHTS_BOX_READ_SCRIPT, "sh", plan.dir, plan.root];
}

export interface WeightsBoxFacts {
    freeBytes: number;
    staged: boolean;
    present: Array<{ path: string; size: number }>;
}

export function parseWeightsBoxRead(stdout: string): WeightsBoxFacts {
    const [free = "", staged = "", files = ""] = stdout.split(`\n${SEP}\n`);
    const freeBytes = Number(free.trim());
    if (!Number.isFinite(freeBytes) || free.trim() === "") throw new Error(`the box's free disk reads ${JSON.stringify(free.trim().slice(0, 80))}`);
    const present = files
        .replace(/^\n/, "")
        .split("\0")
        .filter((r) => r.length > 0)
        .map((r) => {
            const m = /^(\d+) (.*)$/s.exec(r);
            if (!m) throw new Error(`a file record reads ${JSON.stringify(r.slice(0, 80))}`);
            return { path: m[2]!, size: Number(m[1]) };
        });
    return { freeBytes, staged: staged.trim() === "staged", present };
}

export type WeightsPreview =
    | { kind: "staged"; line: string }
    | { kind: "fetch"; plan: FetchPlan; leftBytes: number; line: string }
    | { kind: "short"; plan: FetchPlan; message: string };

/** The preview's line for one source (or its refusal): what up fetches, and the disk left after. */
export function previewWeights(plan: WeightsPlan, hubFiles: readonly HubFile[], box: WeightsBoxFacts, prunable: readonly Prunable[] = []): WeightsPreview {
    const what = describePlan(plan);
    if (box.staged) return { kind: "staged", line: `the ${what} is staged in ${plan.dir}: up fetches nothing` };
    const fetch = fetchPlan(filterFiles(hubFiles, plan), box.present);
    const verdict = diskVerdict({ what, root: plan.root, needBytes: fetch.fetchBytes, freeBytes: box.freeBytes, prunable });
    if (!verdict.ok) return { kind: "short", plan: fetch, message: verdict.message };
    const already = fetch.presentFiles > 0 ? ` (${fetch.presentFiles} of ${fetch.files} already there)` : "";
    return {
        kind: "fetch",
        plan: fetch,
        leftBytes: verdict.leftBytes,
        line:
            `up stages the ${what} in ${plan.dir} before the stop: ${fetch.fetchFiles} files, ${formatBytes(fetch.fetchBytes)}${already}; ` +
            `${formatBytes(verdict.leftBytes)} free on ${plan.root} after`,
    };
}

/**
 * The preview's line for a source whose folder the box's read could not see
 * (a first deploy whose container is not there yet, a read-only key whose
 * line does not pin the folder): what up fetches by the Hub's list alone, the
 * disk left unknown, and why. `up` checks the disk before it fetches.
 */
export function previewWithoutBox(plan: WeightsPlan, hubFiles: readonly HubFile[], why: string): string {
    const fetch = fetchPlan(filterFiles(hubFiles, plan), []);
    return (
        `up stages the ${describePlan(plan)} in ${plan.dir} before the stop: ${fetch.fetchFiles} files, ${formatBytes(fetch.fetchBytes)} at most ` +
        `(less what the folder already holds); the disk left after is not known here: ${why}`
    );
}

/**
 * The weights' size a revision folder will hold, by the Hub's list: its
 * top-level .safetensors files after the patterns, as the box's facts read
 * a folder without an index (core/box/box-facts.ts); undefined when it has none.
 */
export function weightsBytesOf(hubFiles: readonly HubFile[], plan: Pick<WeightsPlan, "allowPatterns" | "ignorePatterns">): number | undefined {
    const weights = filterFiles(hubFiles, plan).filter((f) => !f.path.includes("/") && f.path.endsWith(".safetensors"));
    return weights.length > 0 ? weights.reduce((sum, f) => sum + f.size, 0) : undefined;
}
