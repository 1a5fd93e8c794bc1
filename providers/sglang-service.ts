import { newMarker } from "../core/batch-script";
import { keepingProviderModule, ResourceInitFailed, ResourceProvider } from "./resource-provider";
import { assertBoxServes, boxFailures, BoxFactsRead, readBoxFacts } from "./box-facts";
import type { BoxExpectations } from "../core/box-facts";
import type { Connection } from "../components/connection";
import type { ReadinessConfig } from "../core/config-schema";
import { apiKeyProblem } from "../core/config-values";
import { sha256 } from "../core/digest";
import { decideDelete, decideWrite, formatOwner, parseOwner } from "../core/ownership";
import { describeFailure } from "../core/readiness";
import { advanceRollout, onStepError, planRollout, RolloutObservation, RolloutStep } from "../core/rollout-plan";
import { API_KEY_ENV } from "../core/sglang-rules";
import { shQuote } from "../core/shell";
import { parseEnvironmentFile, UnitOwner, unitOwner, unitTextWithoutOwner } from "../core/systemd-unit";
import { parseUnitReadOutput, renderUnitReadScript, UnitReadRequest, UnitReadResult } from "../core/unit-read";
import { Coalescer } from "../remote/coalesce";
import { liveArgsMismatch, unitView, UnitView, previousPaths, unitPaths } from "./unit-view";
import { redact, remoteFor, say } from "./context";
import { changedKeys, changedNames } from "./diff-inputs";
import { recordGated, startAndWait, verifyServing, waitServing } from "./rollout-gate";
import { journalPosition } from "../remote/readiness-gate";
import { waitForGpuMemoryReleased } from "../remote/gpu-release";
import { containerNotRunning, type RemoteHost } from "../remote/remote-host";

export interface ServiceInputs {
    providerVersion: string;
    connection: Connection;
    unitName: string;
    unitText: string;
    command: string[];
    flags: Record<string, string>;
    environment: Record<string, string>;
    /** The EnvironmentFile's text (secret); absent when the server has no secrets. */
    environmentFile?: string;
    endpoint: string;
    apiKey?: string;
    servedModelName: string;
    speculativeAlgorithm?: string;
    gpuIndices: number[];
    readiness: ReadinessConfig;
    /**
     * `<project>/<stack>` that manages the unit, recorded in the unit file.
     * The inputs a refresh reads back hold the owner the box records instead
     * (so the preview shows a take-over, and check refuses one not asked for).
     * Absent in states written before owners were recorded.
     */
    owner?: string;
    /** service.takeOverFrom: the stack whose unit this one may take over. */
    takeOverFrom?: string;
    /** Shown by the preview: whether and why the server restarts. Set by check. */
    restart?: string;
    /** What the declared server needs of the box (core/box-facts.ts). */
    expectBox?: BoxExpectations;
    /** What the box said at the last refresh (the inputs a refresh reads back carry it to check). */
    boxFacts?: BoxFactsRead;
}

export interface ServiceOutputs extends ServiceInputs {
    /** Changes with every rollout; the ReadinessCheck re-runs on it. */
    revision: string;
    activeState: string;
    enabled: boolean;
    /** sha256 of the EnvironmentFile on the box (secret): secrets drift without storing them twice. */
    secretsHash: string;
    /** The running server's args from /server_info, normalized to the fields the stack owns; null when unreachable. */
    liveArgs: Record<string, unknown> | null;
    /** False when the running process does not run what the unit file says (changed, not restarted). */
    liveMatchesUnit: boolean;
    /** The owner the unit on the box records (`<project>/<stack>`), if any. */
    boxOwner?: string;
}

/** Fields whose change means the server process must restart. */
const PROCESS_FIELDS = ["unitText", "command", "flags", "environment"] as const;

/** The secrets hash of an EnvironmentFile: "" when there is none, as the unit read reports it (core/unit-read.ts). */
function environmentFileHash(text: string | undefined): string {
    return text === undefined ? "" : sha256(text);
}

