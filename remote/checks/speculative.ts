// A speculative-decoding flag can be accepted yet leave the drafter inactive:
// /server_info must show the configured algorithm and, where SGLang reports
// it, an accept length above 1 (core/serving/chat-check.ts checkSpeculativeActive).

import { checkSpeculativeActive } from "../../core/serving/chat-check";
import type { PostReadyCheck } from "./post-ready-check";

export const speculativeCheck: PostReadyCheck = {
    name: "speculative",
    appliesTo: (server) => Boolean(server.expectedSpeculative),
    async run(ctx) {
        const expected = ctx.expectedSpeculative;
        if (!expected) throw new Error("the speculative check runs only with an expected algorithm (appliesTo)");
        const info = await ctx.serverInfo();
        if ("error" in info) return { ok: false, cause: { kind: "speculative-check", reason: info.error } };
        const verdict = checkSpeculativeActive(info.body, expected);
        if (!verdict.ok) return { ok: false, cause: { kind: "speculative-check", reason: verdict.reason } };
        return {
            ok: true,
            said:
                `speculative decoding active: ${verdict.algorithm}` +
                (verdict.acceptLength !== null ? `, avg accept length ${verdict.acceptLength.toFixed(2)}` : ""),
            findings: { acceptLength: verdict.acceptLength },
        };
    },
};
