import assert from "node:assert/strict";
import type { AwaitCondition, Verdict } from "../../core/readiness/await-condition";
import type { FailureCause, HealthObservation, Observation, UnitStatus } from "../../core/readiness/readiness";
import { Observe, Poll, pollUntil } from "../../remote/await/poll-until";

// The one poll loop against a scripted condition and scripted polls, on a fake
// clock: what it says, how it paces the polls, and when it stops.

const RUNNING: UnitStatus = { activeState: "active", subState: "running", mainPid: 7, nRestarts: 0 };

/** A condition that answers the verdicts given, one per poll, and records what it was shown. */
function scripted<T>(verdicts: Verdict<T>[], early: Array<Extract<Verdict<T>, { kind: "failed" }> | null> = []) {
    const judged: Observation[] = [];
    const earlyJudged: Array<Omit<Observation, "health">> = [];
    const condition: AwaitCondition<T> = {
        judgeEarly(obs) {
            earlyJudged.push(obs);
            return early[earlyJudged.length - 1] ?? null;
        },
        judge(obs) {
            judged.push(obs);
            const v = verdicts[judged.length - 1];
            if (!v) throw new Error(`judged more polls (${judged.length}) than scripted`);
            return v;
        },
        failureMessage: (cause, elapsedMs) => `failed at ${elapsedMs} ms: ${cause.kind}`,
    };
    return { condition, judged, earlyJudged };
}

function harness(pollTakesMs = 0) {
    let clock = 1_000;
    const said: string[] = [];
    const sleeps: number[] = [];
    let polls = 0;
    const observe: Observe = async () => {
        polls++;
        clock += pollTakesMs;
        return { unit: RUNNING, newJournalLines: [`line ${polls}`], health: Promise.resolve<HealthObservation>({ status: 200 }) };
    };
    const options = {
        now: () => clock,
        sleep: async (ms: number) => {
            sleeps.push(ms);
            clock += ms;
        },
        startedAtMs: 1_000,
        say: (m: string) => said.push(m),
        progressEveryMs: 5_000,
    };
    return { observe, options, said, sleeps, polls: () => polls };
}

const waiting = (topic: string, progress = `waiting: ${topic}`, nextPollMs = 1_000): Verdict<string> => ({ kind: "waiting", topic, progress, nextPollMs });

describe("pollUntil", () => {
    it("polls until the condition is met, says the met message once and returns its value", async () => {
        const h = harness();
        const { condition, judged } = scripted<string>([waiting("a"), waiting("a"), { kind: "met", value: "done", message: "met!" }]);
        const r = await pollUntil(condition, h.observe, h.options);
        assert.deepEqual(r, { kind: "met", value: "done" });
        assert.equal(h.polls(), 3);
        assert.equal(h.said.at(-1), "met!");
        assert.equal(h.said.filter((m) => m === "met!").length, 1);
        // Each poll shows the condition its own lines, the health answer and the time since the start.
        assert.deepEqual(
            judged.map((o) => [o.elapsedMs, o.newJournalLines[0], o.health]),
            [
                [0, "line 1", { status: 200 }],
                [1_000, "line 2", { status: 200 }],
                [2_000, "line 3", { status: 200 }],
            ],
        );
    });

    it("says progress when the topic changes, and otherwise at most every progressEveryMs", async () => {
        const h = harness();
        const verdicts = [
            waiting("a", "a 1"),
            waiting("a", "a 2"),
            waiting("b", "b 3"),
            ...[4, 5, 6, 7, 8, 9].map((i) => waiting("b", `b ${i}`)),
            { kind: "met", value: "x", message: "met" } as const,
        ];
        const { condition } = scripted<string>(verdicts);
        await pollUntil(condition, h.observe, h.options);
        // b 3 is said at 2 s; the next "b" line is due 5 s later, at the poll of 7 s (b 8).
        assert.deepEqual(h.said, ["a 1", "b 3", "b 8", "met"]);
    });

    it("starts the next poll nextPollMs after the last one started, counting the time the poll took", async () => {
        const h = harness(300);
        const { condition } = scripted<string>([
            waiting("a", "a", 1_000),
            waiting("a", "a", 250),
            waiting("a", "a", 200),
            { kind: "met", value: "x", message: "met" },
        ]);
        await pollUntil(condition, h.observe, h.options);
        assert.deepEqual(h.sleeps, [700, 0, 0]);
    });

    it("stops on a failure the condition finds before /health answers, without waiting for /health", async () => {
        const h = harness();
        const crash: FailureCause = { kind: "fatal-log", reason: "scheduler died", line: "Scheduler hit an exception" };
        const { condition, judged, earlyJudged } = scripted<string>([waiting("a")], [null, { kind: "failed", cause: crash, message: "crashed" }]);
        let polls = 0;
        const hanging: Observe = async (): Promise<Poll> => {
            polls++;
            // The first poll's /health answers; the second one's never does.
            const health = polls === 1 ? Promise.resolve<HealthObservation>({ status: 503 }) : new Promise<HealthObservation>(() => undefined);
            return { unit: RUNNING, newJournalLines: [], health };
        };
        const r = await pollUntil(condition, hanging, h.options);
        assert.deepEqual(r, { kind: "failed", cause: crash, message: "crashed" });
        assert.equal(earlyJudged.length, 2);
        assert.equal(judged.length, 1);
        // The failure's message is the caller's to say.
        assert.ok(!h.said.includes("crashed"));
    });

    it("returns the condition's failure of a whole poll with its message", async () => {
        const h = harness();
        const cause: FailureCause = { kind: "unit-stopped", activeState: "failed", subState: "failed" };
        const { condition } = scripted<string>([waiting("a"), { kind: "failed", cause, message: "stopped" }]);
        assert.deepEqual(await pollUntil(condition, h.observe, h.options), { kind: "failed", cause, message: "stopped" });
    });

    it("fails with the condition's message when the box cannot be polled", async () => {
        const h = harness();
        const { condition, judged } = scripted<string>([]);
        const cause: FailureCause = { kind: "poll-error", reason: "box: connection reset" };
        const r = await pollUntil(condition, async () => ({ failed: cause }), { ...h.options, now: () => 4_000 });
        assert.deepEqual(r, { kind: "failed", cause, message: "failed at 3000 ms: poll-error" });
        assert.equal(judged.length, 0);
    });
});
