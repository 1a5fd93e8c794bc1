// A server that was given a key must refuse a request without it. SGLang
// authenticates only with a non-empty --api-key (an empty api-key in its
// --config file turns it off) and exempts /health*, /ready* and /metrics: ask an endpoint it
// guards, with no Authorization header. Runs first: an open server is not
// rolled out however well it answers.

import { endpointUrl } from "../probe";
import type { PostReadyCheck } from "./post-ready-check";

/** An endpoint SGLang's API-key middleware guards (a "normal" route, not /health*, /ready* or /metrics). */
const AUTH_CHECK_PATH = "/v1/models";

export const apiKeyRefusedCheck: PostReadyCheck = {
    name: "api-key-refused",
    appliesTo: (server) => Boolean(server.apiKey),
    async run(ctx) {
        const res = await ctx.http.get(endpointUrl(ctx.endpoint, AUTH_CHECK_PATH), { timeoutMs: ctx.probeTimeoutMs });
        if ("error" in res) return { ok: false, cause: { kind: "auth-check", reason: `GET ${AUTH_CHECK_PATH} without the key: ${res.error}` } };
        if (res.status !== 401) {
            return {
                ok: false,
                cause: {
                    kind: "auth-check",
                    reason:
                        `GET ${AUTH_CHECK_PATH} without the key answered HTTP ${res.status}, not 401: anyone who reaches ${ctx.endpoint} can use it ` +
                        "(check that the unit passes --config /etc/sglang/<service>.yaml and that this 0600 file sets a non-empty api-key)",
                },
            };
        }
        return { ok: true, said: `a request without the API key is refused (GET ${AUTH_CHECK_PATH} = 401)` };
    },
};
