import assert from "node:assert/strict";
import { checkChatResponse, checkSpeculativeActive, degeneracyReason } from "../../core/serving/chat-check";

const completion = (content: string | null, extra: Record<string, unknown> = {}) => ({
    id: "4f1c",
    object: "chat.completion",
    created: 1767268800,
    model: "qwen3.6-27b",
    choices: [{ index: 0, message: { role: "assistant", content, ...extra }, finish_reason: "length" }],
    usage: { prompt_tokens: 20, completion_tokens: 16, total_tokens: 36 },
});

describe("checkChatResponse", () => {
    it("accepts a sensible answer and returns its text", () => {
        assert.deepEqual(checkChatResponse(completion("The capital of France is Paris.")), { ok: true, text: "The capital of France is Paris." });
    });

    it("accepts a short answer", () => {
        assert.equal(checkChatResponse(completion("Paris.")).ok, true);
    });

    it("accepts an answer in a language without spaces", () => {
        assert.equal(checkChatResponse(completion("法国的首都是巴黎。")).ok, true);
    });

    it("takes the reasoning text when a thinking model spent every token thinking", () => {
        const r = checkChatResponse(completion(null, { reasoning_content: "Okay, the user asks about the capital of France." }));
        assert.equal(r.ok, true);
    });

    it("strips think tags before judging", () => {
        assert.deepEqual(checkChatResponse(completion("<think>\nOkay, the user wants")), { ok: true, text: "Okay, the user wants" });
    });

    const garbage: Array<[string, string]> = [
        ["empty", ""],
        ["whitespace", "   \n\t "],
        ["punctuation only", "!!!!!!!!!!!!!!!!"],
        ["one token repeated", "the the the the the the the the"],
        ["one word glued together", "ParisParisParisParisParisParis"],
        ["one character", "aaaaaaaaaaaaaaaaaaaaaaaa"],
        ["replacement characters", "The capital \uFFFD\uFFFD of France"],
        ["control characters", "Paris\u0000\u0001\u0002"],
        ["a short unit repeated", "你好你好你好你好你好你好"],
    ];
    for (const [name, text] of garbage) {
        it(`rejects degenerate text: ${name}`, () => {
            const r = checkChatResponse(completion(text));
            assert.equal(r.ok, false, JSON.stringify(text));
        });
    }

    it("rejects a response without choices", () => {
        const r = checkChatResponse({ object: "chat.completion", choices: [] });
        assert.equal(r.ok, false);
        assert.match(r.ok ? "" : r.reason, /not an OpenAI chat completion/);
    });

    it("rejects an error body and shows it", () => {
        const r = checkChatResponse({ error: "Unauthorized" });
        assert.match(r.ok ? "" : r.reason, /Unauthorized/);
    });

    it("rejects something that is not a chat completion", () => {
        assert.equal(checkChatResponse({ object: "text_completion", choices: [{ message: { content: "Paris is the capital." } }] }).ok, false);
        assert.equal(checkChatResponse("Paris").ok, false);
        assert.equal(checkChatResponse(null).ok, false);
    });
});

describe("degeneracyReason", () => {
    it("passes ordinary sentences", () => {
        for (const t of [
            "Sure! Here is a short poem about the sea: waves roll in,",
            "1. Paris 2. Lyon 3. Marseille",
            "def add(a, b):\n    return a + b",
            "Yes.",
            "42",
        ]) {
            assert.equal(degeneracyReason(t), null, t);
        }
    });
});

describe("checkSpeculativeActive", () => {
    const info = (algo: string | null, states?: Array<Record<string, unknown>>) => ({
        model_path: "/models/Qwen3.6-27B",
        tp_size: 2,
        speculative_algorithm: algo,
        speculative_num_steps: 1,
        ...(states ? { internal_states: states } : {}),
        version: "0.5.11",
    });

    it("accepts NEXTN reported as EAGLE with accepted drafts", () => {
        const r = checkSpeculativeActive(info("EAGLE", [{ avg_spec_accept_length: 1.82, last_gen_throughput: 31.2 }]), "NEXTN");
        assert.deepEqual(r, { ok: true, algorithm: "EAGLE", acceptLength: 1.82 });
    });

    it("accepts an algorithm whose accept length is not reported yet", () => {
        assert.deepEqual(checkSpeculativeActive(info("EAGLE3", [{ last_gen_throughput: 0 }]), "EAGLE3"), { ok: true, algorithm: "EAGLE3", acceptLength: null });
    });

    it("rejects a server without speculative decoding", () => {
        const r = checkSpeculativeActive(info(null), "NEXTN");
        assert.match(r.ok ? "" : r.reason, /no speculative_algorithm, expected NEXTN/);
    });

    it("rejects another algorithm than the configured one", () => {
        const r = checkSpeculativeActive(info("NGRAM"), "NEXTN");
        assert.match(r.ok ? "" : r.reason, /speculative_algorithm=NGRAM, expected EAGLE or NEXTN/);
    });

    it("rejects an accept length of 1 (no draft token ever accepted)", () => {
        const r = checkSpeculativeActive(info("EAGLE", [{ avg_spec_accept_length: 1.0 }, { avg_spec_accept_length: 1.9 }]), "NEXTN");
        assert.equal(r.ok, false);
    });

    it("rejects a body that is not server info", () => {
        assert.equal(checkSpeculativeActive("nope", "NEXTN").ok, false);
    });
});
