import assert from "node:assert/strict";
import { CheckContext, checkFailed, PostReadyCheck, runPostReadyChecks } from "../../remote/checks/post-ready-check";
import { POST_READY_CHECKS } from "../../remote/checks/registry";

// The runner of the post-ready checks and the registered list. What each
// registered check judges is tested through the readiness wait (readiness-wait.test.ts).

const context = (over: Partial<CheckContext> = {}): CheckContext => ({
    endpoint: "http://127.0.0.1:30000",
    servedModelName: "qwen3.6-27b",
    chatCheck: true,
    probeTimeoutMs: 1_000,
    http: {
        get: async () => ({ error: "not reached" }),
        post: async () => ({ error: "not reached" }),
    },
    withKey: { timeoutMs: 1_000 },
    serverInfo: async () => ({ error: "not reached" }),
    ...over,
});

/** A check that records that it ran and answers as told. */
function probe(name: string, outcome: Awaited<ReturnType<PostReadyCheck["run"]>>, ran: string[], applies = true): PostReadyCheck {
    return {
        name,
        appliesTo: () => applies,
        run: async () => {
            ran.push(name);
            return outcome;
        },
    };
}

describe("post-ready checks", () => {
    it("registers the API key check first, then the chat check, then speculation, each under its own name", () => {
        assert.deepEqual(
            POST_READY_CHECKS.map((c) => c.name),
            ["api-key-refused", "chat", "speculative"],
        );
    });

    it("runs only the checks the server's settings call for", () => {
        const names = (server: Partial<CheckContext>) => POST_READY_CHECKS.filter((c) => c.appliesTo(context(server))).map((c) => c.name);
        assert.deepEqual(names({ chatCheck: false }), []);
        assert.deepEqual(names({ apiKey: "sk-0123456789abcdef", chatCheck: true, expectedSpeculative: "NEXTN" }), ["api-key-refused", "chat", "speculative"]);
    });

    it("runs the checks in order, says each pass and gathers what they found", async () => {
        const ran: string[] = [];
        const said: string[] = [];
        const r = await runPostReadyChecks(
            [
                probe("one", { ok: true, said: "one passed", findings: { chatText: "Paris." } }, ran),
                probe("skipped", { ok: true, said: "never" }, ran, false),
                probe("two", { ok: true, said: "two passed", findings: { acceptLength: 1.7 } }, ran),
            ],
            context(),
            (m) => said.push(m),
        );
        assert.deepEqual(r, { ok: true, findings: { chatText: "Paris.", acceptLength: 1.7 } });
        assert.deepEqual(ran, ["one", "two"]);
        assert.deepEqual(said, ["[readiness] one passed", "[readiness] two passed"]);
    });

    it("stops at the first failure, with that check's cause", async () => {
        const ran: string[] = [];
        const failed = checkFailed("two", "not listed", { retry: false });
        const r = await runPostReadyChecks(
            [probe("one", { ok: true, said: "one passed" }, ran), probe("two", failed, ran), probe("three", { ok: true, said: "x" }, ran)],
            context(),
            () => undefined,
        );
        assert.deepEqual(r, { ok: false, cause: { kind: "post-ready-check", check: "two", reason: "not listed", retry: false } });
        assert.deepEqual(ran, ["one", "two"]);
    });
});
