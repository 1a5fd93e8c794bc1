import assert from "node:assert/strict";
import {
    classifyJournalLine,
    formatProgress,
    HealthObservation,
    describeFailure,
    initialReadinessState,
    Observation,
    ReadinessDecision,
    step,
    UnitStatus,
} from "../../core/readiness/readiness";
import { readinessCondition } from "../../core/readiness/readiness-condition";

// Startup log of SGLang 0.5.11 serving Qwen3.6-27B at TP 2 with NEXTN, as
// journalctl -o cat shows it (sglang-facts.md, "Startup log, in order").
const GOOD_STARTUP = {
    warnings: [
        "/opt/sglang/venv/lib/python3.12/site-packages/sglang/launch_server.py:51: UserWarning: 'python -m sglang.launch_server' is deprecated. Please use 'sglang serve' instead.",
        "  warnings.warn(",
        "`torch_dtype` is deprecated! Use `dtype` instead!",
        "[2026-05-02 10:00:01] Attention backend not specified. Use flashinfer backend by default.",
        "[2026-05-02 10:00:01] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.",
        "[2026-05-02 10:00:01] server_args=ServerArgs(model_path='/models/Qwen3.6-27B', tokenizer_path='/models/Qwen3.6-27B', tp_size=2, mem_fraction_static=0.88, speculative_algorithm='EAGLE', speculative_num_steps=1, mamba_scheduler_strategy='extra_buffer', watchdog_timeout=300, disable_radix_cache=False)",
        "[2026-05-02 10:00:05 TP0] Init torch distributed begin.",
        "[2026-05-02 10:00:05 TP1] Init torch distributed begin.",
        "[2026-05-02 10:00:06 TP0] Init torch distributed ends. elapsed=0.91 s, mem usage=0.32 GB",
    ],
    weights: [
        "[2026-05-02 10:00:07 TP0] Load weight begin. avail mem=46.89 GB",
        "[2026-05-02 10:00:07 TP1] Load weight begin. avail mem=46.89 GB",
        "[2026-05-02 10:00:08 TP0] using attn output gate!",
        "[2026-05-02 10:00:50 TP0] Load weight end. elapsed=43.01 s, type=Qwen3_5ForConditionalGeneration, avail mem=20.61 GB, mem usage=26.28 GB.",
        "[2026-05-02 10:00:51 TP1] Load weight end. elapsed=43.80 s, type=Qwen3_5ForConditionalGeneration, avail mem=20.61 GB, mem usage=26.28 GB.",
    ],
    caches: [
        "[2026-05-02 10:00:53 TP0] Mamba Cache is allocated. max_mamba_cache_size: 96, conv_state size: 0.05GB, ssm_state size: 2.25GB",
        "[2026-05-02 10:00:53 TP0] KV Cache is allocated. #tokens: 412345, K size: 4.03 GB, V size: 4.03 GB",
        "[2026-05-02 10:00:54 TP0] Memory pool end. avail mem=6.56 GB",
    ],
    graphs: [
        "[2026-05-02 10:00:55 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.56 GB",
        "[2026-05-02 10:00:55 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=6.56 GB",
        "[2026-05-02 10:02:41 TP0] Capture cuda graph end. Time elapsed: 106.20 s. mem usage=1.16 GB. avail mem=5.40 GB.",
        "[2026-05-02 10:02:42 TP0] max_total_num_tokens=412345, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=262144, available_gpu_mem=5.40 GB",
    ],
    http: [
        "[2026-05-02 10:02:43] INFO:     Started server process [4242]",
        "[2026-05-02 10:02:43] INFO:     Waiting for application startup.",
        "[2026-05-02 10:02:43] INFO:     Application startup complete.",
        "[2026-05-02 10:02:43] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    ],
    warmup: [
        '[2026-05-02 10:02:44] INFO:     127.0.0.1:51234 - "GET /model_info HTTP/1.1" 200 OK',
        "[2026-05-02 10:02:44 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0",
        '[2026-05-02 10:02:46] INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK',
    ],
    ready: ["[2026-05-02 10:02:46] The server is fired up and ready to roll!"],
};

const VALUE_ERROR_STARTUP = [
    ...GOOD_STARTUP.warnings.slice(0, 5),
    "Traceback (most recent call last):",
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 1480, in _handle_mamba_radix_cache',
    "    raise ValueError(",
    "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.",
];

const HARMLESS = [
    GOOD_STARTUP.warnings[0]!,
    "`torch_dtype` is deprecated! Use `dtype` instead!",
    "[2026-05-02 10:00:01] Attention backend not specified. Use flashinfer backend by default.",
    "[2026-05-02 10:00:01] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.",
    "[2026-05-02 10:00:01] Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm. You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental overlap scheduler.",
    "FutureWarning: passing a dict will raise a ValueError in a future version",
    "[2026-05-02 10:00:01] speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
    GOOD_STARTUP.warnings[5]!, // server_args=..., with watchdog_timeout=300
];

const BUDGET = 900_000;
const running = (pid = 4242, nRestarts = 0): UnitStatus => ({ activeState: "active", subState: "running", mainPid: pid, nRestarts });
const refused: HealthObservation = { error: "GET http://127.0.0.1:30000/health: connection refused (ECONNREFUSED)" };
const obs = (elapsedMs: number, lines: string[], health: HealthObservation = refused, unit: UnitStatus = running()): Observation => ({
    elapsedMs,
    unit,
    newJournalLines: lines,
    health,
});

function runAll(observations: Observation[], grace?: number): ReadinessDecision[] {
    let state = initialReadinessState({ startupTimeoutMs: BUDGET, ...(grace !== undefined ? { healthOnlyGracePolls: grace } : {}) });
    return observations.map((o) => {
        const r = step(state, o);
        state = r.state;
        return r.decision;
    });
}

describe("classifyJournalLine", () => {
    it("calls the ready line ready", () => {
        assert.deepEqual(classifyJournalLine(GOOD_STARTUP.ready[0]!), { kind: "ready" });
    });

    it("does not call the harmless startup warnings fatal", () => {
        for (const line of HARMLESS) assert.notEqual(classifyJournalLine(line).kind, "fatal", line);
    });

    it("calls the ValueError of the radix-cache rule fatal", () => {
        assert.deepEqual(classifyJournalLine(VALUE_ERROR_STARTUP.at(-1)!), { kind: "fatal", reason: "ValueError" });
    });

    it("calls each of SGLang's fatal markers fatal", () => {
        const lines = [
            "Traceback (most recent call last):",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.41 GiB",
            "AssertionError",
            "[2026-05-02 10:02:50] Initialization failed. warmup error: Traceback (most recent call last):",
            "[2026-05-02 10:05:00 TP1] Scheduler hit an exception: Traceback (most recent call last):",
            "[2026-05-02 10:05:00 TP0] Watchdog timeout (self.watchdog_timeout=300)",
            "[2026-05-02 10:05:00] Received sigquit from a child process. It usually means the child failed.",
            "TypeError: '<' not supported between instances of 'NoneType' and 'int'",
        ];
        for (const line of lines) assert.equal(classifyJournalLine(line).kind, "fatal", line);
    });

    it("names the scheduler, not the traceback, when both are on one line", () => {
        assert.deepEqual(classifyJournalLine("[TP1] Scheduler hit an exception: Traceback (most recent call last):"), {
            kind: "fatal",
            reason: "scheduler died",
        });
    });

    it("maps the startup markers to phases in order", () => {
        const phaseOf = (l: string) => {
            const c = classifyJournalLine(l);
            return c.kind === "phase" ? c.phase : null;
        };
        assert.equal(phaseOf(GOOD_STARTUP.weights[0]!), "loading weights");
        assert.equal(phaseOf(GOOD_STARTUP.caches[1]!), "allocating caches");
        assert.equal(phaseOf(GOOD_STARTUP.caches[2]!), "allocating caches");
        assert.equal(phaseOf(GOOD_STARTUP.graphs[0]!), "capturing CUDA graphs");
        assert.equal(phaseOf(GOOD_STARTUP.http[3]!), "starting HTTP server");
        assert.equal(phaseOf(GOOD_STARTUP.http[2]!), "starting HTTP server");
        assert.equal(phaseOf(GOOD_STARTUP.warmup[2]!), "warming up");
    });

    it("does not call Application startup complete ready (warmup follows)", () => {
        assert.notEqual(classifyJournalLine("INFO:     Application startup complete.").kind, "ready");
    });
});

describe("readiness state machine", () => {
    it("walks a good startup through every phase and is ready on health 200 plus the ready line", () => {
        const d = runAll([
            obs(1_000, GOOD_STARTUP.warnings),
            obs(8_000, GOOD_STARTUP.weights),
            obs(54_000, GOOD_STARTUP.caches),
            obs(56_000, GOOD_STARTUP.graphs.slice(0, 2)),
            obs(162_000, GOOD_STARTUP.graphs.slice(2)),
            obs(163_000, GOOD_STARTUP.http, { status: 503 }),
            obs(165_000, GOOD_STARTUP.warmup, { status: 503 }),
            obs(166_000, GOOD_STARTUP.ready, { status: 200 }),
        ]);
        assert.deepEqual(
            d.map((x) => (x.kind === "waiting" ? x.phase : x.kind)),
            ["starting", "loading weights", "allocating caches", "capturing CUDA graphs", "capturing CUDA graphs", "warming up", "warming up", "ready"],
        );
        const last = d.at(-1)!;
        assert.equal(last.kind, "ready");
        if (last.kind !== "ready") return;
        assert.equal(last.corroboratedBy, "health+log");
        assert.equal(last.elapsedMs, 166_000);
        assert.deepEqual(
            last.phaseTimeline.map((p) => [p.phase, p.enteredAtMs]),
            [
                ["starting", 0],
                ["loading weights", 8_000],
                ["allocating caches", 54_000],
                ["capturing CUDA graphs", 56_000],
                ["starting HTTP server", 163_000],
                ["warming up", 163_000],
            ],
        );
    });

    it("keeps waiting when the ready line is seen but /health is still 503", () => {
        const d = runAll([obs(1_000, [...GOOD_STARTUP.http, ...GOOD_STARTUP.ready], { status: 503 })]);
        assert.equal(d[0]!.kind, "waiting");
    });

    it("waits a few polls for the ready line when /health is 200 early, then believes /health alone", () => {
        const d = runAll([obs(1_000, [], { status: 200 }), obs(2_000, [], { status: 200 }), obs(3_000, [], { status: 200 })]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["waiting", "waiting", "ready"],
        );
        const last = d[2]!;
        assert.equal(last.kind === "ready" && last.corroboratedBy, "health-only");
    });

    it("restarts the health-only count when /health drops back", () => {
        const d = runAll([obs(1_000, [], { status: 200 }), obs(2_000, [], { status: 503 }), obs(3_000, [], { status: 200 }), obs(4_000, [], { status: 200 })]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["waiting", "waiting", "waiting", "waiting"],
        );
    });

    it("fails on the poll that shows the ValueError and names the exception line, not the traceback header", () => {
        const d = runAll([obs(1_000, GOOD_STARTUP.warnings.slice(0, 2)), obs(14_000, VALUE_ERROR_STARTUP.slice(2))]);
        assert.equal(d[0]!.kind, "waiting");
        const f = d[1]!;
        assert.equal(f.kind, "failed");
        if (f.kind !== "failed") return;
        assert.equal(f.elapsedMs, 14_000);
        assert.deepEqual(f.cause, { kind: "fatal-log", reason: "ValueError", line: VALUE_ERROR_STARTUP.at(-1)! });
    });

    it("fails on an out-of-memory error while loading", () => {
        const d = runAll([
            obs(8_000, GOOD_STARTUP.weights.slice(0, 2)),
            obs(30_000, [
                "[2026-05-02 10:00:30 TP1] Scheduler hit an exception: Traceback (most recent call last):",
                '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2890, in run_scheduler_process',
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 1 has a total capacity of 47.41 GiB of which 1.02 GiB is free.",
            ]),
        ]);
        const f = d[1]!;
        assert.equal(f.kind, "failed");
        assert.equal(f.kind === "failed" && f.phase, "loading weights");
        assert.equal(f.kind === "failed" && f.cause.kind === "fatal-log" && f.cause.reason, "scheduler died");
    });

    it("fails when the unit leaves active, even with no log line", () => {
        const d = runAll([obs(1_000, []), obs(2_000, [], refused, { activeState: "failed", subState: "failed", mainPid: 0, nRestarts: 0 })]);
        assert.deepEqual(d[1]!.kind === "failed" && d[1]!.cause, { kind: "unit-stopped", activeState: "failed", subState: "failed" });
    });

    it("fails on a restart loop seen as a MainPID change", () => {
        const d = runAll([obs(1_000, [], refused, running(4242)), obs(2_000, [], refused, running(4242)), obs(3_000, [], refused, running(5100))]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["waiting", "waiting", "failed"],
        );
        const f = d[2]!;
        assert.equal(f.kind === "failed" && f.cause.kind, "restarted");
        assert.match(f.kind === "failed" && f.cause.kind === "restarted" ? f.cause.detail : "", /MainPID 4242 -> 5100/);
    });

    it("fails when NRestarts increases", () => {
        const d = runAll([obs(1_000, [], refused, running(4242, 2)), obs(2_000, [], refused, running(4242, 3))]);
        assert.equal(d[1]!.kind, "failed");
    });

    it("fails when systemd is waiting to restart the unit", () => {
        const d = runAll([obs(1_000, [], refused, { activeState: "activating", subState: "auto-restart", mainPid: 0, nRestarts: 1 })]);
        assert.equal(d[0]!.kind === "failed" && d[0]!.cause.kind, "restarted");
    });

    it("does not take the first MainPID until there is one (start-pre has none)", () => {
        const d = runAll([
            obs(1_000, [], refused, { activeState: "activating", subState: "start-pre", mainPid: 0, nRestarts: 0 }),
            obs(2_000, [], refused, running(4242)),
            obs(3_000, [], refused, running(4242)),
        ]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["waiting", "waiting", "waiting"],
        );
    });

    it("fails when the scheduler dies while the HTTP server stays up with /health 503", () => {
        const d = runAll([
            obs(163_000, GOOD_STARTUP.http, { status: 503 }),
            obs(170_000, ["[2026-05-02 10:02:50 TP0] Scheduler hit an exception: Traceback (most recent call last):", "RuntimeError: NCCL error"], {
                status: 503,
            }),
        ]);
        const f = d[1]!;
        assert.equal(f.kind, "failed");
        assert.equal(f.kind === "failed" && f.phase, "warming up");
        assert.equal(f.kind === "failed" && f.cause.kind === "fatal-log" && f.cause.reason, "scheduler died");
    });

    it("fails on a fatal line even when /health answered 200 in the same poll", () => {
        const d = runAll([obs(1_000, [...GOOD_STARTUP.ready, "[TP0] Watchdog timeout (self.watchdog_timeout=300)"], { status: 200 })]);
        assert.equal(d[0]!.kind, "failed");
    });

    it("fails at the deadline, not before, naming the phase and the last health answer", () => {
        const d = runAll([obs(56_000, GOOD_STARTUP.graphs.slice(0, 1), refused), obs(900_000, [], { status: 503 }), obs(900_001, [], { status: 503 })]);
        assert.deepEqual(
            d.map((x) => x.kind),
            ["waiting", "waiting", "failed"],
        );
        const f = d[2]!;
        assert.deepEqual(f.kind === "failed" && f.cause, { kind: "deadline", budgetMs: BUDGET, phase: "capturing CUDA graphs", lastHealth: "HTTP 503" });
    });

    it("repeats its verdict once failed", () => {
        let s = initialReadinessState({ startupTimeoutMs: BUDGET });
        const first = step(s, obs(1_000, ["AssertionError"]));
        s = first.state;
        const again = step(s, obs(2_000, GOOD_STARTUP.ready, { status: 200 }));
        assert.deepEqual(again.decision, first.decision);
    });

    it("formats progress as one line with phase, elapsed time, what is awaited and the budget", () => {
        const d = runAll([obs(42_000, GOOD_STARTUP.graphs.slice(0, 1))]);
        assert.equal(formatProgress(d[0]!), "[readiness] capturing CUDA graphs — 42 s elapsed, waiting for GET /health = 200 (budget 900 s)");
    });

    it("puts the fatal line into the failure message", () => {
        const d = runAll([obs(14_000, VALUE_ERROR_STARTUP)]);
        assert.match(formatProgress(d[0]!), /failed after 14 s during starting: fatal log line \(ValueError\): ValueError: Speculative decoding/);
    });
});

describe("the readiness machine as a condition of the poll loop", () => {
    const early = (o: Observation) => ({ elapsedMs: o.elapsedMs, unit: o.unit, newJournalLines: o.newJournalLines });

    it("waits by phase at the poll interval, then polls at 250 ms once the HTTP server is up", () => {
        const c = readinessCondition({ startupTimeoutMs: BUDGET }, { pollIntervalMs: 1_000, attempt: { attempt: 1, attempts: 2 } });
        const loading = c.judge(obs(7_000, GOOD_STARTUP.weights));
        assert.deepEqual(loading, {
            kind: "waiting",
            topic: "loading weights",
            nextPollMs: 1_000,
            progress: "[readiness] loading weights — 7 s elapsed, waiting for GET /health = 200 (budget 900 s, attempt 1 of 2)",
        });
        const http = c.judge(obs(160_000, GOOD_STARTUP.http));
        assert.equal(http.kind === "waiting" && http.nextPollMs, 250);
        // A poll interval shorter than that is kept.
        const fast = readinessCondition({ startupTimeoutMs: BUDGET }, { pollIntervalMs: 100 });
        const v = fast.judge(obs(160_000, GOOD_STARTUP.http));
        assert.equal(v.kind === "waiting" && v.nextPollMs, 100);
    });

    it("is met when ready, with the unit the ready poll saw", () => {
        const c = readinessCondition({ startupTimeoutMs: BUDGET }, { pollIntervalMs: 1_000 });
        c.judge(obs(160_000, [...GOOD_STARTUP.http, ...GOOD_STARTUP.warmup], { status: 503 }, running(4343, 1)));
        const v = c.judge(obs(163_000, GOOD_STARTUP.ready, { status: 200 }, running(4343, 1)));
        assert.equal(v.kind, "met");
        if (v.kind !== "met") return;
        assert.deepEqual(v.value.unit, running(4343, 1));
        assert.equal(v.value.ready.corroboratedBy, "health+log");
        assert.equal(v.message, "[readiness] ready after 163 s (GET /health = 200 and the ready log line)");
    });

    it("fails on a fatal line before /health answers, and keeps the phase it failed in", () => {
        const c = readinessCondition({ startupTimeoutMs: BUDGET }, { pollIntervalMs: 1_000 });
        assert.equal(c.judgeEarly(early(obs(7_000, GOOD_STARTUP.weights))), null);
        const f = c.judgeEarly(early(obs(20_000, ["CUDA out of memory. Tried to allocate 2.00 GiB"])));
        assert.equal(f?.cause.kind, "fatal-log");
        assert.match(f?.message ?? "", /^\[readiness\] failed after 20 s during starting: fatal log line \(CUDA out of memory\)/);
        assert.equal(c.state.final?.kind, "failed");
    });

    it("leaves the deadline to the whole poll, whose message names the last /health answer", () => {
        const c = readinessCondition({ startupTimeoutMs: 10_000 }, { pollIntervalMs: 1_000 });
        assert.equal(c.judgeEarly(early(obs(11_000, []))), null);
        const v = c.judge(obs(11_000, [], { status: 503 }));
        assert.match(v.kind === "failed" ? v.message : "", /last GET \/health: HTTP 503/);
    });

    it("tells a failure found outside it (the poll, a post-ready check) with its phase and attempt", () => {
        const c = readinessCondition({ startupTimeoutMs: BUDGET }, { pollIntervalMs: 1_000, attempt: { attempt: 2, attempts: 2 } });
        c.judge(obs(7_000, GOOD_STARTUP.weights));
        assert.equal(
            c.failureMessage({ kind: "post-ready-check", check: "tool-call", reason: "no tool call in the answer", retry: false }, 9_000),
            "[readiness] failed after 9 s during loading weights: the server is up but failed the tool-call check: no tool call in the answer",
        );
    });
});

describe("describeFailure of a post-ready check", () => {
    it("names the check and its reason", () => {
        assert.equal(
            describeFailure({ kind: "post-ready-check", check: "served-model-listed", reason: "GET /v1/models lists no qwen", retry: true }),
            "the server is up but failed the served-model-listed check: GET /v1/models lists no qwen",
        );
    });
});
