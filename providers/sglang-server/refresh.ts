/**
 * What the box holds for a service (unit file, secrets hash, systemd state,
 * the running server's args) and the service's outputs built from it; the
 * refresh (`read`) of an SglangService.
 */
import { formatOwner, parseOwner } from "../../core/unit/ownership";
import { acceptLengthDrift, DEFAULT_ACCEPT_LENGTH_DROP_LIMIT } from "../../core/serving/serving-figures";
import { UnitOwner, unitOwner, unitTextOfServer } from "../../core/unit/systemd-unit";
import { containerNotRunning, type RemoteHost } from "../../remote/remote-host";
import { drafterPath } from "../../core/box/box-facts";
import { boxFactsOf, drafterDigestOf } from "./facts";
import { stagedWeightsDrift, verifiesWeights } from "./weights";
import { changedNames } from "../diff-inputs";
import type { ProviderRun } from "../provider-run";
import { verifyServing } from "../serving";
import { expectedEnvironmentHash, recordedSecrets, SECRETS_AS_DECLARED, withoutSecretValues } from "./secrets";
import type { ServiceOutputs, ServiceProps, ServingVerified } from "./props";
import { liveArgsMismatch, unitView, UnitView } from "../unit-view";

/** Two unit texts that differ at most in the owner they record or their start budget run the same server (core/unit/systemd-unit.ts unitTextOfServer). */
export function sameServer(a: string | undefined, b: string | undefined): boolean {
    return a === b || (a !== undefined && b !== undefined && unitTextOfServer(a) === unitTextOfServer(b));
}

/** The owner this stack records, or undefined for a state written before owners were. */
export function selfOwner(inputs: ServiceProps): UnitOwner | undefined {
    return inputs.owner === undefined ? undefined : parseOwner(inputs.owner);
}

/** What the box holds now: unit, secrets hash, systemd state, live args. */
export interface LiveService {
    unit: UnitView | null;
    /** The owner the unit file records. */
    owner: UnitOwner | undefined;
    secretsHash: string;
    activeState: string;
    enabled: boolean;
    liveArgs: Record<string, unknown> | null;
    liveMatchesUnit: boolean;
    /** The running server's avg accept length, when it speculates and reports one. */
    acceptLength: number | null;
}

/** A unit edited beyond parsing is still drift to report and repair, not a failed refresh. */
export function readableUnit(text: string): UnitView {
    try {
        return unitView(text);
    } catch (e) {
        return { text, command: [`(unreadable unit: ${(e as Error).message})`], flags: {}, environment: {} };
    }
}

/**
 * Reads the unit (batched with the run's other unit reads of the box) and,
 * when it is active, looks at the server. `refresh`: the look is shared with
 * the ReadinessCheck's refresh when that one is in flight (the run's looks).
 */
export async function readLive(run: ProviderRun, remote: RemoteHost, inputs: ServiceProps, opts: { refresh?: boolean } = {}): Promise<LiveService> {
    const expected = expectedEnvironmentHash(inputs);
    const read = await run.unitReads.read(remote, inputs.unitName, expected);
    const unit = read.unitText === null ? null : readableUnit(read.unitText);
    const activeState = read.activeState;
    let liveArgs: Record<string, unknown> | null = null;
    let liveMatchesUnit = true;
    let acceptLength: number | null = null;
    if (unit && activeState === "active") {
        const serving = await verifyServing(inputs, remote, { shared: opts.refresh ? run.looks : undefined });
        acceptLength = serving.acceptLength;
        if (serving.liveArgs) {
            liveArgs = serving.liveArgs as Record<string, unknown>;
            liveMatchesUnit = liveArgsMismatch(unit, serving.liveArgs).length === 0;
        }
    }
    return {
        unit,
        owner: read.unitText === null ? undefined : unitOwner(read.unitText),
        secretsHash: recordedSecrets(read.environmentFileHash, expected),
        activeState,
        enabled: read.enabled,
        liveArgs,
        liveMatchesUnit,
        acceptLength,
    };
}

/**
 * What a state written by an older version may hold besides: `gatePassed`,
 * servingVerified's name before issue 22. It was an earlier run's, so it means
 * nothing now: dropped wherever outputs are built from a record.
 */
interface OlderRecord {
    gatePassed?: unknown;
}

/** The outputs: the props with what the box holds on top; `servingVerified` only when this create or update's readiness wait succeeded (or kept by a refresh). */
export function outputsFrom(props: ServiceProps, live: LiveService, revision: string, servingVerified?: ServingVerified): ServiceOutputs {
    // The secret values never reach the state (a state written before this version held them: dropped here).
    const { servingVerified: _earlier, gatePassed: _older, ...inputs } = withoutSecretValues(props as Partial<ServiceOutputs> & OlderRecord & ServiceProps);
    const fromBox = live.unit
        ? { unitText: live.unit.text, command: live.unit.command, flags: live.unit.flags, environment: live.unit.environment }
        : { unitText: "", command: [], flags: {}, environment: {} };
    return {
        ...inputs,
        ...fromBox,
        boxOwner: live.owner ? formatOwner(live.owner) : undefined,
        restart: "no",
        revision,
        ...(servingVerified ? { servingVerified } : {}),
        activeState: live.activeState,
        enabled: live.enabled,
        secretsHash: live.secretsHash,
        liveArgs: live.liveArgs,
        liveMatchesUnit: live.liveMatchesUnit,
    };
}

