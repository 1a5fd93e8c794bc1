import assert from "node:assert/strict";
import { CheckContext, checkFailed, PostReadyCheck, runPostReadyChecks } from "../../remote/checks/post-ready-check";
import { acceptLengthCheck } from "../../remote/checks/accept-length";
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
    it("registers the API key check first, then the chat check, then speculation, then the accept length, each under its own name", () => {
        assert.deepEqual(
            POST_READY_CHECKS.map((c) => c.name),
            ["api-key-refused", "chat", "speculative", "accept-length"],
        );
    });

    it("runs only the checks the server's settings call for", () => {
        const names = (server: Partial<CheckContext>) => POST_READY_CHECKS.filter((c) => c.appliesTo(context(server))).map((c) => c.name);
        assert.deepEqual(names({ chatCheck: false }), []);
        assert.deepEqual(names({ apiKey: "sk-0123456789abcdef", chatCheck: true, expectedSpeculative: "NEXTN" }), ["api-key-refused", "chat", "speculative"]);
        const lastGood = { figures: { algorithm: "NEXTN", acceptLength: 1.7 }, dropLimit: 0.1 };
        assert.deepEqual(names({ chatCheck: false, expectedSpeculative: "DFLASH", lastGood }), ["speculative", "accept-length"]);
        assert.deepEqual(names({ chatCheck: false, lastGood }), [], "no speculation, no accept length to hold");
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

describe("the accept-length check: a change serves at least as well as the last good config", () => {
    const lastGood = { figures: { algorithm: "NEXTN", acceptLength: 1.7 }, dropLimit: 0.1 };
    const withLength = (acceptLength: number | null) =>
        context({
            chatCheck: false,
            expectedSpeculative: "DFLASH",
            lastGood,
            serverInfo: async () => ({
                body: { speculative_algorithm: "DFLASH", internal_states: acceptLength === null ? [{}] : [{ avg_spec_accept_length: acceptLength }] },
            }),
        });

    it("passes within the drop limit and says both figures", async () => {
        const r = await acceptLengthCheck.run(withLength(1.55));
        assert.deepEqual(r, { ok: true, said: "avg accept length 1.55 (DFLASH) against the last good config's 1.70 (NEXTN): within 10%" });
        assert.equal((await acceptLengthCheck.run(withLength(11.5))).ok, true);
    });

    it("fails below it, naming both figures and the limit, and a new start would not pass it", async () => {
        const r = await acceptLengthCheck.run(withLength(1.3));
        assert.deepEqual(r, {
            ok: false,
            cause: {
                kind: "post-ready-check",
                check: "accept-length",
                reason:
                    "avg accept length 1.30 (DFLASH) is 23.5% below the last good config's 1.70 (NEXTN), more than readiness.acceptLengthDropLimit (10%): " +
                    "the change serves worse and is not kept (raise readiness.acceptLengthDropLimit to accept it anyway)",
                retry: false,
            },
        });
    });

    it("holds nothing against the last good figure before SGLang reports one", async () => {
        const r = await acceptLengthCheck.run(withLength(null));
        assert.equal(r.ok, true);
    });
});
