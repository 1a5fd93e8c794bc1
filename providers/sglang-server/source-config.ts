/**
 * A declared source's config.json at preview, before anything is downloaded
 * (issue 33 item 5): where the revision folder is not on the box yet, its
 * config.json is read from the Hub (or the source's mirror) by the machine
 * running pulumi, with HF_TOKEN from the deploy's secrets when the run gives
 * it (never logged), and read as the box reads a folder's (BOX_FACTS_SCRIPT,
 * run here on a stand-in folder with this machine's python, the one the
 * verdict runs the release's code with). The box's facts and SGLang's own
 * verdict then judge it as they judge a folder copied by hand. A revision
 * already staged is judged from the box's copy, and nothing is asked here; a
 * folder the box will not read (the read-only key) is judged by the Hub's
 * copy, which a pinned commit makes the same bytes.
 */
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { BOX_FACTS_SCRIPT, type BoxFacts, type BoxFactsRead, CONFIG_JSON_MAX_BYTES, parseBoxFacts } from "../../core/box/box-facts";
import { thirdPartyEnvironment } from "../../core/secrets/third-party-env";
import { isCommitId } from "../../core/weights/hf-source";
import { describePlan, type WeightsPlan } from "../../core/weights/staging";
import type { WeightsRole } from "../../core/weights/weights-layout";
import { readConfigJson } from "../../remote/weights-revision";
import { python } from "../../sglang-release/oracle";
import type { ProviderRun } from "../provider-run";
import { say } from "../say";
import type { PythonFacts } from "./facts";
import type { ServiceProps } from "./props";
import { hubFilesOf, hubTokenOf } from "./weights";
import { weightsBytesOf } from "../../core/weights/preview";

/** What a folder's config.json gives the box's facts, besides `model` (the rest is the box's: its python, its release, the folder's digest). */
const CONFIG_FACT_KEYS = ["architecture", "layerTypes", "mtpLayers", "contextLength", "attentionHeads", "kvHeads", "configJson"] as const;

/** Those facts, and the weights' size (from the Hub's list: the stand-in folder holds no weights). */
type ConfigFacts = Pick<BoxFacts, "model" | (typeof CONFIG_FACT_KEYS)[number] | "weightsBytes">;

/** config.json's facts as the box's own read would give them for a folder holding it: BOX_FACTS_SCRIPT run here on a stand-in folder. */
export async function configFactsOf(configJson: string): Promise<ConfigFacts> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-source-config-"));
    try {
        fs.writeFileSync(path.join(dir, "config.json"), configJson);
        const stdout = await new Promise<string>((resolve, reject) =>
            execFile(
                python(),
                ["-I", "-c", BOX_FACTS_SCRIPT, dir, "sglang", "missing"],
                { env: thirdPartyEnvironment(process.env, "release-code"), timeout: 60_000, maxBuffer: 4 * CONFIG_JSON_MAX_BYTES },
                (error, out, err) =>
                    error ? reject(new Error(`${python()} could not read it: ${(err || error.message).trim().slice(0, 300)}`)) : resolve(out),
            ),
        );
        const f = parseBoxFacts(stdout);
        const read = Object.fromEntries(CONFIG_FACT_KEYS.filter((k) => f[k] !== undefined).map((k) => [k, f[k]]));
        return { model: f.model, ...(read as Omit<ConfigFacts, "model" | "weightsBytes">) };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/** A source revision's config.json facts and its weights' size, read from the Hub once per engine run (the same endpoint, repository and commit). */
function hubConfigFacts(run: ProviderRun, plan: WeightsPlan, token: string | undefined): Promise<ConfigFacts | { error: string }> {
    const key = ["hub-config", plan.endpoint, plan.hf, plan.revision].join("\0");
    return run.reads.once(
        key,
        async () => {
            try {
                // The weights' size by the Hub's list, for the memory checks (the list is the preview's count's too); without it, the config alone.
                const [text, files] = await Promise.all([
                    readConfigJson(plan.endpoint, plan.hf, plan.revision, CONFIG_JSON_MAX_BYTES, { token }),
                    hubFilesOf(run, plan, token).catch(() => undefined),
                ]);
                const weightsBytes = files ? weightsBytesOf(files, plan) : undefined;
                return { ...(await configFactsOf(text)), ...(weightsBytes !== undefined ? { weightsBytes } : {}) };
            } catch (e) {
                return { error: (e as Error).message };
            }
        },
        { keep: (answer) => !("error" in answer) },
    );
}

/** The facts judged for a folder, and where its config.json came from when not from the box. */
export interface SourceFacts {
    read: BoxFactsRead | undefined;
    /** `the drafter sglang-lab/Tiny-Qwen3-DFlash@0123abcd4567's config.json from https://huggingface.co`: set when the Hub's config.json stands in. */
    fromHub?: string;
}

/**
 * The facts the preview judges for the folder a declared source fills
 * (`role`'s revision folder): the box's read when the folder is there (a
 * revision staged already: the box's copy), else the box's read with the
 * revision's config.json from the Hub in place of the missing folder's. A
 * folder the box will not read (the read-only key's gate pins only the
 * deployed folders: a pull request's preview of a new revision) is judged by
 * the Hub's config.json too, a commit's being the one a staged copy holds;
 * the model's read also says the box's python and release, which `python`
 * gives then (the refresh's read of the deployed folder with the same
 * python, facts.ts pythonFactsForCheck), and without it the read stays as it
 * is. A config.json that cannot be read from here leaves the box's read as
 * it is (the verdict then waits for the rollout, which stages the folder
 * first), and says why.
 */
export async function withSourceConfig(
    run: ProviderRun,
    props: ServiceProps,
    role: WeightsRole,
    read: BoxFactsRead | undefined,
    python?: PythonFacts,
): Promise<SourceFacts> {
    if (read === undefined) return { read };
    const unread = "error" in read;
    if (unread ? role === "model" && python === undefined : read.model !== "missing") return { read };
    const plan = (props.weights ?? []).find((p) => p.role === role);
    // An unpinned revision is refused at check (weights.ts unpinnedSources): nothing to judge.
    if (!plan || !isCommitId(plan.revision)) return { read };
    const config = await hubConfigFacts(run, plan, hubTokenOf(props));
    const fromHub = `the ${describePlan(plan)}'s config.json from ${plan.endpoint}`;
    if ("error" in config) {
        say(`[${props.unitName}] ${fromHub} could not be read (from the machine running pulumi): ${config.error}`);
        return { read };
    }
    const where = unread
        ? `cannot be read on the box here (${read.error})${python ? ", with the box's python and release as the refresh read them" : ""}`
        : "is not on the box yet";
    say(`[${props.unitName}] the ${describePlan(plan)} ${where}: ${fromHub} (read from the machine running pulumi) is judged before anything is downloaded`);
    return { read: unread ? { ...(python ?? { sglangVersion: null }), ...config } : { ...read, ...config }, fromHub };
}
