/**
 * A rollout of a server behind the gateway (service props `gateway`): the
 * server is taken out of the gateway, drained until SGLang's own count of the
 * requests it holds is 0 (or the drain timeout), rolled out, and put back,
 * whether the rollout kept the new config or rolled back to the old one; the
 * next server's rollout waits for it (index.ts chains them). The gateway's
 * own drain is a fixed settle time, not a count (smg 1.13.0), hence the
 * server's.
 */
import { GatewayWorker, parseServerLoad, serverLoadArgv } from "../../core/gateway/gateway";
import { serviceNameOf } from "../../core/unit/unit-read";
import { GatewayAdmin } from "../../remote/gateway-admin";
import { waitFor } from "../../remote/await/wait-for";
import type { RemoteHost } from "../../remote/remote-host";
import type { ProviderRun } from "../provider-run";
import { say } from "../say";
import type { ServiceProps } from "./props";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** How long smg may take to drop a removed worker from its list (its drain settle time is 5 s), and to call a re-added one ready. */
const LEAVE_TIMEOUT_MS = 30_000;
const READY_TIMEOUT_MS = 120_000;

/** Runs `rollout` with the server out of its gateway; without a gateway, or one that does not answer, runs it as it is. */
export async function outOfGateway<T>(run: ProviderRun, inputs: ServiceProps, rollout: () => Promise<T>): Promise<T> {
    const g = inputs.gateway;
    if (!g) return rollout();
    const tag = `[${inputs.unitName}]`;
    const admin = new GatewayAdmin(run.remoteFor(g.connection, "server"), g.name, g.adminUrl);
    let listed: GatewayWorker[];
    try {
        listed = await admin.workers();
    } catch (e) {
        say(`${tag} the gateway ${g.name} does not answer (${(e as Error).message.slice(0, 200)}): rolling out without taking the server out of it`);
        return rollout();
    }
    const worker = listed.find((w) => w.url === g.workerUrl);
    if (worker) {
        say(`${tag} taking the server out of the gateway ${g.name} (worker ${g.workerUrl})`);
        await admin.remove(worker);
        await waitFor({
            tag,
            what: `the gateway to let go of ${g.workerUrl}`,
            timeoutMs: LEAVE_TIMEOUT_MS,
            say,
            ok: async () => !(await admin.workers()).some((w) => w.url === g.workerUrl),
        });
        await drain(run.remoteFor(inputs.connection, "server"), inputs, g.drainTimeoutSeconds);
    } else {
        say(`${tag} is not a worker of the gateway ${g.name} now; its rollout takes nothing out, and the gateway registers it`);
    }
    let result: T;
    try {
        result = await rollout();
    } catch (e) {
        // The rollback put the previous config back: it serves, so it goes back into the gateway too.
        if (worker)
            await backIn(tag, admin, g.workerUrl).catch((again: Error) => say(`${tag} putting the server back into the gateway failed too: ${again.message}`));
        throw e;
    }
    if (worker) await backIn(tag, admin, g.workerUrl);
    return result;
}

/** Waits until SGLang's own count of the requests the server holds is 0, at most `timeoutSeconds`; says what it waits for. */
async function drain(remote: RemoteHost, inputs: ServiceProps, timeoutSeconds: number): Promise<void> {
    const tag = `[${inputs.unitName}]`;
    const started = Date.now();
    let said = started;
    for (;;) {
        const r = await remote.run(serverLoadArgv(serviceNameOf(inputs.unitName), inputs.endpoint));
        const held = parseServerLoad(r.stdout);
        const elapsed = Math.round((Date.now() - started) / 1000);
        if (held === undefined) {
            say(`${tag} the server gives no count of its requests (/v1/loads): not waiting for them; its stop waits for what is in flight`);
            return;
        }
        if (held === 0) {
            say(`${tag} drained: no request in flight (${elapsed} s)`);
            return;
        }
        if (elapsed >= timeoutSeconds) {
            say(
                `${tag} still ${held} request(s) in flight after ${elapsed} s (gateway.rolling.drainTimeoutSeconds): stopping it; SGLang finishes them before it exits`,
            );
            return;
        }
        if (Date.now() - said >= 5000) {
            say(`${tag} draining: ${held} request(s) in flight — ${elapsed} s`);
            said = Date.now();
        }
        await sleep(500);
    }
}

async function backIn(tag: string, admin: GatewayAdmin, url: string): Promise<void> {
    say(`${tag} putting the server back into the gateway (worker ${url})`);
    await admin.add(url);
    await waitFor({
        tag,
        what: `the gateway to call ${url} ready`,
        timeoutMs: READY_TIMEOUT_MS,
        say,
        ok: async () => (await admin.workers()).some((w) => w.url === url && w.status === "ready"),
    });
}
