/**
 * The small venv the stack owns for its weights' downloader: huggingface_hub
 * at the release the SGLang venvs pin (HUB_CLIENT_RELEASE), with the
 * standard library the box-side program (weights/sglang-serve-weights.py)
 * needs besides. Staged as a release's venv is (core/venv/venv-layout.ts
 * STAGE_SCRIPT: pip in a transient unit, checked by its package metadata,
 * marked), at `<venv root>/huggingface-hub-<release>`: not a `venv-*`
 * folder, so the SGLang venvs' prune never takes it. Its sources, one
 * declaration each: service.weights.pip when declared (a box without
 * service.venv, or without PyPI, says its index or wheelhouse there), else
 * service.venv's (index, wheelhouse, pipArgs, system site-packages; not its
 * pins, SGLang's heavy dependencies), else the box's pip configuration. Its
 * root is service.venv's, or /opt/sglang-serve without a venv section. Pure.
 */
import type { ServiceConfig } from "../config/schema";
import { VenvSchema } from "../config/schema";
import { releasePlan, VenvPlan, venvPython } from "../venv/venv-layout";

/** huggingface_hub's release: sglang-release/DEPS pins it for every SGLang venv (lab/hf-mirror/install.sh holds the lab's client to it). */
export const HUB_CLIENT_RELEASE = "1.33.0";

/** Where the hub venv goes when the service declares no venv section. */
export const DEFAULT_HUB_VENV_ROOT = "/opt/sglang-serve";

export function hubVenvDir(root: string): string {
    return `${root.replace(/\/+$/, "")}/huggingface-hub-${HUB_CLIENT_RELEASE}`;
}

/** The plan that stages the hub venv with remote/venv-staging.ts stageVenv. */
export function hubVenvPlan(service: Pick<ServiceConfig, "venv" | "weights">): VenvPlan {
    const declared = service.venv ?? VenvSchema.parse({ root: DEFAULT_HUB_VENV_ROOT });
    // service.weights.pip replaces the venv's sources as a whole: a merge would install from sources nobody wrote together.
    const pip = service.weights?.pip;
    const venv = pip ? { ...declared, ...pip, indexUrl: pip.indexUrl } : declared;
    const dir = hubVenvDir(venv.root);
    // service.venv's pins are SGLang's heavy dependencies (torch...): not for this venv.
    const requirements = [`huggingface-hub==${HUB_CLIENT_RELEASE}`];
    return { ...releasePlan(venv, HUB_CLIENT_RELEASE, "huggingface-hub", []), product: "huggingface-hub", dir, python: venvPython(dir), requirements };
}
