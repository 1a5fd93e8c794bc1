/**
 * Where the stack's weights are on the box: one folder per repository under
 * the models root (service.weights.root, default /models), one folder per
 * revision in it, `<root>/<org>--<name>/<revision>`; in each revision folder
 * the stack's own bookkeeping (`.sglang-serve-weights/`: the marker written
 * when the staging begins, the manifest written last) beside
 * huggingface_hub's (`.cache/huggingface/`, its local_dir records), and
 * mismatched files moved to `<root>/<org>--<name>/.quarantine/<revision>/`.
 * Pure: the box side is weights/sglang-serve-weights.py, which writes the
 * same names.
 */
import { repoFolderName } from "./hf-source";

/** The models root when service.weights.root is not set: where the field's weights already are. */
export const DEFAULT_MODELS_ROOT = "/models";

/** The stack's folder inside a revision folder. Its marker means the stack staged the folder; only such folders are ever removed. */
export const OURS_DIR = ".sglang-serve-weights";
/** Written when the staging begins: `{repo, revision, stagedBy, startedAt}`. */
export const MARKER_FILE = "staged-by.json";
/** Written last, once every file matched the Hub's hashes: its presence means the revision is staged. */
export const MANIFEST_FILE = "manifest.json";
/** huggingface_hub's local_dir bookkeeping (`.cache/huggingface/`), not a file of the revision. */
export const HUB_METADATA_DIR = ".cache";
/** Beside the revision folders: files that did not match, by revision. */
export const QUARANTINE_DIR = ".quarantine";

/** A declared source, as far as its folder goes. */
export interface SourceFolderInput {
    hf: string;
    revision: string;
}

/** `<root>/<org>--<name>`: every revision of one repository. */
export function repoFolder(root: string, hf: string): string {
    return `${root.replace(/\/+$/, "")}/${repoFolderName(hf)}`;
}

/** `<root>/<org>--<name>/<revision>`: the folder the unit serves for a declared source. */
export function revisionFolder(root: string, source: SourceFolderInput): string {
    return `${repoFolder(root, source.hf)}/${source.revision}`;
}

export function markerPath(dir: string): string {
    return `${dir}/${OURS_DIR}/${MARKER_FILE}`;
}

export function manifestPath(dir: string): string {
    return `${dir}/${OURS_DIR}/${MANIFEST_FILE}`;
}

/** Where a revision's mismatched files go. */
export function quarantineFolder(root: string, source: SourceFolderInput): string {
    return `${repoFolder(root, source.hf)}/${QUARANTINE_DIR}/${source.revision}`;
}

/** Which set of weights of a server: the served model or the speculative drafter. */
export type WeightsRole = "model" | "drafter";

/** The config key that declares a role's source. */
export function sourceKey(role: WeightsRole): string {
    return role === "model" ? "service.model.source" : "service.speculative.draftModelSource";
}

/** The transient unit that stages one role's weights for a server unit (`sglang-qwen.service` -> `sglang-qwen-weights-drafter.service`). */
export function weightsUnitName(unitName: string, role: WeightsRole): string {
    return `${unitName.replace(/\.service$/, "")}-weights-${role}.service`;
}

/** Where the staging's progress, log, result and exit status are on the box (a tmpfs: nothing there outlives a reboot). */
export function weightsStateDir(unitName: string, role: WeightsRole): string {
    return `/run/sglang-serve/${unitName.replace(/\.service$/, "")}-weights-${role}`;
}

/** The 0600 file the token reaches the staging in (HF_TOKEN=...), written through stdin, removed when the staging ends. */
export function weightsTokenFile(unitName: string, role: WeightsRole): string {
    return `${weightsStateDir(unitName, role)}.env`;
}

/** Where the box-side program is kept, by the digest of its text, so a changed program is a new file and a running one is never rewritten. */
export function weightsProgramPath(programDigest: string): string {
    return `/var/lib/sglang-serve/weights/sglang-serve-weights-${programDigest.slice(0, 16)}.py`;
}