/** What the box holds now: unit, secrets hash, systemd state, live args. */
interface LiveService {
    unit: UnitView | null;
    /** The owner the unit file records. */
    owner: UnitOwner | undefined;
    secretsHash: string;
    activeState: string;
    enabled: boolean;
    liveArgs: Record<string, unknown> | null;
    liveMatchesUnit: boolean;
}

/** A unit edited beyond parsing is still drift to report and repair, not a failed refresh. */
function readableUnit(text: string): UnitView {
    try {
        return unitView(text);
    } catch (e) {
        return { text, command: [`(unreadable unit: ${(e as Error).message})`], flags: {}, environment: {} };
    }
}

/**
 * The unit reads of the services on one box that arrive together (a refresh
 * reads every resource in parallel) go out as one command: one `pct exec`
 * and one `systemctl show` per box, not several per service. Reads with other
 * credentials or another box are never merged.
 */
const unitReads = new Coalescer<{ remote: RemoteHost; unit: UnitReadRequest }, UnitReadResult>(5, async (_key, reqs) => {
    const units = reqs.map((r) => r.unit);
    const marker = newMarker();
    const result = await reqs[0]!.remote.runChecked(["sh", "-c", renderUnitReadScript(units, marker)]);
    return parseUnitReadOutput(result.stdout, units, marker);
});

/** `expectedEnvironmentHash`: environmentFileHash of the declared file; the box answers it again or "differs" (core/unit-read.ts). */
function readUnit(remote: RemoteHost, unitName: string, expectedEnvironmentHash: string): Promise<UnitReadResult> {
    const t = remote.target;
    const credentials = sha256(`${t.privateKey ?? ""}\0${t.passphrase ?? ""}\0${t.agent ?? ""}\0${t.hostKey}`);
    const paths = unitPaths(unitName);
    return unitReads.request(`${remote.describe()} ${credentials}`, {
        remote,
        unit: { unitName, unitPath: paths.unit, environmentFilePath: paths.environmentFile, expectedEnvironmentHash },
    });
}

/** `refresh`: the look at the server is shared with the ReadinessCheck's refresh when that one is in flight (providers/rollout-gate.ts verifyServing). */
async function readLive(remote: RemoteHost, inputs: ServiceInputs, opts: { refresh?: boolean } = {}): Promise<LiveService> {
    const read = await readUnit(remote, inputs.unitName, environmentFileHash(inputs.environmentFile));
    const unit = read.unitText === null ? null : readableUnit(read.unitText);
    const activeState = read.activeState;
    let liveArgs: Record<string, unknown> | null = null;
    let liveMatchesUnit = true;
    if (unit && activeState === "active") {
        const serving = await verifyServing(inputs, remote, opts);
        if (serving.liveArgs) {
            liveArgs = serving.liveArgs as Record<string, unknown>;
            liveMatchesUnit = liveArgsMismatch(unit, serving.liveArgs).length === 0;
        }
    }
    return {
        unit,
        owner: read.unitText === null ? undefined : unitOwner(read.unitText),
        secretsHash: read.environmentFileHash,
        activeState,
        enabled: read.enabled,
        liveArgs,
        liveMatchesUnit,
    };
}

function outputsFrom(inputs: ServiceInputs, live: LiveService, revision: string): ServiceOutputs {
    const fromBox = live.unit
        ? { unitText: live.unit.text, command: live.unit.command, flags: live.unit.flags, environment: live.unit.environment }
        : { unitText: "", command: [], flags: {}, environment: {} };
    return {
        ...inputs,
        ...fromBox,
        boxOwner: live.owner ? formatOwner(live.owner) : undefined,
        restart: "no",
        revision,
        activeState: live.activeState,
        enabled: live.enabled,
        secretsHash: live.secretsHash,
        liveArgs: live.liveArgs,
        liveMatchesUnit: live.liveMatchesUnit,
    };
}

/** Two unit texts that differ at most in the owner they record run the same server. */
function sameServer(a: string | undefined, b: string | undefined): boolean {
    return a === b || (a !== undefined && b !== undefined && unitTextWithoutOwner(a) === unitTextWithoutOwner(b));
}

