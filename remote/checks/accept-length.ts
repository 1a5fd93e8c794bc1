// A change is kept only if it serves at least as well as the last good config
// (issue 21): the new server's speculative accept length, read from SGLang's
// /server_info after ready, may not fall more than readiness.acceptLengthDropLimit
// below the figure the last verified rollout recorded (core/serving-figures.ts).
// A restart would measure the same drafter again: no retry.

import { checkSpeculativeActive } from "../../core/chat-check";
import { judgeAcceptLength } from "../../core/serving-figures";
import { checkFailed, type PostReadyCheck } from "./post-ready-check";

export const acceptLengthCheck: PostReadyCheck = {
    name: "accept-length",
    appliesTo: (server) => Boolean(server.expectedSpeculative && server.lastGood),
    async run(ctx) {
        const { expectedSpeculative: algorithm, lastGood } = ctx;
        if (!algorithm || !lastGood) throw new Error("the accept-length check runs only with speculation and a last good figure (appliesTo)");
        const info = await ctx.serverInfo();
        if ("error" in info) return checkFailed(this.name, info.error, { retry: true });
        const active = checkSpeculativeActive(info.body, algorithm);
        if (!active.ok) return checkFailed(this.name, active.reason, { retry: false });
        if (active.acceptLength === null) {
            return { ok: true, said: `no avg accept length reported yet: nothing to hold against the last good ${lastGood.figures.acceptLength.toFixed(2)}` };
        }
        const verdict = judgeAcceptLength({ algorithm, acceptLength: active.acceptLength }, lastGood.figures, lastGood.dropLimit);
        return verdict.ok ? { ok: true, said: verdict.said } : checkFailed(this.name, verdict.reason, { retry: false });
    },
};
