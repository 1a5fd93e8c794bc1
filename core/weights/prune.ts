/**
 * Which staged revisions go after a good rollout (issue 33 item 6): of the
 * folders under the models root that carry the stack's marker naming this
 * stack, keep every serving revision, every revision a unit or its
 * `.previous` copy names (any server's, on the box), and per repository the
 * `keepPrevious` newest staged ones; remove the rest, saying each. A folder
 * without the marker (copied by hand, another tool's) or with another
 * stack's is never touched. The listing and the removal run on the box
 * (PRUNE_LIST_SCRIPT, PRUNE_REMOVE_SCRIPT); the choice is here. Pure.
 */
import { ENVIRONMENT_DIRECTORY, UNIT_DIRECTORY } from "../unit/unit-paths";
import { isRecord } from "../is-record";
import { MANIFEST_FILE, MARKER_FILE, OURS_DIR, QUARANTINE_DIR } from "./weights-layout";

/** A revision folder with the stack's marker, as the listing found it. */
export interface StagedFolder {
    /** `<root>/<org>--<name>/<revision>`. */
    dir: string;
    /** `<org>--<name>`. */
    repoFolder: string;
    revision: string;
    /** The marker's stagedBy (the stack that staged it). */
    stagedBy: string;
    /** When the staging began (the marker's), seconds. */
    startedAt: number;
    /** Its manifest is there: staged and verified. */
    staged: boolean;
    /** A unit file (or its .previous, or an env file) on the box names it. */
    named: boolean;
    /** Its size on disk (du). */
    bytes: number;
}

export interface PruneChoice {
    dir: string;
    bytes: number;
    why: string;
}

export interface PruneSelection {
    remove: PruneChoice[];
    keep: PruneChoice[];
}

/**
 * The choice: for this owner's folders, keep the serving ones, the named
 * ones and per repository the `keepPrevious` most recently staged of the
 * rest (a folder whose staging never finished does not count, and goes);
 * remove the others. Others' folders are left, with the reason.
 */
export function selectPrune(o: { folders: readonly StagedFolder[]; serving: readonly string[]; owner: string; keepPrevious: number }): PruneSelection {
    const serving = new Set(o.serving.map((d) => d.replace(/\/+$/, "")));
    const remove: PruneChoice[] = [];
    const keep: PruneChoice[] = [];
    const kept = new Map<string, number>();
    const newestFirst = [...o.folders].sort((a, b) => b.startedAt - a.startedAt || (a.dir < b.dir ? -1 : 1));
    for (const f of newestFirst) {
        const choice = (why: string) => ({ dir: f.dir, bytes: f.bytes, why });
        if (f.stagedBy !== o.owner) keep.push(choice(`staged by ${f.stagedBy}, not by this stack`));
        else if (serving.has(f.dir)) keep.push(choice("serving"));
        else if (f.named) keep.push(choice("a unit on the box (or its .previous) names it"));
        else if (!f.staged) remove.push(choice("its staging never finished (no manifest)"));
        else if ((kept.get(f.repoFolder) ?? 0) < o.keepPrevious) {
            kept.set(f.repoFolder, (kept.get(f.repoFolder) ?? 0) + 1);
            keep.push(choice(`one of the ${o.keepPrevious} newest previous revisions (service.weights.keepPrevious)`));
        } else remove.push(choice(`older than the ${o.keepPrevious} kept (service.weights.keepPrevious: ${o.keepPrevious})`));
    }
    return { remove, keep };
}

/**
 * `sh -c PRUNE_LIST_SCRIPT sh <root>`: one tab-separated line per folder
 * `<root>/<repo>/<revision>` with the stack's marker: the folder, 1 when its
 * manifest is there, 1 when a file of the unit or environment directories
 * names it, its size in bytes (du), and the marker's JSON.
 */
export const PRUNE_LIST_SCRIPT = `root=$1
for marker in "$root"/*/*/${OURS_DIR}/${MARKER_FILE}; do
  [ -f "$marker" ] || continue
  dir=\${marker%/${OURS_DIR}/${MARKER_FILE}}
  staged=0; [ -f "$dir/${OURS_DIR}/${MANIFEST_FILE}" ] && staged=1
  named=0; grep -rqsF -- "$dir" ${UNIT_DIRECTORY} ${ENVIRONMENT_DIRECTORY} && named=1
  bytes=$(du -sb -- "$dir" 2>/dev/null | cut -f1)
  printf '%s\\t%s\\t%s\\t%s\\t%s\\n' "$dir" "$staged" "$named" "\${bytes:-0}" "$(tr -d '\\n\\t' < "$marker")"
done
`;

export function pruneListArgv(root: string): string[] {
    return ["sh", "-c", PRUNE_LIST_SCRIPT, "sh", root.replace(/\/+$/, "") || "/"];
}

/** The listing's lines as folders; a line that does not parse (a marker written by hand) is left out, so its folder is never removed. */
export function parsePruneList(stdout: string): StagedFolder[] {
    const out: StagedFolder[] = [];
    for (const line of stdout.split("\n")) {
        const [dir, staged, named, bytes, marker] = line.split("\t");
        if (!dir || marker === undefined) continue;
        let m: unknown;
        try {
            m = JSON.parse(marker);
        } catch {
            continue;
        }
        if (!isRecord(m) || typeof m.stagedBy !== "string" || typeof m.revision !== "string") continue;
        const parts = dir.split("/");
        out.push({
            dir,
            repoFolder: parts[parts.length - 2] ?? "",
            revision: m.revision,
            stagedBy: m.stagedBy,
            startedAt: typeof m.startedAt === "number" ? m.startedAt : 0,
            staged: staged === "1",
            named: named === "1",
            bytes: Number(bytes) || 0,
        });
    }
    return out;
}

/**
 * `sh -c PRUNE_REMOVE_SCRIPT sh <owner> <dir>...`: removes each folder whose
 * marker still names the owner and that no unit names now (checked again
 * just before), and the quarantine of its revision; prints each folder
 * removed.
 */
export const PRUNE_REMOVE_SCRIPT = `owner=$1
shift
for dir in "$@"; do
  grep -qF "\\"stagedBy\\": \\"$owner\\"" "$dir/${OURS_DIR}/${MARKER_FILE}" 2>/dev/null || continue
  grep -rqsF -- "$dir" ${UNIT_DIRECTORY} ${ENVIRONMENT_DIRECTORY} && continue
  rm -rf -- "$dir" "$(dirname "$dir")/${QUARANTINE_DIR}/$(basename "$dir")"
  echo "$dir"
done
`;

export function pruneRemoveArgv(owner: string, dirs: readonly string[]): string[] {
    return ["sh", "-c", PRUNE_REMOVE_SCRIPT, "sh", owner, ...dirs];
}
