/**
 * The SglangService's dynamic provider: the verbs, each calling one runner
 * (apply.ts for create, update and delete, refresh.ts for the refresh,
 * rollout.ts the rollout itself), and the preview's decisions (check: what
 * restarts and why; diff: what changed or drifted).
 */
import { decideWrite, parseOwner } from "../../core/unit/ownership";
import { describeFigures, percent } from "../../core/serving/serving-figures";
import { heldToShown, type HeldFigures } from "../../core/serving/serving-history";
import { describeSource, type VenvPlan } from "../../core/venv/venv-layout";
import { heldFiguresOf } from "./served-config";
import { qualitySettings } from "../serving";
import { say } from "../say";
import { factsForCheck, pythonFactsForCheck, stagesRelease } from "./facts";
import { changedKeys, changedNames } from "../diff-inputs";
import type { ProviderRun } from "../provider-run";
import { CompleteProvider, keepingProviderModule } from "../resource-provider";
import { applyService, removeService } from "./apply";
import { drafterChangedInPlace, refreshService, sameServer } from "./refresh";
import { declaredSecrets, secretsDiffer, withDeploySecrets } from "./secrets";
import { judgeServer } from "./verdict";
import { previewSources, stagedDrafterDigest, unpinnedSources } from "./weights";
import { CARRIED_RECORD, type ServiceOutputs, type ServiceProps } from "./props";

/** Fields whose change means the server process must restart. */
const PROCESS_FIELDS = ["unitText", "command", "flags", "environment"] as const;

