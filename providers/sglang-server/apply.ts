/**
 * The one runner of an SglangService's create and update (`applyService`),
 * and of its delete (`removeService`): read the box, then leave a server
 * that runs the declared config as it is, or roll out.
 */
import { sha256 } from "../../core/digest";
import { decideDelete, decideWrite, formatOwner } from "../../core/unit/ownership";
import { describeFailure } from "../../core/readiness/readiness";
import { redact } from "../../core/secrets/redact";
import { unitOwner } from "../../core/unit/systemd-unit";
import { journalPosition } from "../../remote/readiness-wait";
import type { RemoteHost } from "../../remote/remote-host";
import { assertBoxServes, boxCannotServe, boxFactsOf, readFoldersAgain, stagesRelease } from "./facts";
import type { ProviderRun } from "../provider-run";
import { outOfGateway } from "./gateway-drain";
import { ResourceInitFailed } from "../resource-provider";
import { waitServing } from "../serving";
import { say } from "../say";
import { LiveService, outputsFrom, readableUnit, readLive, rolloutReasons, selfOwner } from "./refresh";
import type { ServiceOutputs, ServiceProps } from "./props";
import { rollout } from "./rollout";
import { pruneVenvs, stageVenv } from "../../remote/venv-staging";
import { secretValuesOf } from "./secrets";
import { judgeServer } from "./verdict";
import { pruneDeclaredSources, stageDeclaredSources } from "./weights";
import { previousPaths, unitPaths } from "../unit-view";

/** `recorded`: the state's record before this update (absent for a create). */
export async function applyService(run: ProviderRun, id: string, inputs: ServiceProps, recorded?: ServiceOutputs): Promise<ServiceOutputs> {
    const remote = run.remoteFor(inputs.connection, "server");
    const live = await readLive(run, remote, inputs);
    assertMayWrite(remote, inputs, live);
    const why = rolloutReasons(inputs, live, recorded);
    if (why.length === 0) {
        const revision = sha256(`${inputs.unitText}\n${live.secretsHash}`);
        // Active but not answering yet: a server that is starting by itself (its container was just started). Record what it runs once it serves.
        const waits = live.activeState === "active" && live.liveArgs === null;
        let now = waits ? await untilServing(run, id, remote, inputs, live) : live;
        if (now.unit && now.unit.text !== inputs.unitText) {
            // Only the lines that record who manages it (the owner, the header) or bound a start (TimeoutStartSec) differ: rewrite the file, keep the server running.
            await remote.writeFile(unitPaths(inputs.unitName).unit, inputs.unitText, 0o644);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            say(
                `[${inputs.unitName}] rewrote the unit file, whose header (owner ${inputs.owner ?? "(none)"}) or start budget (TimeoutStartSec) alone differed; the server runs on, not restarted`,
            );
            now = { ...now, unit: readableUnit(inputs.unitText), owner: selfOwner(inputs) };
        }
        if (!live.enabled) await remote.runChecked(["systemctl", "enable", inputs.unitName]);
        say(`[${inputs.unitName}] already runs the declared config; not restarted`);
        // A wait that ended serving: the ReadinessCheck of this revision only confirms it (no second wait, no second report).
        // Nothing rolled out: the record check carried in (the last good figures, the drafter the server loaded) stays.
        const kept = recorded?.stagedWeights ? { stagedWeights: recorded.stagedWeights } : {};
        return { ...outputsFrom(inputs, { ...now, enabled: true }, revision, waits ? { revision, run: run.id } : undefined), ...kept };
    }
    // The declared sources of weights (issue 33), staged and verified while the running server serves: a mismatch fails here, nothing stopped.
    // First, so the judgement below reads the folders the new server will load (the preview judged them from the Hub's config.json).
    const sources = await stageDeclaredSources(remote, inputs);
    if (sources.fetched && inputs.expectBox) await readFoldersAgain(run, remote, inputs.expectBox);
    // The box's facts (this run's: the refresh read them), the pinned drafter, then SGLang's own verdict
    // (kept from the preview when it ran there; a first deploy judges here), before anything stops.
    const { facts, drafter, box, refused } = await judgeServer(run, inputs, inputs.expectBox ? await boxFactsOf(run, remote, inputs.expectBox) : undefined, {
        stage: "rollout",
    });
    if (box.length > 0) throw boxCannotServe(inputs.unitName, box);
    if (refused.length > 0) {
        throw new Error(
            `[${inputs.unitName}] the declared server is refused; nothing on the box was changed:\n` + refused.map((f) => `  - ${f.reason}`).join("\n"),
        );
    }
    // A release not on the box yet is installed beside the running one, and checked, before the rollout stops anything.
    const owner = inputs.owner ?? inputs.unitName;
    if (stagesRelease(inputs, facts)) {
        await stageVenv(remote, inputs.venv, inputs.unitName, owner, { say });
        // The box has changed: its facts are read again, for this run's later reads too.
        await assertBoxServes(run, remote, inputs.unitName, inputs.expectBox, { fresh: true });
    }
    // Behind a gateway: out of it, drained, rolled out, back in (providers/sglang-server/gateway-drain.ts).
    // A drafter from a source is keyed by its revision and manifest (pinnedWeightsDigest), not its folder's names, sizes and times.
    const drafterDigest = sources.drafterDigest ?? (drafter && !("error" in drafter) ? drafter.folderDigest : undefined);
    const rolled = await outOfGateway(run, inputs, () => rollout(run, id, inputs, live, recorded, drafterDigest, sources.drafterDigest));
    const outputs = sources.records.length > 0 ? { ...rolled, stagedWeights: sources.records } : rolled;
    if (inputs.venv) await pruneVenvs(remote, inputs.venv, inputs.unitName, owner, say);
    await pruneDeclaredSources(remote, inputs);
    return outputs;
}

