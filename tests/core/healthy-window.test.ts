import assert from "node:assert/strict";
import {
    earlyWindowFailure,
    formatWindowProgress,
    healthyWindowCondition,
    HealthyWindowState,
    openHealthyWindow,
    stepWindow,
    WindowDecision,
} from "../../core/readiness/healthy-window";
import type { HealthObservation, Observation, UnitStatus } from "../../core/readiness/readiness";

// The healthy window after ready (issue 13): polls of a server that was ready
// at 100 s with MainPID 4242, fed one by one.

const RUNNING: UnitStatus = { activeState: "active", subState: "running", mainPid: 4242, nRestarts: 0 };
const OK: HealthObservation = { status: 200 };

function obs(elapsedMs: number, over: { unit?: Partial<UnitStatus>; lines?: string[]; health?: HealthObservation } = {}): Observation {
    return { elapsedMs, unit: { ...RUNNING, ...over.unit }, newJournalLines: over.lines ?? [], health: over.health ?? OK };
}

function run(observations: Observation[], windowMs = 30_000): WindowDecision[] {
    let s: HealthyWindowState = openHealthyWindow({ elapsedMs: 100_000, mainPid: 4242, nRestarts: 0 }, windowMs);
    return observations.map((o) => {
        const r = stepWindow(s, o);
        s = r.state;
        return r.decision;
    });
}

function failure(d: WindowDecision): string {
    assert.equal(d.kind, "failed", JSON.stringify(d));
    return d.kind === "failed" ? d.cause.detail : "";
}

describe("healthy window", () => {
    it("holds while every poll is healthy and passes on the first healthy poll at or after the window's end", () => {
        const d = run([obs(100_000), obs(115_000), obs(129_999), obs(130_000), obs(131_000)]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["holding", "holding", "holding", "healthy", "healthy"],
        );
        assert.deepEqual(d[3], { kind: "healthy", elapsedMs: 130_000, heldMs: 30_000, polls: 4 });
    });

    it("fails when the main process dies 3 s after ready, as the field's crash-looping server did", () => {
        const d = run([obs(101_000), obs(103_000, { unit: { activeState: "activating", subState: "auto-restart", mainPid: 0 } })]);
        assert.equal(d[0]!.kind, "holding");
        assert.match(failure(d[1]!), /activating\/auto-restart: its main process died and systemd is restarting it/);
        assert.equal(d[1]!.kind === "failed" && d[1]!.cause.heldMs, 3_000);
    });

    it("fails on a new MainPID (systemd restarted it between two polls)", () => {
        assert.match(failure(run([obs(104_000, { unit: { mainPid: 5151 } })])[0]!), /MainPID 4242 -> 5151/);
    });

    it("fails on a main process gone while the unit still says active", () => {
        assert.match(failure(run([obs(104_000, { unit: { mainPid: 0 } })])[0]!), /the main process 4242 exited/);
    });

    it("fails when NRestarts grows", () => {
        assert.match(failure(run([obs(104_000, { unit: { nRestarts: 1 } })])[0]!), /NRestarts 0 -> 1/);
    });

    it("fails when the unit leaves active, activating included (it was active at ready)", () => {
        assert.match(failure(run([obs(104_000, { unit: { activeState: "failed", subState: "failed", mainPid: 0 } })])[0]!), /the unit is failed\/failed/);
        assert.match(failure(run([obs(104_000, { unit: { activeState: "activating", subState: "start" } })])[0]!), /the unit is activating\/start/);
    });

    it("fails when the scheduler dies with HTTP up: the fatal line, with its reason kept for the retry decision", () => {
        const line = "[2026-05-02 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):";
        const d = run([obs(105_000, { lines: [line] })])[0]!;
        assert.equal(d.kind, "failed");
        if (d.kind !== "failed") return;
        assert.equal(d.cause.fatalReason, "scheduler died");
        assert.equal(d.cause.line, line);
    });

    it("fails on one /health answer other than 200: a hang shows as 503 after SGLang's 20 s health timeout", () => {
        assert.match(failure(run([obs(101_000), obs(122_000, { health: { status: 503 } })])[1]!), /GET \/health answered HTTP 503, not 200/);
        assert.match(failure(run([obs(101_000, { health: { error: "timed out after 30000 ms" } })])[0]!), /timed out after 30000 ms/);
    });

    it("does not call the access-log lines of its own probes fatal", () => {
        const d = run([obs(101_000, { lines: ['[2026-05-02 10:05:00] INFO:     127.0.0.1:48046 - "GET /health HTTP/1.1" 200 OK'] })]);
        assert.equal(d[0]!.kind, "holding");
    });

    it("judges the journal and the unit before /health answers", () => {
        const s = openHealthyWindow({ elapsedMs: 0, mainPid: 4242, nRestarts: 0 }, 30_000);
        assert.equal(earlyWindowFailure(s, { elapsedMs: 1_000, unit: RUNNING, newJournalLines: [] }), null);
        const early = earlyWindowFailure(s, { elapsedMs: 1_000, unit: { ...RUNNING, mainPid: 0 }, newJournalLines: [] });
        assert.equal(early?.kind, "failed");
    });

    it("repeats its verdict once failed", () => {
        const d = run([obs(101_000, { unit: { mainPid: 0 } }), obs(131_000)]);
        assert.deepEqual(d[1], d[0]);
    });

    it("formats progress with the phase, elapsed time, what it waits for and the budget, and the attempt", () => {
        const [holding] = run([obs(112_000)]);
        assert.equal(
            formatWindowProgress(holding!, { attempt: 1, attempts: 2 }),
            "[readiness] healthy window — 112 s elapsed, healthy for 12 s of 30 s (budget 30 s, attempt 1 of 2)",
        );
        const [dead] = run([obs(103_000, { unit: { mainPid: 0 } })]);
        assert.equal(
            formatWindowProgress(dead!),
            "[readiness] failed after 103 s in the healthy window: the server was ready but did not stay healthy for 30 s (readiness.minHealthySeconds): after 3 s, the main process 4242 exited",
        );
    });
});