/** The SglangService's verbs for one run. */
export const sglangServiceProvider = (run: ProviderRun): CompleteProvider<ServiceProps, ServiceOutputs> => ({
    async check(olds, news) {
        const failures: { property: string; reason: string }[] = [];
        // After a refresh, olds.owner is the owner the unit on the box records.
        const live = olds.owner === undefined ? undefined : parseOwner(olds.owner);
        const self = news.owner === undefined ? undefined : parseOwner(news.owner);
        if (live && self) {
            const decision = decideWrite({ live, self, takeOverFrom: news.takeOverFrom, unit: news.unitName, where: news.connection.address });
            if (decision.kind === "refuse") failures.push({ property: "owner", reason: decision.message });
        }
        // A declared source whose revision is not a full commit is refused with the commit it names now; nothing else is judged
        // then: the folder it would name (<root>/<org>--<name>/<branch>) is not one the stack ever stages.
        const unpinned = await unpinnedSources(news);
        if (unpinned.length > 0) return { inputs: news, failures: [...failures, ...unpinned] };
        // After a refresh, olds.boxFacts is what the box has: the SGLang release, the model's config.json. Then the drafter, SGLang's verdict.
        // A new model folder the box will not read (the read-only key) is judged by the Hub's config.json with the python the refresh read.
        const { facts, drafter, box, refused } = await judgeServer(run, news, await factsForCheck(run, olds, news), {
            stage: "preview",
            refusedBefore: failures.length > 0,
            python: pythonFactsForCheck(olds, news),
        });
        failures.push(...box, ...refused);
        // The declared sources: what up fetches and the disk left after, or the refusal (nothing downloaded), on a first
        // deploy too (its box may not be there yet: then the Hub's list alone).
        failures.push(
            ...(await previewSources(
                run,
                news,
                (olds.weights ?? []).map((w) => w.dir),
            )),
        );
        if (failures.length > 0) return { inputs: news, failures };
        // The record (last good figures, the drafter's digests) comes with the refreshed inputs; the program does not declare it.
        const carried = Object.fromEntries(CARRIED_RECORD.filter((k) => olds[k] !== undefined).map((k) => [k, olds[k]]));
        // Every preview shows the record beside what it previews, change or not.
        if (olds.servingFigures) say(`[${news.unitName}] last good serving figures: ${describeFigures(olds.servingFigures)}`);
        // What a restart is held to: this config's own figures when it served before (a revert), else the last good ones.
        // A drafter from a source is keyed by its revision and manifest, as the rollout keys it.
        const pinned = await stagedDrafterDigest(run, news);
        const held = heldFiguresOf(news, pinned ?? (drafter && !("error" in drafter) ? drafter.folderDigest : undefined), olds);
        let restart = restartReason(olds, news, held);
        if (stagesRelease(news, facts)) {
            say(`[${news.unitName}] SGLang ${news.venv.release} is not on the box: \`up\` stages it first, ${stagingPlan(news.venv)}`);
            restart = `${restart}; SGLang ${news.venv.release} staged in ${news.venv.dir} first`;
        }
        return { inputs: { ...news, ...carried, restart } };
    },
    async diff(_id, olds, news) {
        if (olds.unitName !== news.unitName) {
            return { changes: true, replaces: ["unitName"], deleteBeforeReplace: true };
        }
        const changed = changedKeys(olds, news, ["providerVersion", "connection", ...PROCESS_FIELDS, "endpoint", "readiness", "venv"]);
        const drift =
            olds.activeState !== "active" ||
            olds.enabled !== true ||
            olds.liveMatchesUnit === false ||
            secretsDiffer(olds.secretsHash, news) ||
            drafterChangedInPlace(olds) !== undefined ||
            olds.acceptLengthDrift !== undefined ||
            (olds.weightsDrift?.length ?? 0) > 0;
        return { changes: changed.length > 0 || drift, replaces: [] };
    },
    async create(inputs) {
        const id = `${inputs.connection.address}:${inputs.connection.vmid ?? "-"}:${inputs.unitName}`;
        const outs = await keepingProviderModule(inputs, () => applyService(run, id, withDeploySecrets(inputs)));
        return { id, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        return refreshService(run, id, props);
    },
    async update(id, olds, news) {
        return { outs: await keepingProviderModule(news, () => applyService(run, id, withDeploySecrets(news), olds)) };
    },
    async delete(_id, props) {
        await removeService(run, props);
    },
});

/** What staging a venv does, in the preview's words (remote/venv-staging.ts does it). */
function stagingPlan(plan: VenvPlan): string {
    return `in ${plan.dir} while the running server serves (${describeSource(plan)}), then checks it with the release's own parser, before anything stops`;
}

/** Shown by the preview: whether the server restarts, and for which changed flags, environment or secrets. */
function restartReason(olds: Partial<ServiceProps>, news: ServiceProps, held: HeldFigures | undefined): string {
    if (olds.unitName === undefined) return "yes: new server";
    const changed = changedKeys(olds, news, PROCESS_FIELDS).filter((k) => k !== "unitText" || !sameServer(olds.unitText, news.unitText));
    // The declared secrets (names, and whether there is a key), never their values: a rotated value shows as drift instead (diff).
    const secrets = JSON.stringify(declaredSecrets(olds as ServiceProps)) !== JSON.stringify(declaredSecrets(news));
    const recorded = olds as Partial<ServiceOutputs>;
    const drifted = drafterChangedInPlace(recorded) ?? recorded.acceptLengthDrift;
    if (changed.length === 0 && !secrets) return drifted ? `yes: ${drifted}${heldTo(held, news)}` : "no";
    const what = [...changedNames(olds.flags, news.flags), ...changedNames(olds.environment, news.environment), ...(secrets ? ["secrets"] : [])];
    return `yes: ${what.length ? what.join(", ") : "unit file"} changed${heldTo(held, news)}`;
}

/**
 * What a restart is held to (remote/checks/serving-quality.ts), shown beside
 * the change: the config's own earlier figures when it served before, else
 * the last good config's (providers/sglang-server/served-config.ts).
 */
function heldTo(held: HeldFigures | undefined, news: ServiceProps): string {
    if (!held) return "";
    const figures = held.figures;
    const { limits } = qualitySettings(news.readiness);
    const bounds = [
        ...(figures.acceptLength !== undefined && news.speculativeAlgorithm ? [`accept length at most ${percent(limits.acceptLengthDropLimit)} below`] : []),
        ...(figures.throughput !== undefined ? [`throughput at most ${percent(limits.throughputDropLimit)} below`] : []),
    ];
    return bounds.length ? `; held to ${heldToShown(held)}: ${bounds.join(", ")}` : "";
}
