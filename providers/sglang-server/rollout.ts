/**
 * The rollout runner: runs the stop-first rollout that core/rollout/rollout-plan.ts
 * plans, one step at a time, on the box.
 */
import { randomUUID } from "crypto";
import { sha256 } from "../../core/digest";
import { redact } from "../../core/secrets/redact";
import type { ServingFigures } from "../../core/serving/serving-figures";
import { heldToShown, withVerified } from "../../core/serving/serving-history";
import { advanceRollout, onStepError, planRollout, RolloutObservation, RolloutStep } from "../../core/rollout/rollout-plan";
import { API_KEY_ENV } from "../../core/sglang/rules";
import { parseEnvironmentFile } from "../../core/unit/systemd-unit";
import { keepPreviousUnitScript, NO_UNIT_TO_KEEP, restorePreviousUnitScript } from "../../core/unit/file-scripts";
import { waitForGpuMemoryReleased } from "../../remote/gpu-release";
import type { RemoteHost } from "../../remote/remote-host";
import type { ProviderRun } from "../provider-run";
import { drafterDigestOf } from "./facts";
import { ResourceInitFailed } from "../resource-provider";
import { heldFiguresOf, servedConfigKeyOf } from "./served-config";
import { ServedServer, startAndWait } from "../serving";
import { say } from "../say";
import { LiveService, outputsFrom, readLive, rolloutReasons } from "./refresh";
import type { ServiceOutputs, ServiceProps } from "./props";
import { secretValuesOf } from "./secrets";
import { previousPaths, unitPaths } from "../unit-view";

/** GPU memory below this counts as released (the driver's own use stays far below). */
const GPU_FREE_THRESHOLD_MIB = 1024;

/**
 * Stop-first rollout, run as the plan in core/rollout/rollout-plan.ts says: keep the
 * previous unit, stop, wait for GPU memory release, write the new unit, start
 * it and wait until it serves (readiness, checks, healthy window), retrying a
 * start that can pass on retry; on failure put the previous unit back, start
 * it and wait for it, and fail with the cause and the journal tail, recording
 * what really runs so the next `up` tries the change again. This loop only
 * runs the steps. The outputs of a rollout whose readiness wait succeeded
 * carry `servingVerified` for the ReadinessCheck of this run, and put the
 * new config first in the history of verified configs with what it measured.
 * `drafterDigest`: the drafter folder's digest as read before the rollout
 * (what the new config will load), for the figures it is held to.
 * `pinnedDrafter`: a drafter staged from a source, keyed by its revision and
 * manifest (core/weights/manifest.ts pinnedWeightsDigest) instead of the folder.
 */
export async function rollout(
    run: ProviderRun,
    id: string,
    inputs: ServiceProps,
    live: LiveService,
    recorded?: ServiceOutputs,
    drafterDigest?: string,
    pinnedDrafter?: string,
): Promise<ServiceOutputs> {
    const remote = run.remoteFor(inputs.connection, "server");
    const unit = inputs.unitName;
    const secret = (text: string) => redact(text, secretValuesOf(inputs));
    say(`[${unit}] rollout: ${rolloutReasons(inputs, live, recorded).join("; ")}`);
    let {
        state,
        step,
        say: lines,
    } = planRollout({
        unit,
        hasUnit: live.unit !== null,
        wasActive: live.activeState === "active",
        // States written before startAttempts existed: one start, as then.
        startAttempts: inputs.readiness.startAttempts ?? 1,
        gpuReleaseTimeoutSeconds: inputs.readiness.gpuReleaseTimeoutSeconds,
    });
    const previous = previousServer(inputs, live, recorded);
    // The new config is held to its own last figures when it served before, else to the last good config's; what it measures becomes the record.
    const record = { servingFigures: inputs.servingFigures ?? recorded?.servingFigures, servingHistory: inputs.servingHistory ?? recorded?.servingHistory };
    const lastGood = heldFiguresOf(inputs, drafterDigest, record);
    if (lastGood) say(`[${unit}] the new config is held to ${heldToShown(lastGood)}`);
    const newServer: ServiceProps & ServedServer = { ...inputs, newConfig: lastGood ? { lastGood } : {} };
    let measured: ServingFigures | undefined;
    for (;;) {
        for (const line of lines) say(secret(line));
        if (step.kind === "finish") break;
        let observed: RolloutObservation;
        try {
            observed = await runStep(remote, newServer, previous, step, (figures) => (measured = figures));
        } catch (e) {
            throw await stepError(run, id, remote, inputs, recorded, onStepError(state), step, e);
        }
        ({ state, step, say: lines } = advanceRollout(state, observed));
    }
    const result = step.result;
    if (result.ok) {
        // What the box holds now, and what the new server loaded: the drafter folder as this run read it.
        const [after, drafter] = await Promise.all([readLive(run, remote, inputs), drafterDigestOf(run, remote, inputs.expectBox)]);
        // New with every rollout, and no digest of the secrets (the revision is plain in the state).
        const revision = sha256(`${inputs.unitText}\n${randomUUID()}`);
        // The record is this rollout's: the figures it measured and the drafter it loaded, nothing carried from before.
        const {
            servingFigures: _lastGood,
            servingHistory: _history,
            drafterDigest: _loaded,
            drafterDigestOnBox: _onBox,
            acceptLengthDrift: _drift,
            ...declared
        } = inputs;
        // The earlier configs' figures stay theirs: a later return to one is held to them.
        const history = measured
            ? withVerified(record.servingHistory, {
                  config: servedConfigKeyOf(inputs, pinnedDrafter ?? drafter),
                  verifiedAt: new Date().toISOString(),
                  figures: measured,
              })
            : record.servingHistory;
        return {
            ...outputsFrom(declared, after, revision, { revision, run: run.id }),
            ...(measured ? { servingFigures: measured } : {}),
            ...(history ? { servingHistory: history } : {}),
            ...(drafter !== undefined ? { drafterDigest: drafter, drafterDigestOnBox: drafter } : {}),
        };
    }

    const cause = secret(result.cause);
    const journal = secret(result.journal.slice(-20).join("\n    "));
    const after = await readLive(run, remote, inputs);
    // The record of the config the box holds: the previous one's (as recorded before this
    // rollout, with what the box shows on top), so a refresh finds what the state says and
    // the next preview still shows the change as pending.
    const base = result.holds === "previous" && recorded ? recorded : inputs;
    throw new ResourceInitFailed(
        `rollout of ${unit} failed: ${cause}; ${result.outcome}.` + (journal ? `\n  Last journal lines:\n    ${journal}` : ""),
        id,
        outputsFrom(base, after, sha256(`failed\n${Date.now()}`)),
        [`rollout of ${unit} failed: ${cause}`, result.outcome, ...(journal ? [`last journal lines:\n    ${journal}`] : [])],
    );
}