/** The owner this stack records, or undefined for a state written before owners were. */
function selfOwner(inputs: ServiceInputs): UnitOwner | undefined {
    return inputs.owner === undefined ? undefined : parseOwner(inputs.owner);
}

/**
 * Refuses, before anything on the box changes, to write a unit another
 * stack owns (unless service.takeOverFrom names it); says so when taking one over.
 */
function assertMayWrite(remote: RemoteHost, inputs: ServiceInputs, live: LiveService): void {
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

/** Whether the box runs exactly what is declared, and if not, why (for messages and the restart decision). */
function differences(inputs: ServiceInputs, live: LiveService): string[] {
    const why: string[] = [];
    if (!live.unit) return ["the unit is not on the box"];
    if (!sameServer(live.unit.text, inputs.unitText)) {
        const flags = changedNames(inputs.flags, live.unit.flags);
        const env = changedNames(inputs.environment, live.unit.environment);
        why.push(flags.length || env.length ? `changed: ${[...flags, ...env].join(", ")}` : "unit file differs");
    }
    if (live.secretsHash !== environmentFileHash(inputs.environmentFile)) why.push("secrets changed");
    if (live.activeState !== "active") why.push(`service is ${live.activeState}`);
    if (!live.liveMatchesUnit) why.push("the running server does not run the unit file's args (changed, not restarted)");
    return why;
}

async function writeServiceFiles(remote: RemoteHost, inputs: ServiceInputs): Promise<void> {
    const paths = unitPaths(inputs.unitName);
    await remote.runChecked(["mkdir", "-p", "/etc/sglang"]);
    await remote.writeFile(paths.unit, inputs.unitText, 0o644);
    if (inputs.environmentFile !== undefined) {
        await remote.writeFile(paths.environmentFile, inputs.environmentFile, 0o600);
    } else {
        await remote.runChecked(["rm", "-f", paths.environmentFile]);
    }
}

/** Keeps the unit that runs now on the box, to put back if the new one does not come up. */
async function keepPrevious(remote: RemoteHost, unitName: string): Promise<boolean> {
    const paths = unitPaths(unitName);
    const prev = previousPaths(unitName);
    const script =
        `[ -f ${shQuote(paths.unit)} ] || exit 3; cp -p ${shQuote(paths.unit)} ${shQuote(prev.unit)}; ` +
        `if [ -f ${shQuote(paths.environmentFile)} ]; then cp -p ${shQuote(paths.environmentFile)} ${shQuote(prev.environmentFile)}; ` +
        `else rm -f ${shQuote(prev.environmentFile)}; fi`;
    const r = await remote.run(["sh", "-c", script]);
    if (r.code === 3) return false;
    if (r.code !== 0) throw new Error(`cannot keep the previous unit of ${unitName}: ${r.stderr.trim()}`);
    return true;
}

async function restorePrevious(remote: RemoteHost, unitName: string): Promise<void> {
    const paths = unitPaths(unitName);
    const prev = previousPaths(unitName);
    const script =
        `cp -p ${shQuote(prev.unit)} ${shQuote(paths.unit)}; ` +
        `if [ -f ${shQuote(prev.environmentFile)} ]; then cp -p ${shQuote(prev.environmentFile)} ${shQuote(paths.environmentFile)}; ` +
        `else rm -f ${shQuote(paths.environmentFile)}; fi`;
    await remote.runChecked(["sh", "-c", script]);
}

/**
 * Stop-first rollout, run as the plan in core/rollout-plan.ts says: keep the
 * previous unit, stop, wait for GPU memory release, write the new unit, start
 * and gate it (readiness, checks, healthy window), retrying a start that can
 * pass on retry; on failure put the previous unit back, start and gate it,
 * and fail with the cause and the journal tail, recording what really runs
 * so the next `up` tries the change again. This loop only runs the steps.
 */
async function rollout(id: string, inputs: ServiceInputs, live: LiveService, recorded?: ServiceOutputs): Promise<ServiceOutputs> {
    const remote = remoteFor(inputs.connection, "server");
    const unit = inputs.unitName;
    const secret = (text: string) => redact(text, [inputs.apiKey]);
    say(`[${unit}] rollout: ${differences(inputs, live).join("; ")}`);
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
    const previous = previousServer(inputs, live);
    for (;;) {
        for (const line of lines) say(secret(line));
        if (step.kind === "finish") break;
        let observed: RolloutObservation;
        try {
            observed = await runStep(remote, inputs, previous, step);
        } catch (e) {
            throw await stepError(id, remote, inputs, recorded, onStepError(state), step, e);
        }
        ({ state, step, say: lines } = advanceRollout(state, observed));
    }
    const result = step.result;
    if (result.ok) {
        const after = await readLive(remote, inputs);
        const outs = outputsFrom(inputs, after, sha256(`${inputs.unitText}\n${environmentFileHash(inputs.environmentFile)}\n${Date.now()}`));
        recordGated(outs.revision);
        return outs;
    }

    const cause = secret(result.cause);
    const journal = secret(result.journal.slice(-20).join("\n    "));
    const after = await readLive(remote, inputs);
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
    id: string,
    remote: RemoteHost,
    inputs: ServiceInputs,
    recorded: ServiceOutputs | undefined,
    after: { holds: "new" | "previous"; putBack: boolean },
    step: RolloutStep,
    e: unknown,
): Promise<unknown> {
    const unit = inputs.unitName;
    const message = redact(e instanceof Error ? e.message : String(e), [inputs.apiKey]);
    say(`[${unit}] the rollout stopped at its ${step.kind} step: ${message}`);
    let holds = after.holds;
    let outcome = "nothing was put back";
    if (after.putBack) {
        try {
            say(`[${unit}] putting the previous unit back and starting it (not gated)`);
            await restorePrevious(remote, unit);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            await remote.run(["systemctl", "reset-failed", unit]);
            await remote.runChecked(["systemctl", "start", unit]);
            holds = "previous";
            outcome = "the previous unit was put back and started (not gated: check it with journalctl)";
        } catch (again) {
            outcome = `putting the previous unit back failed too: ${redact(again instanceof Error ? again.message : String(again), [inputs.apiKey])}`;
        }
    }
    let live: LiveService;
    try {
        live = await readLive(remote, inputs);
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
 * What the gate of the previous unit checks: its own served name, port and
 * speculative algorithm (from the unit kept on the box), so a rollback of a
 * change to one of them is judged by the config that runs again. The API key
 * is read from the restored environment file when it starts (runStep).
 */
function previousServer(inputs: ServiceInputs, live: LiveService): ServiceInputs {
    const fields = live.unit?.fields;
    if (!fields) return inputs;
    let endpoint = inputs.endpoint;
    if (fields.port !== undefined) {
        const url = new URL(inputs.endpoint);
        url.port = String(fields.port);
        endpoint = url.toString().replace(/\/$/, "");
    }
    return {
        ...inputs,
        endpoint,
        servedModelName: fields.servedName ?? inputs.servedModelName,
        speculativeAlgorithm: fields.speculative?.algorithm,
    };
}

/** Runs one step of the rollout plan on the box and says what it found. */
async function runStep(remote: RemoteHost, inputs: ServiceInputs, previous: ServiceInputs, step: RolloutStep): Promise<RolloutObservation> {
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
            const gate = await startAndWait(remote, server, attempt);
            return {
                kind: "started",
                result: gate.ok ? { ok: true } : { ok: false, cause: gate.cause, startLines: gate.startLines, lastJournalLines: gate.lastJournalLines },
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

/** GPU memory below this counts as released (the driver's own use stays far below). */
const GPU_FREE_THRESHOLD_MIB = 1024;

/** `recorded`: the state's record before this update (absent for a create). */
async function createOrUpdate(id: string, inputs: ServiceInputs, recorded?: ServiceOutputs): Promise<ServiceOutputs> {
    const remote = remoteFor(inputs.connection, "server");
    const live = await readLive(remote, inputs);
    assertMayWrite(remote, inputs, live);
    const why = differences(inputs, live);
    if (why.length === 0) {
        // Active but not answering yet: a server that is starting by itself (its container was just started). Record what it runs once it serves.
        let now = live.activeState === "active" && live.liveArgs === null ? await untilServing(id, remote, inputs, live) : live;
        if (now.unit && now.unit.text !== inputs.unitText) {
            // Only the lines that record who manages it differ (the owner, the header): rewrite the file, keep the server running.
            await remote.writeFile(unitPaths(inputs.unitName).unit, inputs.unitText, 0o644);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            say(`[${inputs.unitName}] rewrote the unit file's header (owner ${inputs.owner ?? "(none)"}); the server runs on, not restarted`);
            now = { ...now, unit: readableUnit(inputs.unitText), owner: selfOwner(inputs) };
        }
        if (!live.enabled) await remote.runChecked(["systemctl", "enable", inputs.unitName]);
        say(`[${inputs.unitName}] already runs the declared config; not restarted`);
        return outputsFrom(inputs, { ...now, enabled: true }, sha256(`${inputs.unitText}\n${live.secretsHash}`));
    }
    await assertBoxServes(remote, inputs.unitName, inputs.expectBox);
    return rollout(id, inputs, live, recorded);
}

/**
 * Waits (within the startup budget) until an active server that does not
 * answer yet serves, without restarting it (it is starting by itself, e.g.
 * in a container just started), and reads the box again. One that does not
 * serve fails the update with the cause, recording the box as it is.
 */
async function untilServing(id: string, remote: RemoteHost, inputs: ServiceInputs, live: LiveService): Promise<LiveService> {
    say(`[${inputs.unitName}] runs the declared config but does not answer yet; waiting for it (not restarted)`);
    const gate = await waitServing(remote, inputs, await journalPosition(remote, inputs.unitName), { healthOnlyGracePolls: 0 });
    if (gate.ok) {
        const now = await readLive(remote, inputs);
        // The ReadinessCheck of this revision only confirms it (no second wait, no second report).
        recordGated(sha256(`${inputs.unitText}\n${now.secretsHash}`));
        return now;
    }
    const cause = redact(describeFailure(gate.cause), [inputs.apiKey]);
    const journal = redact(gate.lastJournalLines.slice(-20).join("\n    "), [inputs.apiKey]);
    throw new ResourceInitFailed(
        `${inputs.unitName} runs the declared config but is not serving: ${cause}; it was not restarted ` +
            `(systemctl restart ${inputs.unitName} on the box, or change the config).\n  Last journal lines:\n    ${journal}`,
        id,
        outputsFrom(inputs, live, sha256(`${inputs.unitText}\n${live.secretsHash}`)),
        [`${inputs.unitName} is not serving: ${cause}`],
    );
}

/** activeState recorded when the container the unit lives in is not running. */
const CONTAINER_STOPPED = "container-stopped";

/** The unknown-value placeholder dynamic providers see in preview (e.g. a key @pulumi/random has not made yet). */
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export const provider: ResourceProvider<ServiceInputs, ServiceOutputs> = {
    async check(olds, news) {
        const failures: { property: string; reason: string }[] = [];
        // The config validation checks the key too; this covers a key from anywhere else (a generated one, another program).
        if (typeof news.apiKey === "string" && news.apiKey !== UNKNOWN) {
            const problem = apiKeyProblem(news.apiKey);
            if (problem) failures.push({ property: "apiKey", reason: `sglang-serve:apiKey ${problem}` });
        }
        // After a refresh, olds.owner is the owner the unit on the box records.
        const live = olds.owner === undefined ? undefined : parseOwner(olds.owner);
        const self = news.owner === undefined ? undefined : parseOwner(news.owner);
        if (live && self) {
            const decision = decideWrite({ live, self, takeOverFrom: news.takeOverFrom, unit: news.unitName, where: news.connection.address });
            if (decision.kind === "refuse") failures.push({ property: "owner", reason: decision.message });
        }
        // After a refresh, olds.boxFacts is what the box has: the SGLang release, the model's config.json.
        failures.push(...boxFailures(news.expectBox, olds.boxFacts));
        if (failures.length > 0) return { inputs: news, failures };
        const changed = changedKeys(olds, news, PROCESS_FIELDS)
            .filter((k) => k !== "unitText" || !sameServer(olds.unitText, news.unitText))
            .map(String);
        const flags = changedNames(olds.flags, news.flags);
        const env = changedNames(olds.environment, news.environment);
        const secrets = environmentFileHash(olds.environmentFile) !== environmentFileHash(news.environmentFile) && olds.unitName !== undefined;
        let restart = "no";
        if (olds.unitName === undefined) restart = "yes: new server";
        else if (changed.length > 0 || secrets) {
            const what = [...flags, ...env, ...(secrets ? ["secrets"] : [])];
            restart = `yes: ${what.length ? what.join(", ") : "unit file"} changed`;
        }
        return { inputs: { ...news, restart } };
    },
    async diff(_id, olds, news) {
        if (olds.unitName !== news.unitName) {
            return { changes: true, replaces: ["unitName"], deleteBeforeReplace: true };
        }
        const changed = changedKeys(olds, news, ["providerVersion", "connection", ...PROCESS_FIELDS, "endpoint", "readiness"]);
        const drift =
            olds.activeState !== "active" ||
            olds.enabled !== true ||
            olds.liveMatchesUnit === false ||
            olds.secretsHash !== environmentFileHash(news.environmentFile);
        return { changes: changed.length > 0 || drift, replaces: [] };
    },
    async create(inputs) {
        const id = `${inputs.connection.address}:${inputs.connection.vmid ?? "-"}:${inputs.unitName}`;
        const outs = await keepingProviderModule(inputs, () => createOrUpdate(id, inputs));
        return { id, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        const remote = remoteFor(props.connection, "server");
        let live: LiveService;
        try {
            live = await readLive(remote, props, { refresh: true });
        } catch (e) {
            // `pct exec` into a stopped container: nothing runs, which is drift (the container's `up` starts it), not a failed refresh.
            if (!containerNotRunning(e)) throw e;
            const outs: ServiceOutputs = { ...props, activeState: CONTAINER_STOPPED, liveArgs: null };
            const { revision: _r, activeState: _a, enabled: _e, secretsHash: _s, liveArgs: _l, liveMatchesUnit: _m, boxOwner: _b, ...inputs } = outs;
            return { id, props: outs, inputs: inputs as ServiceInputs };
        }
        if (!live.unit) return { id: "", props: undefined as unknown as ServiceOutputs };
        const boxFacts = props.expectBox ? await readBoxFacts(remote, props.expectBox) : undefined;
        const outs = { ...outputsFrom(props, live, props.revision), ...(boxFacts ? { boxFacts } : {}) };
        // Inputs from the box, so that `preview --refresh` shows box -> declared per field.
        // inputs.owner too is the box's: a unit another stack took over shows (and is refused) at the next preview.
        const { revision: _r, activeState: _a, enabled: _e, secretsHash: _s, liveArgs: _l, liveMatchesUnit: _m, boxOwner, ...inputs } = outs;
        return { id, props: outs, inputs: { ...inputs, owner: boxOwner } as ServiceInputs };
    },
    async update(id, olds, news) {
        return { outs: await keepingProviderModule(news, () => createOrUpdate(id, news, olds)) };
    },
    async delete(_id, props) {
        const remote = remoteFor(props.connection, "server");
        // Read the box, not the state: another stack may have taken the unit over since.
        const read = await readUnit(remote, props.unitName, environmentFileHash(props.environmentFile));
        const live = read.unitText === null ? undefined : unitOwner(read.unitText);
        const decision = decideDelete({ live, self: selfOwner(props), unit: props.unitName, where: remote.describe() });
        if (decision.kind === "leave") {
            say(decision.message);
            return;
        }
        const paths = unitPaths(props.unitName);
        const prev = previousPaths(props.unitName);
        await remote.run(["systemctl", "disable", "--now", props.unitName]);
        await remote.runChecked(["rm", "-f", paths.unit, paths.environmentFile, prev.unit, prev.environmentFile]);
        await remote.runChecked(["systemctl", "daemon-reload"]);
        say(`[${props.unitName}] stopped and removed (the model and the container are untouched)`);
    },
};
