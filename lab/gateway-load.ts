// The load generator of the gateway scenarios (tests/e2e/gateway.test.ts and
// `npm run bench`'s rolling phase): chat completions sent through SGLang's
// gateway by a few clients, each sending its next request when the last one
// is answered (after `pauseMs`), for as long as it runs. Every answer that is
// not a 200 counts.
//
// The lab's servers answer at once, so clients that never pause send as fast
// as the gateway, the simulators and their journald can go: the gateway test
// alone sent about 139,000 requests in its two rollouts, and the file cost
// 168 CPU-s of the machine, 47 with 50 ms pauses (3,100 requests; 2026-12-06);
// in a full run that load took whatever CPU the other files left. The gateway
// test pauses between requests (its LOAD_PAUSE_MS); the bench's rolling phase
// keeps sending back to back.
import { httpPostJson } from "../remote/probe";

export interface GatewayLoad {
    /** Requests answered (or failed) so far, and what each failure was. */
    readonly counts: { sent: number; failed: string[] };
    /** Stops sending; resolves when every client's last request is answered. */
    stop(): Promise<void>;
}

/** Starts `clients` clients sending `chat` to `<gatewayUrl>/v1/chat/completions` with the servers' API key, each pausing `pauseMs` between its requests. */
export function loadThroughGateway(
    gatewayUrl: string,
    chat: Record<string, unknown>,
    apiKey: string,
    { clients = 2, pauseMs = 0 }: { clients?: number; pauseMs?: number } = {},
): GatewayLoad {
    const counts = { sent: 0, failed: [] as string[] };
    let running = true;
    const client = async () => {
        while (running) {
            const r = await httpPostJson(`${gatewayUrl}/v1/chat/completions`, chat, { bearer: apiKey, timeoutMs: 30_000 });
            counts.sent++;
            if (!("status" in r) || r.status !== 200) counts.failed.push(JSON.stringify(r).slice(0, 200));
            if (pauseMs > 0 && running) await new Promise((resolve) => setTimeout(resolve, pauseMs));
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