describe("the healthy window as a condition of the poll loop", () => {
    const open = () => openHealthyWindow({ elapsedMs: 100_000, mainPid: 4242, nRestarts: 0 }, 30_000);

    it("holds at the poll interval under one topic, and is met once the window is over", () => {
        const c = healthyWindowCondition(open(), { pollIntervalMs: 1_000, attempt: { attempt: 1, attempts: 2 } });
        assert.deepEqual(c.judge(obs(110_000)), {
            kind: "waiting",
            topic: "healthy window",
            nextPollMs: 1_000,
            progress: "[readiness] healthy window — 110 s elapsed, healthy for 10 s of 30 s (budget 30 s, attempt 1 of 2)",
        });
        const v = c.judge(obs(130_000));
        assert.equal(v.kind, "met");
        assert.match(v.kind === "met" ? v.message : "", /^\[readiness\] stayed healthy for 30 s after ready .* on 2 polls\)$/);
    });

    it("fails on a crash in the journal before /health answers", () => {
        const c = healthyWindowCondition(open(), { pollIntervalMs: 1_000 });
        assert.equal(c.judgeEarly({ elapsedMs: 105_000, unit: RUNNING, newJournalLines: [] }), null);
        const f = c.judgeEarly({ elapsedMs: 106_000, unit: RUNNING, newJournalLines: ["[TP0] Scheduler hit an exception: boom"] });
        assert.equal(f?.cause.kind === "unhealthy" && f.cause.fatalReason, "scheduler died");
        assert.match(f?.message ?? "", /^\[readiness\] failed after 106 s in the healthy window: the server was ready but did not stay healthy/);
    });

    it("tells a poll that failed inside the window as a failure in the window", () => {
        const c = healthyWindowCondition(open(), { pollIntervalMs: 1_000 });
        assert.equal(
            c.failureMessage({ kind: "poll-error", reason: "box: connection reset" }, 104_000),
            "[readiness] failed after 104 s in the healthy window: could not poll the unit: box: connection reset",
        );
    });
});