/**
 * Refuses, before anything on the box changes, to write a unit another
 * stack owns (unless service.takeOverFrom names it); says so when taking one over.
 */
function assertMayWrite(remote: RemoteHost, inputs: ServiceProps, live: LiveService): void {
    const self = selfOwner(inputs);
    if (!self) return;
    const decision = decideWrite({ live: live.owner, self, takeOverFrom: inputs.takeOverFrom, unit: inputs.unitName, where: remote.describe() });
    switch (decision.kind) {
        case "ours":
        case "unowned":
            return;
        case "take-over":
            say(`[${inputs.unitName}] taking it over from stack ${formatOwner(decision.from)} (sglang-serve:service.takeOverFrom)`);
            return;
        case "refuse":
            throw new Error(decision.message);
        default: {
            const never: never = decision;
            throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
    }
}

/**
 * Waits (within the startup budget) until an active server that does not
 * answer yet serves, without restarting it (it is starting by itself, e.g.
 * in a container just started), and reads the box again. One that does not
 * serve fails the update with the cause, recording the box as it is.
 */
async function untilServing(run: ProviderRun, id: string, remote: RemoteHost, inputs: ServiceProps, live: LiveService): Promise<LiveService> {
    say(`[${inputs.unitName}] runs the declared config but does not answer yet; waiting for it (not restarted)`);
    const readiness = await waitServing(remote, inputs, await journalPosition(remote, inputs.unitName), { healthOnlyGracePolls: 0 });
    if (readiness.ok) return readLive(run, remote, inputs);
    const cause = redact(describeFailure(readiness.cause), secretValuesOf(inputs));
    const journal = redact(readiness.lastJournalLines.slice(-20).join("\n    "), secretValuesOf(inputs));
    throw new ResourceInitFailed(
        `${inputs.unitName} runs the declared config but is not serving: ${cause}; it was not restarted ` +
            `(systemctl restart ${inputs.unitName} on the box, or change the config).\n  Last journal lines:\n    ${journal}`,
        id,
        outputsFrom(inputs, live, sha256(`${inputs.unitText}\n${live.secretsHash}`)),
        [`${inputs.unitName} is not serving: ${cause}`],
    );
}

/** Stops and removes the unit and its files, unless the box says another stack owns it now. */
export async function removeService(run: ProviderRun, props: ServiceOutputs): Promise<void> {
    const remote = run.remoteFor(props.connection, "server");
    // Read the box, not the state: another stack may have taken the unit over since (its owner is all this read needs).
    const read = await run.unitReads.read(remote, props.unitName, "");
    const live = read.unitText === null ? undefined : unitOwner(read.unitText);
    const decision = decideDelete({ live, self: selfOwner(props), unit: props.unitName, where: remote.describe() });
    if (decision.kind === "leave") {
        say(decision.message);
        return;
    }
    const paths = unitPaths(props.unitName);
    const prev = previousPaths(props.unitName);
    await remote.run(["systemctl", "disable", "--now", props.unitName]);
    await remote.runChecked(["rm", "-f", ...[paths, prev].flatMap((p) => [p.unit, p.environmentFile, p.serverConfigFile])]);
    await remote.runChecked(["systemctl", "daemon-reload"]);
    say(`[${props.unitName}] stopped and removed (the model and the container are untouched)`);
}
