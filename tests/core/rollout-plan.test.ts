import assert from "node:assert/strict";
import type { FailureCause } from "../../core/readiness/readiness";
import {
    advanceRollout,
    onStepError,
    planRollout,
    retryVerdict,
    RolloutObservation,
    RolloutPlanInput,
    RolloutResult,
    RolloutStep,
    StartResult,
} from "../../core/rollout/rollout-plan";

// The rollout as a plan, walked step by step without SSH: each test gives the
// observations a box would produce and checks the steps and the messages.

const BOX: RolloutPlanInput = { unit: "sglang-qwen.service", hasUnit: true, wasActive: true, startAttempts: 2, gpuReleaseTimeoutSeconds: 120 };

const ready: StartResult = { ok: true };
const failed = (cause: FailureCause, startLines: string[] = [], lastJournalLines: string[] = ["last line"]): StartResult => ({
    ok: false,
    cause,
    startLines,
    lastJournalLines,
});
const crash: FailureCause = { kind: "fatal-log", reason: "scheduler died", line: "Scheduler hit an exception: Traceback (most recent call last):" };
const diedAfterReady: FailureCause = { kind: "unhealthy", heldMs: 3_000, windowMs: 30_000, detail: "the main process 4242 exited" };
const notEnoughMemory: FailureCause = {
    kind: "fatal-log",
    reason: "not enough memory",
    line: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
};

const kept: RolloutObservation = { kind: "kept", hadPrevious: true };
const released: RolloutObservation = { kind: "stopped", released: true };
const stuck: RolloutObservation = { kind: "stopped", released: false, reason: "GPU 0: 43347 MiB used" };
const written: RolloutObservation = { kind: "written" };
const restored: RolloutObservation = { kind: "restored" };
const started = (result: StartResult): RolloutObservation => ({ kind: "started", result });

interface Walk {
    steps: RolloutStep[];
    said: string[];
    result: RolloutResult;
}

/** Plans, then answers each step with the next observation; the answers must run out exactly at finish. */
function walk(input: RolloutPlanInput, answers: RolloutObservation[]): Walk {
    let { state, step, say } = planRollout(input);
    const steps: RolloutStep[] = [step];
    const said = [...say];
    for (const a of answers) {
        assert.notEqual(step.kind, "finish", `an answer (${a.kind}) after the plan finished`);
        ({ state, step, say } = advanceRollout(state, a));
        steps.push(step);
        said.push(...say);
    }
    assert.equal(step.kind, "finish", `the plan wants more: ${JSON.stringify(step)}`);
    return { steps, said, result: (step as Extract<RolloutStep, { kind: "finish" }>).result };
}

const kinds = (w: Walk): string[] =>
    w.steps.map((s) =>
        s.kind === "start" ? `start ${s.config} ${s.attempt}/${s.attempts}` : s.kind === "stop" ? `stop${s.waitForGpu ? "+gpu" : ""}` : s.kind,
    );

function failure(r: RolloutResult): Extract<RolloutResult, { ok: false }> {
    assert.equal(r.ok, false, JSON.stringify(r));
    return r as Extract<RolloutResult, { ok: false }>;
}

