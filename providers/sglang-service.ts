import { createHash, randomBytes } from "crypto";
import type { ResourceProvider } from "./resource-provider";
import { assertBoxServes, boxFailures, BoxFactsRead, readBoxFacts } from "./box-facts";
import type { BoxExpectations } from "../core/box-facts";
import type { Connection } from "../components/connection";
import { apiKeyProblem } from "../core/config";
import { decideDelete, decideWrite, formatOwner, parseOwner } from "../core/ownership";
import { describeFailure } from "../core/readiness";
import { shQuote } from "../core/shell";
import { UnitOwner, unitOwner, unitTextWithoutOwner } from "../core/systemd-unit";
import { parseUnitReadOutput, renderUnitReadScript, UnitReadRequest, UnitReadResult } from "../core/unit-read";
import { Coalescer } from "../remote/coalesce";
import { liveArgsMismatch, unitView, UnitView, previousPaths, unitPaths } from "./unit-view";
import { redact, remoteFor, say } from "./context";
import { changedKeys, changedNames } from "./diff-inputs";
import { ReadinessSettings, recordGated, startAndWait, verifyServing } from "./rollout-gate";
import { waitForGpuMemoryReleased } from "../remote/gpu-release";
import type { RemoteHost } from "../remote/remote-host";

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
    readiness: ReadinessSettings;
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

export function sha256(text: string | undefined): string {
    return text === undefined ? "" : createHash("sha256").update(text).digest("hex");
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
    const marker = `sglang-serve-${randomBytes(8).toString("hex")}`;
    const result = await reqs[0]!.remote.runChecked(["sh", "-c", renderUnitReadScript(units, marker)]);
    return parseUnitReadOutput(result.stdout, units, marker);
});

function readUnit(remote: RemoteHost, unitName: string): Promise<UnitReadResult> {
    const t = remote.target;
    const credentials = createHash("sha256").update(`${t.privateKey ?? ""}\0${t.passphrase ?? ""}\0${t.agent ?? ""}\0${t.hostKey}`).digest("hex");
    const paths = unitPaths(unitName);
    return unitReads.request(`${remote.describe()} ${credentials}`, {
        remote,
        unit: { unitName, unitPath: paths.unit, environmentFilePath: paths.environmentFile },
    });
}

