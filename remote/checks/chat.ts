// "A server that answers /health can still generate garbage" (field notes):
// one short chat completion, its text judged by core/serving/chat-check.ts.

import { checkChatResponse } from "../../core/serving/chat-check";
import { endpointUrl } from "../probe";
import type { PostReadyCheck } from "./post-ready-check";

const CHAT_PROMPT = "Answer in one short sentence: what is the capital of France?";

export const chatCheck: PostReadyCheck = {
    name: "chat",
    appliesTo: (server) => server.chatCheck,
    async run(ctx) {
        const res = await ctx.http.post(
            endpointUrl(ctx.endpoint, "/v1/chat/completions"),
            {
                model: ctx.servedModelName,
                messages: [{ role: "user", content: CHAT_PROMPT }],
                max_tokens: 16,
                temperature: 0,
                // Thinking models (Qwen3.x) would spend 16 tokens inside <think>;
                // SGLang passes this to the chat template. Ignored by other templates.
                chat_template_kwargs: { enable_thinking: false },
            },
            ctx.withKey,
        );
        if ("error" in res) return { ok: false, cause: { kind: "chat-check", reason: `POST /v1/chat/completions: ${res.error}` } };
        if (res.status !== 200) {
            return {
                ok: false,
                cause: {
                    kind: "chat-check",
                    status: res.status,
                    reason: `POST /v1/chat/completions answered HTTP ${res.status}: ${res.text.trim().slice(0, 300)}`,
                },
            };
        }
        const verdict = checkChatResponse(res.body);
        if (!verdict.ok) return { ok: false, cause: { kind: "chat-check", status: res.status, reason: verdict.reason } };
        return { ok: true, said: `chat check passed: ${JSON.stringify(verdict.text.slice(0, 80))}`, findings: { chatText: verdict.text } };
    },
};