describe("rollout plan", () => {
    it("keeps the previous unit, stops, waits for the GPUs, writes, starts and succeeds", () => {
        const w = walk(BOX, [kept, released, written, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "write-new", "start new 1/2", "finish"]);
        assert.deepEqual(w.result, { ok: true, attempts: 1 });
        assert.deepEqual(w.said, []);
    });

    it("skips keeping a previous unit when the box has none", () => {
        const w = walk({ ...BOX, hasUnit: false, wasActive: false }, [released, written, started(ready)]);
        assert.deepEqual(kinds(w), ["stop+gpu", "write-new", "start new 1/2", "finish"]);
    });

    it("retries a start that died after ready, and succeeds on the second attempt", () => {
        const w = walk(BOX, [kept, released, written, started(failed(diedAfterReady)), released, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "write-new", "start new 1/2", "stop+gpu", "start new 2/2", "finish"]);
        assert.deepEqual(w.result, { ok: true, attempts: 2 });
        assert.match(w.said[0]!, /^\[sglang-qwen\.service\] attempt 1 of 2 of the new config failed \(the server was ready but did not stay healthy/);
        assert.match(w.said[0]!, /that can pass on retry: stopping it to start it again$/);
        assert.equal(w.said[1], "[sglang-qwen.service] starting the new config again (attempt 2 of 2)");
    });

    it("rolls back after every attempt failed, waits for the previous unit and reports both attempts", () => {
        const w = walk(BOX, [
            kept,
            released,
            written,
            started(failed(crash)),
            released,
            started(failed(diedAfterReady, [], ["j1", "j2"])),
            released,
            restored,
            started(ready),
        ]);
        assert.deepEqual(kinds(w), [
            "keep-previous",
            "stop+gpu",
            "write-new",
            "start new 1/2",
            "stop+gpu",
            "start new 2/2",
            "stop+gpu",
            "restore-previous",
            "start previous 1/2",
            "finish",
        ]);
        const r = failure(w.result);
        assert.equal(r.outcome, "the previous unit was put back and is ready again");
        assert.equal(r.changed, true);
        assert.equal(r.holds, "previous");
        assert.match(
            r.cause,
            /^the server was ready but did not stay healthy for 30 s .*after 3 s, the main process 4242 exited \(attempt 2 of 2; attempt 1: fatal log line \(scheduler died\)/,
        );
        // The journal of the new config's last failed start, not of the previous unit's readiness wait.
        assert.deepEqual(r.journal, ["j1", "j2"]);
        assert.match(w.said.at(-1)!, /new config did not become ready \(.*\); after 2 attempts; putting the previous unit back$/);
    });

    it("says that attempts failed the same way instead of repeating the cause", () => {
        const w = walk(BOX, [kept, released, written, started(failed(crash)), released, started(failed(crash)), released, restored, started(ready)]);
        assert.match(failure(w.result).cause, /\(attempt 2 of 2; attempt 1 failed the same way\)$/);
    });

    it("does not retry out of memory, and says why", () => {
        const w = walk(BOX, [kept, released, written, started(failed(notEnoughMemory)), released, restored, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "write-new", "start new 1/2", "stop+gpu", "restore-previous", "start previous 1/2", "finish"]);
        assert.match(failure(w.result).cause, /not retried: out of memory \(not enough memory\): the same config needs the same memory on every start\)$/);
    });

    it("starts once with startAttempts 1", () => {
        const w = walk({ ...BOX, startAttempts: 1 }, [kept, released, written, started(failed(crash)), released, restored, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "write-new", "start new 1/1", "stop+gpu", "restore-previous", "start previous 1/1", "finish"]);
        // One start: no attempt counts in the message.
        assert.equal(failure(w.result).cause, "fatal log line (scheduler died): Scheduler hit an exception: Traceback (most recent call last):");
    });

    it("retries the previous unit too, and reports when it does not come back either", () => {
        const w = walk(BOX, [
            kept,
            released,
            written,
            started(failed(crash)),
            released,
            started(failed(crash)),
            released,
            restored,
            started(failed(crash)),
            released,
            started(failed(crash)),
        ]);
        assert.deepEqual(kinds(w).slice(-4), ["start previous 1/2", "stop+gpu", "start previous 2/2", "finish"]);
        assert.match(failure(w.result).outcome, /^the previous unit was put back but did not become ready either: fatal log line \(scheduler died\)/);
    });

    it("says the previous unit was not running before when it was not", () => {
        const w = walk({ ...BOX, wasActive: false, startAttempts: 1 }, [
            kept,
            released,
            written,
            started(failed(crash)),
            released,
            restored,
            started(failed(crash)),
        ]);
        assert.match(failure(w.result).outcome, /\(it was not running before this rollout\)$/);
    });

    it("leaves a failing new unit stopped when there was no previous unit", () => {
        const w = walk({ ...BOX, hasUnit: false, wasActive: false, startAttempts: 1 }, [released, written, started(failed(crash)), released]);
        assert.deepEqual(kinds(w), ["stop+gpu", "write-new", "start new 1/1", "stop", "finish"]);
        assert.equal(failure(w.result).outcome, "there was no previous unit; the new one is left stopped for inspection (systemctl cat / journalctl)");
        assert.equal(failure(w.result).holds, "new");
    });

    it("changes nothing when the GPU memory is not released, and starts and waits for the previous server again", () => {
        const w = walk(BOX, [kept, stuck, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "start previous 1/2", "finish"]);
        const r = failure(w.result);
        assert.equal(r.changed, false);
        assert.equal(r.holds, "previous");
        assert.equal(r.cause, "GPU memory was not released within 120 s after stopping the server (GPU 0: 43347 MiB used)");
        assert.equal(r.outcome, "nothing was changed and the previous server was started again and is ready");
        assert.match(w.said[0]!, /nothing was changed: starting the previous server again$/);
    });

    it("does not start a previous server that was not running when the GPU memory is not released", () => {
        const w = walk({ ...BOX, wasActive: false }, [kept, stuck]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "finish"]);
        assert.equal(failure(w.result).outcome, "nothing was changed");
    });

    it("rolls back instead of retrying when the failed start's GPU memory is not released", () => {
        const w = walk(BOX, [kept, released, written, started(failed(crash)), stuck, restored, started(ready)]);
        assert.deepEqual(kinds(w), ["keep-previous", "stop+gpu", "write-new", "start new 1/2", "stop+gpu", "restore-previous", "start previous 1/2", "finish"]);
        const r = failure(w.result);
        assert.match(r.cause, /\(not retried: GPU memory of the failed start was not released within 120 s \(GPU 0: 43347 MiB used\)\)$/);
        assert.match(r.outcome, /^the previous unit was put back and is ready again \(started while GPU memory of the failed start was not released/);
    });

    it("after a step's own error, says whose unit the box may hold and whether to put the previous one back", () => {
        let a = planRollout(BOX);
        assert.deepEqual(onStepError(a.state), { holds: "previous", putBack: false });
        a = advanceRollout(a.state, kept);
        assert.deepEqual(onStepError(a.state), { holds: "previous", putBack: false });
        a = advanceRollout(a.state, released);
        // The write itself failed (daemon-reload refused): the new files may be there.
        assert.deepEqual(onStepError(a.state), { holds: "new", putBack: true });
        a = advanceRollout(a.state, written);
        assert.deepEqual(onStepError(a.state), { holds: "new", putBack: true });
        const none = advanceRollout(advanceRollout(planRollout({ ...BOX, hasUnit: false }).state, released).state, written);
        assert.deepEqual(onStepError(none.state), { holds: "new", putBack: false });
    });

    it("refuses an observation that does not answer the step", () => {
        const { state } = planRollout(BOX);
        assert.throws(() => advanceRollout(state, written), /observation written does not answer stage keeping/);
    });
});

describe("retry verdict", () => {
    const verdict = (cause: FailureCause, lines: string[] = []) => retryVerdict(cause, lines);

    it("retries a crash, a death after ready, a restart loop and a start that never became ready", () => {
        assert.deepEqual(verdict(crash), { retry: true });
        assert.deepEqual(verdict(diedAfterReady), { retry: true });
        assert.deepEqual(verdict({ kind: "restarted", detail: "the main process 4242 exited" }), { retry: true });
        assert.deepEqual(verdict({ kind: "deadline", budgetMs: 900_000, phase: "warming up", lastHealth: "HTTP 503" }), { retry: true });
        assert.deepEqual(verdict({ kind: "chat-check", reason: "POST /v1/chat/completions: connection reset" }), { retry: true });
        assert.deepEqual(verdict({ kind: "chat-check", status: 503, reason: "POST /v1/chat/completions answered HTTP 503" }), { retry: true });
    });

    it("does not retry SGLang's argparse error (the unit just stops; the journal says why)", () => {
        const v = verdict({ kind: "unit-stopped", activeState: "failed", subState: "failed" }, [
            "usage: sglang serve [-h] [--model-path MODEL_PATH] ...",
            "sglang serve: error: argument --speculative-algorithm: invalid choice: 'MTP' (choose from 'DFLASH', 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')",
        ]);
        assert.deepEqual(v, { retry: false, why: "SGLang's argument parser refused the command line, as it will on every start" });
    });

    it("does not retry a ServerArgs error (a traceback through server_args.py)", () => {
        const v = verdict(
            {
                kind: "fatal-log",
                reason: "ValueError",
                line: "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache",
            },
            [
                "Traceback (most recent call last):",
                '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 681, in __post_init__',
                "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache",
            ],
        );
        assert.equal(v.retry, false);
        assert.match(v.retry ? "" : v.why, /ServerArgs refused the config/);
        assert.equal(
            verdict(
                { kind: "fatal-log", reason: "uncaught exception", line: "Exception: Error: --model-path is required. Please provide the path to the model." },
                ["Exception: Error: --model-path is required. Please provide the path to the model."],
            ).retry,
            false,
        );
    });

    it("does not retry out of memory, whether the cause or only the journal says it", () => {
        assert.equal(verdict({ kind: "fatal-log", reason: "CUDA out of memory", line: "torch.OutOfMemoryError: CUDA out of memory." }).retry, false);
        assert.equal(
            verdict({ kind: "unit-stopped", activeState: "failed", subState: "failed" }, [
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.",
            ]).retry,
            false,
        );
        assert.equal(verdict({ ...diedAfterReady, fatalReason: "CUDA out of memory" }).retry, false);
    });

    it("does not retry checks that judge the config rather than the start", () => {
        assert.equal(verdict({ kind: "auth-check", reason: "answered HTTP 200, not 401" }).retry, false);
        assert.equal(verdict({ kind: "speculative-check", reason: "no speculative algorithm" }).retry, false);
        assert.equal(verdict({ kind: "chat-check", status: 200, reason: "degenerate output" }).retry, false);
        assert.equal(verdict({ kind: "poll-error", reason: "connection refused" }).retry, false);
    });

    it("retries a registered post-ready check's failure only when the check says a new start could pass it", () => {
        assert.deepEqual(verdict({ kind: "post-ready-check", check: "tool-call", reason: "no tool call in the answer", retry: false }), {
            retry: false,
            why: "the tool-call check judges the config, not the start",
        });
        assert.deepEqual(verdict({ kind: "post-ready-check", check: "tool-call", reason: "POST /v1/chat/completions: connection reset", retry: true }), {
            retry: true,
        });
        // The journal still overrules a retry: out of memory fails every start.
        assert.equal(
            verdict({ kind: "post-ready-check", check: "tool-call", reason: "connection reset", retry: true }, ["torch.OutOfMemoryError: CUDA out of memory."])
                .retry,
            false,
        );
    });
});