async function readLive(remote: RemoteHost, inputs: ServiceInputs): Promise<LiveService> {
    const read = await readUnit(remote, inputs.unitName);
    const unit = read.unitText === null ? null : readableUnit(read.unitText);
    const activeState = read.activeState;
    let liveArgs: Record<string, unknown> | null = null;
    let liveMatchesUnit = true;
    if (unit && activeState === "active") {
        const serving = await verifyServing(inputs, remote);
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
    if (live.secretsHash !== sha256(inputs.environmentFile)) why.push("secrets changed");
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
 * Stop-first rollout: the GPUs cannot hold the old and the new server at once.
 * Stop, wait for GPU memory release, write the new unit (keeping the previous
 * one), start, gate on readiness. If the gate fails: put the previous unit
 * back, start it, gate again, and fail with the cause and the journal tail,
 * recording what really runs so the next `up` tries the change again.
 */
async function rollout(id: string, inputs: ServiceInputs, live: LiveService, providerVersionKey: unknown): Promise<ServiceOutputs> {
    const remote = remoteFor(inputs.connection);
    const unit = inputs.unitName;
    const why = differences(inputs, live);
    say(`[${unit}] rollout: ${why.join("; ")}`);
    const hadPrevious = live.unit !== null && (await keepPrevious(remote, unit));
    const previousWorked = hadPrevious && live.activeState === "active";

    await stopAndRelease(remote, inputs, hadPrevious);
    await writeServiceFiles(remote, inputs);
    await remote.runChecked(["systemctl", "daemon-reload"]);
    await remote.runChecked(["systemctl", "enable", unit]);
    const gate = await startAndWait(remote, inputs);
    if (gate.ok) {
        const after = await readLive(remote, inputs);
        const outs = outputsFrom(inputs, after, sha256(`${inputs.unitText}\n${sha256(inputs.environmentFile)}\n${Date.now()}`));
        recordGated(outs.revision);
        return outs;
    }

    const secret = (text: string) => redact(text, [inputs.apiKey]);
    const cause = secret(describeFailure(gate.cause));
    const journal = secret(gate.lastJournalLines.slice(-20).join("\n    "));
    let outcome: string;
    if (hadPrevious) {
        say(`[${unit}] new config did not become ready (${cause}); putting the previous unit back`);
        await stopAndRelease(remote, inputs, false);
        await restorePrevious(remote, unit);
        await remote.runChecked(["systemctl", "daemon-reload"]);
        const again = await startAndWait(remote, inputs);
        outcome = again.ok
            ? "the previous unit was put back and is ready again"
            : `the previous unit was put back but did not become ready either: ${secret(describeFailure(again.cause))}` +
              (previousWorked ? "" : " (it was not running before this rollout)");
    } else {
        // Nothing ran before: stop the failing unit so it does not restart-loop on the GPUs.
        await remote.run(["systemctl", "stop", unit]);
        outcome = "there was no previous unit; the new one is left stopped for inspection (systemctl cat / journalctl)";
    }
    const after = await readLive(remote, inputs);
    const properties = {
        ...outputsFrom(inputs, after, sha256(`failed\n${Date.now()}`)),
        __provider: providerVersionKey,
    };
    const error = new Error(
        `rollout of ${unit} failed: ${cause}; ${outcome}.\n  Last journal lines:\n    ${journal}`,
    ) as Error & { id: string; properties: unknown; reasons: string[] };
    error.id = id;
    error.properties = properties;
    error.reasons = [`rollout of ${unit} failed: ${cause}`, outcome, `last journal lines:\n    ${journal}`];
    throw error;
}

/** GPU memory below this counts as released (the driver's own use stays far below). */
const GPU_FREE_THRESHOLD_MIB = 1024;

/**
 * Stops the unit and waits (bounded) until nvidia-smi shows the GPU memory
 * released: the new server cannot start beside the old one. If it is not
 * released in time, the unit that ran is started again and the rollout fails
 * before anything was written.
 */
async function stopAndRelease(remote: RemoteHost, inputs: ServiceInputs, restartOnTimeout: boolean): Promise<void> {
    await remote.run(["systemctl", "stop", inputs.unitName]);
    const released = await waitForGpuMemoryReleased(remote, {
        gpus: inputs.gpuIndices,
        thresholdMiB: GPU_FREE_THRESHOLD_MIB,
        timeoutMs: inputs.readiness.gpuReleaseTimeoutSeconds * 1000,
        onProgress: say,
    });
    if (!released.ok) {
        if (restartOnTimeout) await remote.run(["systemctl", "start", inputs.unitName]);
        throw new Error(
            `[${inputs.unitName}] GPU memory was not released within ${inputs.readiness.gpuReleaseTimeoutSeconds} s ` +
                `after stopping the server (${released.reason}); nothing was changed` +
                (restartOnTimeout ? " and the previous server was started again" : ""),
        );
    }
}

async function createOrUpdate(id: string, inputs: ServiceInputs, providerKey: unknown): Promise<ServiceOutputs> {
    const remote = remoteFor(inputs.connection);
    const live = await readLive(remote, inputs);
    assertMayWrite(remote, inputs, live);
    const why = differences(inputs, live);
    if (why.length === 0) {
        let now = live;
        if (live.unit && live.unit.text !== inputs.unitText) {
            // Only the recorded owner differs: rewrite the file, keep the server running.
            await remote.writeFile(unitPaths(inputs.unitName).unit, inputs.unitText, 0o644);
            await remote.runChecked(["systemctl", "daemon-reload"]);
            say(`[${inputs.unitName}] recorded owner ${inputs.owner ?? "(none)"} in the unit file; the server runs on, not restarted`);
            now = { ...live, unit: readableUnit(inputs.unitText), owner: selfOwner(inputs) };
        }
        if (!live.enabled) await remote.runChecked(["systemctl", "enable", inputs.unitName]);
        say(`[${inputs.unitName}] already runs the declared config; not restarted`);
        return outputsFrom(inputs, { ...now, enabled: true }, sha256(`${inputs.unitText}\n${live.secretsHash}`));
    }
    await assertBoxServes(remote, inputs.unitName, inputs.expectBox);
    return rollout(id, inputs, live, providerKey);
}

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
        const secrets = sha256(olds.environmentFile) !== sha256(news.environmentFile) && olds.unitName !== undefined;
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
            olds.secretsHash !== sha256(news.environmentFile);
        return { changes: changed.length > 0 || drift, replaces: [] };
    },
    async create(inputs) {
        const id = `${inputs.connection.address}:${inputs.connection.vmid ?? "-"}:${inputs.unitName}`;
        const outs = await createOrUpdate(id, inputs, (inputs as unknown as { __provider?: unknown }).__provider);
        return { id, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        const remote = remoteFor(props.connection);
        const live = await readLive(remote, props);
        if (!live.unit) return { id: "", props: undefined as unknown as ServiceOutputs };
        const boxFacts = props.expectBox ? await readBoxFacts(remote, props.expectBox) : undefined;
        const outs = { ...outputsFrom(props, live, props.revision), ...(boxFacts ? { boxFacts } : {}) };
        // Inputs from the box, so that `preview --refresh` shows box -> declared per field.
        // inputs.owner too is the box's: a unit another stack took over shows (and is refused) at the next preview.
        const { revision: _r, activeState: _a, enabled: _e, secretsHash: _s, liveArgs: _l, liveMatchesUnit: _m, boxOwner, ...inputs } = outs;
        return { id, props: outs, inputs: { ...inputs, owner: boxOwner } as ServiceInputs };
    },
    async update(id, _olds, news) {
        return { outs: await createOrUpdate(id, news, (news as unknown as { __provider?: unknown }).__provider) };
    },
    async delete(_id, props) {
        const remote = remoteFor(props.connection);
        // Read the box, not the state: another stack may have taken the unit over since.
        const read = await readUnit(remote, props.unitName);
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