/**
 * A step that failed with an error of its own (a command systemd refused, the
 * SSH connection gone for good): put the previous unit back and start it when
 * the new one may be on the box (best effort), then fail with the error and a
 * record of what the box shows, so the state does not claim the old server
 * still runs. When the box cannot be read either, the error as it is.
 */
async function stepError(
    run: ProviderRun,
    id: string,
    remote: RemoteHost,
    inputs: ServiceProps,
    recorded: ServiceOutputs | undefined,
    after: { holds: "new" | "previous"; putBack: boolean },
    step: RolloutStep,
    e: unknown,
): Promise<unknown> {
    const unit = inputs.unitName;
    const message = redact(e instanceof Error ? e.message : String(e), secretValuesOf(inputs));
    say(`[${unit}] the rollout stopped at its ${step.kind} step: ${message}`);
    let holds = after.holds;
    let outcome = "nothing was put back";
    if (after.putBack) {
        try {
            say(`[${unit}] putting the previous unit back and starting it (without waiting until it serves)`);
            await restorePrevious(remote, unit);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            await remote.run(["systemctl", "reset-failed", unit]);
            await remote.runChecked(["systemctl", "start", unit]);
            holds = "previous";
            outcome = "the previous unit was put back and started (not waited for: check it with journalctl)";
        } catch (again) {
            outcome = `putting the previous unit back failed too: ${redact(again instanceof Error ? again.message : String(again), secretValuesOf(inputs))}`;
        }
    }
    let live: LiveService;
    try {
        live = await readLive(run, remote, inputs);
    } catch {
        return e;
    }
    const base = holds === "previous" && recorded ? recorded : inputs;
    return new ResourceInitFailed(
        `${message}\n  rollout of ${unit} stopped at its ${step.kind} step; ${outcome}.`,
        id,
        outputsFrom(base, live, sha256(`failed\n${Date.now()}`)),
        [message, `rollout of ${unit} stopped at its ${step.kind} step`, outcome],
    );
}

/**
 * What the readiness wait of the previous unit checks: its own served name, port and
 * speculative algorithm (from the unit kept on the box), so a rollback of a
 * change to one of them is judged by the config that runs again. The API key
 * is read from the restored environment file when it starts (runStep). Its
 * start budget is the longer of the declared one and the one it last came up
 * within (the record): a shorter declared budget is meant for the new config,
 * and must not fail the rollback of a server that took longer to load.
 */
