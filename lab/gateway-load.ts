// The load generator of the gateway scenarios (tests/e2e/gateway.test.ts and
// `npm run bench`'s rolling phase): chat completions sent through SGLang's
// gateway by a few clients, each sending its next request when the last one
// is answered, for as long as it runs. Every answer that is not a 200 counts.
import { httpPostJson } from "../remote/probe";

export interface GatewayLoad {
    /** Requests answered (or failed) so far, and what each failure was. */
    readonly counts: { sent: number; failed: string[] };
    /** Stops sending; resolves when every client's last request is answered. */
    stop(): Promise<void>;
}

/** Starts `clients` clients sending `chat` to `<gatewayUrl>/v1/chat/completions` with the servers' API key. */
export function loadThroughGateway(gatewayUrl: string, chat: Record<string, unknown>, apiKey: string, clients = 2): GatewayLoad {
    const counts = { sent: 0, failed: [] as string[] };
    let running = true;
    const client = async () => {
        while (running) {
            const r = await httpPostJson(`${gatewayUrl}/v1/chat/completions`, chat, { bearer: apiKey, timeoutMs: 30_000 });
            counts.sent++;
            if (!("status" in r) || r.status !== 200) counts.failed.push(JSON.stringify(r).slice(0, 200));
        }
    };
    const sending = Array.from({ length: clients }, client);
    return {
        counts,
        stop: async () => {
            running = false;
            await Promise.all(sending);
        },
    };
}
