/**
 * The SglangGateway's verbs: SGLang's model gateway (smg) on its box, its
 * release staged into a venv of its own, its unit and 0600 key file written,
 * and the declared servers registered as its workers through its admin API
 * (asked on the box, with the key read there). A refresh reads the worker
 * list back: a worker missing, extra or not ready is drift that `up` repairs.
 */
import { sha256 } from "../core/digest";
import { deployApiKeyFrom, gatewayAdminKeyFrom } from "../core/secrets/deploy-secrets";
import { describeWorkerDrift, GatewayWorker, hasWorkerDrift, renderGatewayEnvironmentFile, workerDrift } from "../core/gateway/gateway";
import { decideDelete, decideWrite, parseOwner } from "../core/unit/ownership";
import { unitOwner } from "../core/unit/systemd-unit";
import { serviceNameOf } from "../core/unit/unit-read";
import { STAGING_MARKER } from "../core/venv/venv-layout";
import { waitFor } from "../remote/await/wait-for";
import { GatewayAdmin } from "../remote/gateway-admin";
import type { RemoteHost } from "../remote/remote-host";
import { stageVenv } from "../remote/venv-staging";
import { servedByThisProcess } from "./context";
import { changedKeys } from "./diff-inputs";
import type { ProviderRun } from "./provider-run";
import type { CompleteProvider } from "./resource-provider";
import type { GatewayOutputs, GatewayProps } from "./sglang-gateway-props";
import { say } from "./say";
import { unitPaths } from "./unit-view";

/** How long the gateway may take to answer /liveness after a start, and its workers to turn ready. */
const LIVE_TIMEOUT_MS = 60_000;
const WORKERS_READY_TIMEOUT_MS = 120_000;

/** The keys from the deploy run's environment; throws naming what is missing. */
function deployKeys(inputs: GatewayProps): { adminKey: string; apiKey?: string } {
    const admin = gatewayAdminKeyFrom(process.env);
    if (!admin.ok) throw new Error(`[${inputs.unitName}] ${admin.problem}`);
    if (!inputs.requireApiKey) return { adminKey: admin.adminKey };
    const api = deployApiKeyFrom(process.env);
    if (!api.ok) throw new Error(`[${inputs.unitName}] ${api.problem}`);
    return { adminKey: admin.adminKey, apiKey: api.apiKey };
}

async function apply(run: ProviderRun, inputs: GatewayProps): Promise<GatewayOutputs> {
    const tag = `[${inputs.unitName}]`;
    const remote = run.remoteFor(inputs.connection, "server");
    const keys = deployKeys(inputs);
    const envText = renderGatewayEnvironmentFile(keys);
    const live = await run.unitReads.read(remote, inputs.unitName, sha256(envText));
    assertMayWrite(remote, inputs, live.unitText);
    const staged = await remote.run(["sh", "-c", `[ -x "$1/bin/smg" ] && [ ! -e "$1/${STAGING_MARKER}" ]`, "sh", inputs.venv.dir]);
    if (staged.code !== 0) await stageVenv(remote, inputs.venv, inputs.unitName, inputs.owner, { say });
    const paths = unitPaths(inputs.unitName);
    const changed = live.unitText !== inputs.unitText || live.environmentFileHash !== sha256(envText);
    if (changed) {
        await remote.writeFile(paths.environmentFile, envText, 0o600);
        await remote.writeFile(paths.unit, inputs.unitText, 0o644);
        await remote.runChecked(["systemctl", "daemon-reload"]);
    }
    if (!live.enabled) await remote.runChecked(["systemctl", "enable", inputs.unitName]);
    if (changed || live.activeState !== "active") {
        say(`${tag} ${live.unitText === null ? "starting" : "restarting"} the gateway (smg ${inputs.venv.release}) at ${inputs.endpoint}`);
        await remote.runChecked(["systemctl", "restart", inputs.unitName]);
    }
    const admin = new GatewayAdmin(remote, serviceNameOf(inputs.unitName), inputs.adminUrl);
    await waitFor({
        tag,
        what: "the gateway to answer /liveness",
        timeoutMs: LIVE_TIMEOUT_MS,
        say,
        ok: () => admin.live(),
        state: () => `journalctl -u ${inputs.unitName} on the box says why it does not`,
    });
    const registered = await registerWorkers(tag, admin, inputs);
    return { ...inputs, activeState: "active", registered };
}