function previousServer(inputs: ServiceProps, live: LiveService, recorded: ServiceOutputs | undefined): ServiceProps {
    const startupTimeoutSeconds = Math.max(inputs.readiness.startupTimeoutSeconds, recorded?.readiness.startupTimeoutSeconds ?? 0);
    const base = { ...inputs, readiness: { ...inputs.readiness, startupTimeoutSeconds } };
    const fields = live.unit?.fields;
    if (!fields) return base;
    let endpoint = inputs.endpoint;
    if (fields.port !== undefined) {
        const url = new URL(inputs.endpoint);
        url.port = String(fields.port);
        endpoint = url.toString().replace(/\/$/, "");
    }
    return {
        ...base,
        endpoint,
        servedModelName: fields.servedName ?? inputs.servedModelName,
        speculativeAlgorithm: fields.speculative?.algorithm,
    };
}

/** Runs one step of the rollout plan on the box and says what it found; `measured` gets the new config's figures once it serves. */
async function runStep(
    remote: RemoteHost,
    inputs: ServiceProps & ServedServer,
    previous: ServiceProps,
    step: RolloutStep,
    measured: (figures: ServingFigures) => void,
): Promise<RolloutObservation> {
    const unit = inputs.unitName;
    switch (step.kind) {
        case "keep-previous":
            return { kind: "kept", hadPrevious: await keepPrevious(remote, unit) };
        case "stop": {
            await remote.run(["systemctl", "stop", unit]);
            if (!step.waitForGpu) return { kind: "stopped", released: true };
            const released = await waitForGpuMemoryReleased(remote, {
                gpus: inputs.gpuIndices,
                thresholdMiB: GPU_FREE_THRESHOLD_MIB,
                timeoutMs: inputs.readiness.gpuReleaseTimeoutSeconds * 1000,
                onProgress: say,
            });
            return released.ok ? { kind: "stopped", released: true } : { kind: "stopped", released: false, reason: released.reason };
        }
        case "write-new":
            await writeServiceFiles(remote, inputs);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            await remote.runChecked(["systemctl", "enable", unit]);
            return { kind: "written" };
        case "restore-previous":
            await restorePrevious(remote, unit);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            return { kind: "restored" };
        case "start": {
            const server = step.config === "new" ? inputs : { ...previous, apiKey: await apiKeyOnBox(remote, unit) };
            const attempt = { attempt: step.attempt, attempts: step.attempts };
            const readiness = await startAndWait(remote, server, attempt);
            if (step.config === "new" && readiness.ok) {
                // The prompt set's figures; without it, the accept length /server_info reported.
                const figures =
                    readiness.servingFigures ??
                    (inputs.speculativeAlgorithm && readiness.acceptLength !== null
                        ? { algorithm: inputs.speculativeAlgorithm, acceptLength: readiness.acceptLength }
                        : undefined);
                if (figures) measured(figures);
            }
            return {
                kind: "started",
                result: readiness.ok
                    ? { ok: true }
                    : { ok: false, cause: readiness.cause, startLines: readiness.startLines, lastJournalLines: readiness.lastJournalLines },
            };
        }
        case "finish":
            throw new Error("rollout: the finish step has nothing to run");
        default: {
            const never: never = step;
            throw new Error(`unhandled rollout step ${JSON.stringify(never)}`);
        }
    }
}

async function writeServiceFiles(remote: RemoteHost, inputs: ServiceProps): Promise<void> {
    const paths = unitPaths(inputs.unitName);
    await remote.runChecked(["mkdir", "-p", "/etc/sglang"]);
    await remote.writeFile(paths.unit, inputs.unitText, 0o644);
    for (const [file, text] of [
        [paths.environmentFile, inputs.environmentFile],
        [paths.serverConfigFile, inputs.serverConfigFile],
    ] as const) {
        if (text !== undefined) await remote.writeFile(file, text, 0o600);
        else await remote.runChecked(["rm", "-f", file]);
    }
}

/** Keeps the unit that runs now on the box, to put back if the new one does not come up; false when there is none. */
async function keepPrevious(remote: RemoteHost, unitName: string): Promise<boolean> {
    const r = await remote.run(["sh", "-c", keepPreviousUnitScript(unitPaths(unitName), previousPaths(unitName))]);
    if (r.code === NO_UNIT_TO_KEEP) return false;
    if (r.code !== 0) throw new Error(`cannot keep the previous unit of ${unitName}: ${r.stderr.trim()}`);
    return true;
}

async function restorePrevious(remote: RemoteHost, unitName: string): Promise<void> {
    await remote.runChecked(["sh", "-c", restorePreviousUnitScript(unitPaths(unitName), previousPaths(unitName))]);
}

/** The API key the unit's environment file on the box holds (the previous unit's, once restored); undefined without one. */
async function apiKeyOnBox(remote: RemoteHost, unitName: string): Promise<string | undefined> {
    const text = await remote.readFile(unitPaths(unitName).environmentFile);
    if (text === null) return undefined;
    try {
        return parseEnvironmentFile(text)[API_KEY_ENV] || undefined;
    } catch {
        return undefined;
    }
}
