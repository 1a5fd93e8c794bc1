import * as path from "path";
import { labStackConfig as labConfigFrom, LabMachines } from "./control";
import { readStackConfig } from "./stack-file";
import { CT_WHEELHOUSE, FIELD_VENV, LAB_STAGED_RELEASE, releasePins } from "./sglang/venvs";

export type { LabMachines };
export type StackConfigFile = Record<string, Record<string, unknown>>;

/** kpro5's committed settings (never its secrets): the model and server settings every lab stack uses. */
export function kpro5Config(): StackConfigFile {
    return readStackConfig(path.join(__dirname, "..", "Pulumi.kpro5.yaml"));
}

/**
 * The healthy window of the lab stacks: the lab's servers start in about 3 s, so
 * a few seconds after ready show a death soon after ready (the field keeps the
 * default 30 s; docs/rollout.md, "The healthy window and start attempts").
 */
export const LAB_MIN_HEALTHY_SECONDS = 4;

/** kpro5's config pointed at the lab (see lab/control.ts labStackConfig), with the lab's healthy window. */
export function labStackConfig(lab: LabMachines, topology: "pct-exec" | "direct"): StackConfigFile {
    const config = labConfigFrom(lab, topology, kpro5Config());
    config["sglang-serve:readiness"] = { ...config["sglang-serve:readiness"], minHealthySeconds: LAB_MIN_HEALTHY_SECONDS };
    return config;
}

/**
 * The lab box's service.venv: the stack stages releases under
 * /opt/sglang/releases and adopts the field's venv (0.5.11) as it is. What pip
 * installs is real (SGLang's wheel and its own pins, from the wheelhouse on
 * the box: --find-links, --no-index); its other dependencies (torch, CUDA, the
 * kernels, the config layer's packages) are the box's system site
 * (systemSitePackages, --no-deps), where the lab keeps its stubs
 * (lab/sglang/venvs.ts CT_SYSTEM_SITE).
 */
export function labStagedVenv(): Record<string, unknown> {
    return {
        root: "/opt/sglang/releases",
        adopt: { [FIELD_VENV.release]: FIELD_VENV.path },
        systemSitePackages: true,
        findLinks: [CT_WHEELHOUSE],
        pipArgs: ["--no-index", "--no-deps"],
        pins: releasePins(LAB_STAGED_RELEASE),
    };
}

/**
 * The environment `npm run lab` deploys the lab stack with: the checkout's
 * own backend and passphrase (.pulumi-state/, scripts/pulumi.sh), whatever
 * an operator's shell exports for the field stacks' backend
 * (PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE(_FILE): the operator guide
 * has them exported), so the lab stack never lands in the team's backend nor
 * fails on the team's passphrase; and the lab server's API key as the deploy
 * run's SGLANG_SERVE_API_KEY.
 */
export function labRunEnvironment(env: NodeJS.ProcessEnv, apiKey: string): NodeJS.ProcessEnv {
    const { PULUMI_BACKEND_URL: _backend, PULUMI_CONFIG_PASSPHRASE: _passphrase, PULUMI_CONFIG_PASSPHRASE_FILE: _passphraseFile, ...rest } = env;
    return { ...rest, SGLANG_SERVE_API_KEY: apiKey };
}