/** Registers the declared workers that are missing, removes those not declared, and waits until every declared one is ready. */
async function registerWorkers(tag: string, admin: GatewayAdmin, inputs: GatewayProps): Promise<GatewayWorker[]> {
    const declared = inputs.workers.map((w) => w.url);
    const drift = workerDrift(declared, await admin.workers());
    for (const url of drift.missing) {
        say(`${tag} registering worker ${url} (${inputs.workers.find((w) => w.url === url)?.name})`);
        await admin.add(url);
    }
    for (const worker of drift.extra) {
        say(`${tag} removing worker ${worker.url}: no declared server has that URL`);
        await admin.remove(worker);
    }
    let listed: GatewayWorker[] = [];
    await waitFor({
        tag,
        what: `workers ${inputs.workers.map((w) => w.name).join(", ")} to be ready in the gateway`,
        timeoutMs: WORKERS_READY_TIMEOUT_MS,
        say,
        ok: async () => !hasWorkerDrift(workerDrift(declared, (listed = await admin.workers()))),
        state: () => describeWorkerDrift(workerDrift(declared, listed)).join("; "),
    });
    return listed;
}

function assertMayWrite(remote: RemoteHost, inputs: GatewayProps, unitText: string | null): void {
    const self = parseOwner(inputs.owner);
    if (!self) return;
    const decision = decideWrite({ live: unitText === null ? undefined : unitOwner(unitText), self, unit: inputs.unitName, where: remote.describe() });
    if (decision.kind === "refuse") throw new Error(decision.message);
}

/** The gateway as the box has it: its unit's state and, where the run may ask (not with the read-only key), its workers. */
async function read(run: ProviderRun, props: GatewayOutputs): Promise<GatewayOutputs> {
    const remote = run.remoteFor(props.connection, "server");
    const live = await run.unitReads.read(remote, props.unitName, "");
    let registered: GatewayWorker[] | undefined;
    try {
        registered = live.activeState === "active" ? await new GatewayAdmin(remote, serviceNameOf(props.unitName), props.adminUrl).workers() : [];
    } catch (e) {
        say(`[${props.unitName}] the worker list was not read (${(e as Error).message.slice(0, 200)}); the last one recorded stands`);
        registered = props.registered;
    }
    const drift =
        registered === undefined
            ? []
            : describeWorkerDrift(
                  workerDrift(
                      props.workers.map((w) => w.url),
                      registered,
                  ),
              );
    if (drift.length > 0) say(`[${props.unitName}] drift: ${drift.join("; ")}`);
    return { ...props, activeState: live.unitText === null ? "absent" : live.activeState, ...(registered !== undefined ? { registered } : {}) };
}

const INPUT_KEYS: readonly (keyof GatewayProps)[] = [
    "providerVersion",
    "connection",
    "unitName",
    "unitText",
    "venv",
    "adminUrl",
    "endpoint",
    "workers",
    "requireApiKey",
    "owner",
];

export const gatewayProvider = (run: ProviderRun): CompleteProvider<GatewayProps, GatewayOutputs> => ({
    async check(_olds, news) {
        return { inputs: news };
    },
    async diff(_id, olds, news) {
        const changed = changedKeys(olds, news, INPUT_KEYS);
        const drifted =
            olds.activeState !== "active" ||
            (olds.registered !== undefined &&
                hasWorkerDrift(
                    workerDrift(
                        news.workers.map((w) => w.url),
                        olds.registered,
                    ),
                ));
        return {
            changes: changed.length > 0 || drifted,
            replaces: changed.includes("connection") || changed.includes("unitName") ? ["connection"] : [],
            deleteBeforeReplace: true,
        };
    },
    async create(inputs) {
        return { id: `${inputs.adminUrl}#${inputs.unitName}`, outs: await apply(run, inputs) };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        const outs = await read(run, props);
        const { activeState: _a, registered: _r, ...inputs } = outs;
        return { id, props: outs, inputs };
    },
    async update(_id, _olds, news) {
        return { outs: await apply(run, news) };
    },
    async delete(_id, props) {
        const remote = run.remoteFor(props.connection, "server");
        const live = await run.unitReads.read(remote, props.unitName, "");
        const decision = decideDelete({
            live: live.unitText === null ? undefined : unitOwner(live.unitText),
            self: parseOwner(props.owner),
            unit: props.unitName,
            where: remote.describe(),
        });
        if (decision.kind === "leave") {
            say(decision.message);
            return;
        }
        const paths = unitPaths(props.unitName);
        await remote.run(["systemctl", "disable", "--now", props.unitName]);
        await remote.runChecked(["rm", "-f", paths.unit, paths.environmentFile]);
        await remote.runChecked(["systemctl", "daemon-reload"]);
        say(`[${props.unitName}] the gateway stopped and removed (its venv and the servers are untouched)`);
    },
});

/** What the provider module stored in state calls (components/dynamic-provider.ts). */
export const provider = servedByThisProcess(gatewayProvider);