/** Whether the box runs exactly what is declared, and if not, why (for messages and the restart decision). */
export function differences(inputs: ServiceProps, live: LiveService): string[] {
    const why: string[] = [];
    if (!live.unit) return ["the unit is not on the box"];
    if (!sameServer(live.unit.text, inputs.unitText)) {
        const flags = changedNames(inputs.flags, live.unit.flags);
        const env = changedNames(inputs.environment, live.unit.environment);
        why.push(flags.length || env.length ? `changed: ${[...flags, ...env].join(", ")}` : "unit file differs");
    }
    if (live.secretsHash !== (inputs.environmentFile === undefined ? "" : SECRETS_AS_DECLARED)) why.push("secrets changed");
    if (live.activeState !== "active") why.push(`service is ${live.activeState}`);
    if (!live.liveMatchesUnit) why.push("the running server does not run the unit file's args (changed, not restarted)");
    return why;
}

/**
 * Why the box differs from the declared server, for the rollout: differences()
 * and, from the record (the refreshed state), a drafter folder changed in place
 * since the running server loaded it.
 */
export function rolloutReasons(inputs: ServiceProps, live: LiveService, recorded?: Partial<ServiceOutputs>): string[] {
    const drafter = recorded ? drafterChangedInPlace(recorded) : undefined;
    const accept = recorded?.acceptLengthDrift;
    // Staged files changed since they were verified: the rollout's staging refuses to serve over them, naming them (before the stop).
    const weights = recorded?.weightsDrift?.length ? [`staged weights changed: ${recorded.weightsDrift.join("; ")}`] : [];
    return [...differences(inputs, live), ...(drafter ? [drafter] : []), ...(accept ? [accept] : []), ...weights];
}

/** The drafter folder changed since the running server loaded it (the two digests the record holds differ). */
export function drafterChangedInPlace(outputs: Partial<ServiceOutputs>): string | undefined {
    const { drafterDigest: loaded, drafterDigestOnBox: now } = outputs;
    if (loaded === undefined || now === undefined || loaded === now) return undefined;
    return `the drafter folder ${drafterPath(outputs.expectBox) ?? ""} changed in place since the server loaded it (digest ${loaded} -> ${now})`;
}

/** activeState recorded when the container the unit lives in is not running. */
const CONTAINER_STOPPED = "container-stopped";

/** The inputs a refresh reads back: the outputs without the fields only outputs have. */
function inputsOf(outs: ServiceOutputs): ServiceProps {
    const {
        revision: _r,
        servingVerified: _v,
        activeState: _a,
        enabled: _e,
        secretsHash: _s,
        liveArgs: _l,
        liveMatchesUnit: _m,
        boxOwner: _b,
        ...inputs
    } = outs;
    return inputs;
}

/**
 * The refresh: the box as it is, and inputs read back from it, so that
 * `preview --refresh` shows box -> declared per field. inputs.owner too is
 * the box's: a unit another stack took over shows (and is refused) at the
 * next preview. A unit gone reads as gone (blank id).
 */
export async function refreshService(
    run: ProviderRun,
    id: string,
    props: ServiceOutputs,
): Promise<{ id: string; props?: ServiceOutputs; inputs?: ServiceProps }> {
    const remote = run.remoteFor(props.connection, "server");
    let live: LiveService;
    try {
        live = await readLive(run, remote, props, { refresh: true });
    } catch (e) {
        // `pct exec` into a stopped container: nothing runs, which is drift (the container's `up` starts it), not a failed refresh.
        if (!containerNotRunning(e)) throw e;
        const { gatePassed: _older, ...recorded } = withoutSecretValues(props as ServiceOutputs & OlderRecord);
        const outs: ServiceOutputs = { ...recorded, activeState: CONTAINER_STOPPED, liveArgs: null };
        return { id, props: outs, inputs: inputsOf(outs) };
    }
    if (!live.unit) return { id: "" };
    // The model's facts, and what the drafter folder holds now beside the digest the running server loaded (kept from the record):
    // read once in this run, for check and the rollout too.
    // The staged revisions against their manifests (issue 33): sizes and mtimes, or every sha256 under `npm run drift -- --verify`.
    const [boxFacts, drafterNow, weightsDrift] = await Promise.all([
        props.expectBox ? boxFactsOf(run, remote, props.expectBox) : undefined,
        drafterDigestOf(run, remote, props.expectBox),
        stagedWeightsDrift(remote, props, verifiesWeights()),
    ]);
    // The running server's accept length against the record, and the staged files: read afresh at every refresh.
    const { acceptLengthDrift: _earlier, weightsDrift: _before, ...recorded } = props;
    const limit = props.readiness.acceptLengthDropLimit ?? DEFAULT_ACCEPT_LENGTH_DROP_LIMIT;
    const acceptDrift = acceptLengthDrift(live.acceptLength, props.servingFigures, limit);
    const outs = {
        ...outputsFrom(recorded, live, props.revision, props.servingVerified),
        ...(boxFacts ? { boxFacts } : {}),
        ...(drafterNow !== undefined ? { drafterDigestOnBox: drafterNow } : {}),
        ...(acceptDrift !== undefined ? { acceptLengthDrift: acceptDrift } : {}),
        ...(weightsDrift.length > 0 ? { weightsDrift } : {}),
    };
    return { id, props: outs, inputs: { ...inputsOf(outs), owner: outs.boxOwner } };
}
