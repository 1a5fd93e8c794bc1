/**
 * The gateway's admin API, asked on its box (core/gateway/gateway.ts
 * GATEWAY_ADMIN_SCRIPT): the admin key is read there from the gateway's 0600
 * EnvironmentFile, never sent from here, and only to a port the gateway's
 * unit holds. A port held by another process is an error naming it, at once:
 * no wait for a liveness that a squatter's answers could fake.
 */
import { AdminAnswer, gatewayAdminArgv, GatewayWorker, parseAdminAnswer, parseWorkers } from "../core/gateway/gateway";
import type { RemoteRunner } from "./remote-host";

export class GatewayAdmin {
    constructor(
        private readonly remote: RemoteRunner,
        private readonly gatewayName: string,
        private readonly adminUrl: string,
    ) {}

    async request(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<AdminAnswer> {
        const r = await this.remote.run(gatewayAdminArgv(this.gatewayName, method, `${this.adminUrl}${path}`, body));
        if (r.code !== 0) return { status: 0, body: (r.stderr || r.stdout).trim().slice(0, 300) };
        const answer = parseAdminAnswer(r.stdout);
        if (answer.refused) throw new Error(`the gateway's admin API was not asked: ${answer.body.slice(0, 300)}`);
        return answer;
    }

    /** GET /liveness answers 200. */
    async live(): Promise<boolean> {
        return (await this.request("GET", "/liveness")).status === 200;
    }

    /** GET /workers; throws with the gateway's answer when it gives no list. */
    async workers(): Promise<GatewayWorker[]> {
        const r = await this.request("GET", "/workers");
        if (r.status !== 200) throw new Error(`GET /workers on the gateway answered ${r.status || "nothing"}: ${r.body.slice(0, 200)}`);
        return parseWorkers(r.body);
    }

    async add(url: string): Promise<void> {
        const r = await this.request("POST", "/workers", { url });
        if (r.status !== 202 && r.status !== 200)
            throw new Error(`registering worker ${url} with the gateway failed (${r.status || "no answer"}): ${r.body.slice(0, 300)}`);
    }

    async remove(worker: GatewayWorker): Promise<void> {
        const r = await this.request("DELETE", `/workers/${encodeURIComponent(worker.id)}`);
        if (r.status !== 202 && r.status !== 200 && r.status !== 404)
            throw new Error(`removing worker ${worker.url} from the gateway failed (${r.status || "no answer"}): ${r.body.slice(0, 300)}`);
    }
}
