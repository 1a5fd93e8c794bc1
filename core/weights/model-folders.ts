/**
 * The folder a server serves, for the model and for the drafter: the one
 * declared (`path`, a folder managed by hand), or the revision folder of the
 * declared source (`<root>/<org>--<name>/<revision>`, staged by the stack).
 * Exactly one of the two: the schema (core/config/schema.ts) reports the
 * shape problems below, then fills `path` from `source`, so everything that
 * reads service.model.path (the unit, the argv, the box facts, the verdict)
 * reads the folder the server will serve either way. No schema import: the
 * schema imports this file.
 */
import { DEFAULT_MODELS_ROOT, revisionFolder, SourceFolderInput } from "./weights-layout";

/** What the shape check reads of a service (as zod parsed it, before the folders are filled). */
export interface FolderFields {
    model: { path?: string; source?: SourceFolderInput };
    speculative?: { draftModelPath?: string; draftModelSource?: SourceFolderInput; draftModelDigest?: string };
    weights?: { root: string };
}

export interface ShapeProblem {
    /** Under the service: `["model", "path"]`. */
    path: Array<string | number>;
    /** Continues after the key, as zod's messages do ("is required: ..."). */
    message: string;
}

/** The models root of a service: service.weights.root, or DEFAULT_MODELS_ROOT. */
export function modelsRoot(service: Pick<FolderFields, "weights">): string {
    return (service.weights?.root ?? DEFAULT_MODELS_ROOT).replace(/\/+$/, "") || "/";
}

/** Where a model and a drafter come from: each a folder by hand or a pinned source, exactly one; a source pins a drafter by itself. */
export function folderShapeProblems(service: FolderFields): ShapeProblem[] {
    const out: ShapeProblem[] = [];
    const root = modelsRoot(service);
    const { model, speculative } = service;
    if (model.path !== undefined && model.source !== undefined) {
        out.push({
            path: ["model", "path"],
            message:
                `is set, and so is model.source: keep one. With source the stack stages the pinned revision in ${revisionFolder(root, model.source)} ` +
                "before the stop and serves it (remove path); with path it serves a folder managed by hand (remove source)",
        });
    } else if (model.path === undefined && model.source === undefined) {
        out.push({
            path: ["model", "path"],
            message:
                "is required: add it (the model's folder on the box), or model.source instead " +
                '({hf: "org/name", revision: "<40-hex commit>"}: the stack downloads, verifies and serves that revision)',
        });
    }
    if (speculative?.draftModelPath !== undefined && speculative.draftModelSource !== undefined) {
        out.push({
            path: ["speculative", "draftModelPath"],
            message:
                `is set, and so is speculative.draftModelSource: keep one. With draftModelSource the stack stages the pinned drafter in ` +
                `${revisionFolder(root, speculative.draftModelSource)} (remove draftModelPath); with draftModelPath it loads a folder managed by hand`,
        });
    }
    if (speculative?.draftModelSource !== undefined && speculative.draftModelDigest !== undefined) {
        out.push({
            path: ["speculative", "draftModelDigest"],
            message:
                "is set with speculative.draftModelSource, which pins the drafter itself (its commit, and the manifest of the files verified against the Hub's hashes): " +
                "remove draftModelDigest",
        });
    }
    return out;
}

/** The folder the server serves for a model or drafter that passed folderShapeProblems: `path`, else the source's revision folder. */
export function servedFolder(declared: { path?: string; source?: SourceFolderInput }, root: string): string {
    if (declared.path !== undefined) return declared.path;
    if (declared.source === undefined) throw new Error("neither a path nor a source: folderShapeProblems reports it before the folders are filled");
    return revisionFolder(root, declared.source);
}
