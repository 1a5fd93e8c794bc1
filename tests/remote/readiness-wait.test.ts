import assert from "node:assert/strict";
import type { UnitStatus } from "../../core/readiness/readiness";
import { HttpResult, ProbeOptions } from "../../remote/probe";
import { POST_READY_CHECKS } from "../../remote/checks/registry";
import { journalPosition, parsePollOutput, readJournalTail, waitUntilReady, WaitUntilReadyOptions } from "../../remote/readiness-wait";
import { FakeBox } from "./fake-box";
import { servedModelListedCheck } from "./served-model-listed-check";

// The readiness wait's real poll script runs in a local shell against fake systemctl and
// journalctl (fake-box.ts); HTTP and the clock are fakes driven by a scenario:
// one frame per poll, applied while the wait sleeps.

interface Frame {
    lines?: string[];
    unit?: UnitStatus;
    health: HttpResult;
}

const refused: HttpResult = { error: "GET http://127.0.0.1:30000/health: connection refused (ECONNREFUSED)", code: "ECONNREFUSED" };
const status = (s: number, body: unknown = {}): HttpResult => ({ status: s, body, text: JSON.stringify(body) });
const completion = (content: string) => ({
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "length" }],
});
const serverInfo = (algo: string | null, accept?: number) => ({
    model_path: "/models/Qwen3.6-27B",
    speculative_algorithm: algo,
    internal_states: accept === undefined ? [{}] : [{ avg_spec_accept_length: accept }],
    version: "0.5.11",
});

const GOOD: Frame[] = [
    {
        lines: [
            "`torch_dtype` is deprecated! Use `dtype` instead!",
            "[2026-05-02 10:00:01] Attention backend not specified. Use flashinfer backend by default.",
        ],
        health: refused,
    },
    { lines: ["[2026-05-02 10:00:07 TP0] Load weight begin. avail mem=46.89 GB"], health: refused },
    { lines: [], health: refused },
    { lines: ["[2026-05-02 10:00:54 TP0] Memory pool end. avail mem=6.56 GB"], health: refused },
    { lines: ["[2026-05-02 10:00:55 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.56 GB"], health: refused },
    { lines: ["[2026-05-02 10:02:43] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"], health: status(503) },
    { lines: ["[2026-05-02 10:02:46] The server is fired up and ready to roll!"], health: status(200) },
];

interface Run {
    box: FakeBox;
    progress: string[];
    posts: Array<{ url: string; payload: unknown; opts: ProbeOptions }>;
    gets: Array<{ url: string; opts: ProbeOptions }>;
}

async function runWait(
    frames: Frame[],
    extra: Partial<WaitUntilReadyOptions> & { chat?: HttpResult; info?: HttpResult; modelsWithoutKey?: HttpResult; modelsWithKey?: HttpResult } = {},
): Promise<{ result: Awaited<ReturnType<typeof waitUntilReady>>; calls: string[] } & Run> {
    const box = new FakeBox();
    const progress: string[] = [];
    const posts: Run["posts"] = [];
    const gets: Run["gets"] = [];
    let clock = 0;
    let frame = 0;
    const apply = (f: Frame): void => {
        if (f.unit) box.setUnit(f.unit);
        box.appendJournal(f.lines ?? []);
    };
    apply(frames[0]!);
    try {
        const result = await waitUntilReady({
            remote: box,
            unit: "sglang-qwen.service",
            endpoint: "http://127.0.0.1:30000/",
            apiKey: "sk-test-key",
            startupTimeoutMs: 900_000,
            probeTimeoutMs: 30_000,
            since: { time: "@1767268800" },
            chatCheck: true,
            servedModelName: "qwen3.6-27b",
            expectedSpeculative: "NEXTN",
            onProgress: (m) => progress.push(m),
            now: () => clock,
            sleep: async (ms) => {
                clock += ms;
                frame = Math.min(frame + 1, frames.length - 1);
                if (frame < frames.length) apply(frames[frame]!);
                // A frame is applied once; the last one repeats without new lines.
                frames[frame] = { ...frames[frame]!, lines: [] };
            },
            http: {
                get: async (url, opts) => {
                    gets.push({ url, opts });
                    if (url.endsWith("/health")) return frames[frame]!.health;
                    if (url.endsWith("/server_info")) return extra.info ?? status(200, serverInfo("EAGLE", 1.8));
                    // SGLang's API-key middleware: 401 without the Bearer token.
                    if (url.endsWith("/v1/models")) {
                        return opts.bearer
                            ? (extra.modelsWithKey ?? status(200, { object: "list", data: [] }))
                            : (extra.modelsWithoutKey ?? status(401, { error: "Unauthorized" }));
                    }
                    return status(404);
                },
                post: async (url, payload, opts) => {
                    posts.push({ url, payload, opts });
                    return extra.chat ?? status(200, completion("The capital of France is Paris."));
                },
            },
            ...extra,
        });
        // The fake tools' call log, read before the box is removed.
        return { result, box, calls: box.calls(), progress, posts, gets };
    } finally {
        box.destroy();
    }
}

describe("waitUntilReady", () => {
    it("is ready after a good startup, with the phase timeline, the chat check and speculation checked", async () => {
        const { result, progress, posts, gets } = await runWait(GOOD.map((f) => ({ ...f })));
        assert.equal(result.ok, true, JSON.stringify(result));
        if (!result.ok) return;
        // 1 s polls until the HTTP server is up, then 250 ms polls (near ready).
        assert.equal(result.readyAtMs, 5_250);
        assert.equal(result.corroboratedBy, "health+log");
        assert.deepEqual(
            result.phaseTimeline.map((p) => p.phase),
            ["starting", "loading weights", "allocating caches", "capturing CUDA graphs", "starting HTTP server", "warming up"],
        );
        assert.equal(result.chatText, "The capital of France is Paris.");
        assert.equal(result.acceptLength, 1.8);
        assert.deepEqual(result.serverInfo, serverInfo("EAGLE", 1.8));
        // Progress on each phase change, not on every poll.
        assert.deepEqual(
            progress.filter((m) => m.includes("waiting")).map((m) => m.replace(/ —.*/, "")),
            [
                "[readiness] starting",
                "[readiness] loading weights",
                "[readiness] allocating caches",
                "[readiness] capturing CUDA graphs",
                "[readiness] warming up",
            ],
        );
        assert.ok(
            progress.some((m) => m.startsWith("[readiness] ready after 5 s")),
            progress.join("\n"),
        );
        // The chat completion: short, to the served model, with the key as a Bearer token.
        assert.equal(posts.length, 1);
        assert.equal(posts[0]!.url, "http://127.0.0.1:30000/v1/chat/completions");
        assert.equal((posts[0]!.payload as { max_tokens: number }).max_tokens, 16);
        assert.equal((posts[0]!.payload as { model: string }).model, "qwen3.6-27b");
        assert.equal(posts[0]!.opts.bearer, "sk-test-key");
        // /health is probed without the key; /server_info with it.
        assert.equal(gets.find((g) => g.url.endsWith("/health"))!.opts.bearer, undefined);
        assert.equal(gets.find((g) => g.url.endsWith("/server_info"))!.opts.bearer, "sk-test-key");
        assert.ok(progress.every((m) => !m.includes("sk-test-key")));
    });

    it("runs one remote command per poll, reading the journal from the cursor after the first", async () => {
        const { box, calls, result } = await runWait(GOOD.map((f) => ({ ...f })));
        assert.equal(result.ok, true);
        const polls = box.runs.filter((a) => a[2]?.includes("systemctl show"));
        assert.equal(polls.length, 7);
        assert.equal(box.runs.length, 7);
        const journalCalls = calls.filter((c) => c.startsWith("journalctl"));
        assert.match(journalCalls[0]!, /-u sglang-qwen\.service .*--since=@1767268800/);
        assert.match(journalCalls[1]!, /--after-cursor=c=2$/);
        assert.ok(calls.some((c) => c === "systemctl show -p ActiveState,SubState,MainPID,NRestarts -- sglang-qwen.service"));
    });

    it("fails on the poll that shows SGLang's ValueError, with the journal's last lines", async () => {
        const valueError =
            "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.";
        const { result, posts } = await runWait([
            { lines: ["[2026-05-02 10:00:01] Attention backend not specified. Use flashinfer backend by default."], health: refused },
            { lines: ["Traceback (most recent call last):", '  File "server_args.py", line 1480', valueError], health: refused },
            { lines: [], unit: { activeState: "failed", subState: "failed", mainPid: 0, nRestarts: 0 }, health: refused },
        ]);
        assert.equal(result.ok, false);
        if (result.ok) return;
        assert.deepEqual(result.cause, { kind: "fatal-log", reason: "ValueError", line: valueError });
        assert.match(result.message, /failed after 1 s during starting/);
        assert.equal(result.lastJournalLines.at(-1), valueError);
        assert.equal(posts.length, 0);
    });

    it("reports a crash in the journal without waiting for a /health probe that hangs", async function () {
        this.timeout(5_000);
        const box = new FakeBox();
        try {
            box.appendJournal(["[2026-05-02 10:05:00 TP0] Watchdog timeout (self.watchdog_timeout=300)"]);
            const result = await waitUntilReady({
                remote: box,
                unit: "sglang-qwen.service",
                endpoint: "http://127.0.0.1:30000",
                startupTimeoutMs: 900_000,
                probeTimeoutMs: 30_000,
                since: { time: "@0" },
                chatCheck: false,
                servedModelName: "m",
                // A wedged server's /health: no answer for as long as the test runs.
                http: { get: () => new Promise<HttpResult>(() => undefined), post: async () => refused },
                sleep: async () => undefined,
            });
            assert.equal(!result.ok && result.cause.kind === "fatal-log" && result.cause.reason, "watchdog timeout");
        } finally {
            box.destroy();
        }
    });

    it("fails a server that answers /health but generates garbage", async () => {
        const { result } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { chat: status(200, completion("!!!!!!!!!!!!!!!!")) },
        );
        assert.equal(result.ok, false);
        assert.equal(!result.ok && result.cause.kind, "chat-check");
    });

    it("fails when the chat completion is refused", async () => {
        const { result } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { chat: status(401, { error: "Unauthorized" }) },
        );
        assert.equal(
            !result.ok && result.cause.kind === "chat-check" && result.cause.reason,
            'POST /v1/chat/completions answered HTTP 401: {"error":"Unauthorized"}',
        );
    });

    it("fails when speculative decoding is configured but /server_info shows none", async () => {
        const { result } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { info: status(200, serverInfo(null)) },
        );
        assert.equal(!result.ok && result.cause.kind, "speculative-check");
    });

    it("checks that a request without the API key is refused with 401, sending no Authorization header", async () => {
        const { result, gets, progress } = await runWait(GOOD.map((f) => ({ ...f })));
        assert.equal(result.ok, true, JSON.stringify(result));
        const check = gets.filter((g) => g.url === "http://127.0.0.1:30000/v1/models");
        assert.equal(check.length, 1);
        assert.equal(check[0]!.opts.bearer, undefined);
        assert.ok(progress.includes("[readiness] a request without the API key is refused (GET /v1/models = 401)"), progress.join("\n"));
    });

    it("fails the rollout when a server with a key answers a request without it", async () => {
        const { result, posts } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { modelsWithoutKey: status(200, { object: "list", data: [] }) },
        );
        assert.equal(result.ok, false);
        if (result.ok) return;
        assert.equal(result.cause.kind, "auth-check");
        assert.match(result.message, /does not enforce its API key: GET \/v1\/models without the key answered HTTP 200, not 401/);
        // Judged before the chat check: an open server is not rolled out however well it answers.
        assert.equal(posts.length, 0);
    });

    it("fails the auth check when the request without the key gets no answer", async () => {
        const { result } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { modelsWithoutKey: refused },
        );
        assert.equal(!result.ok && result.cause.kind, "auth-check");
    });

    it("does not check authentication when the server has no key", async () => {
        const { result, gets } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { apiKey: undefined },
        );
        assert.equal(result.ok, true, JSON.stringify(result));
        assert.equal(gets.filter((g) => g.url.endsWith("/v1/models")).length, 0);
    });

    it("skips the chat check and the speculation check when not asked for", async () => {
        const { result, posts } = await runWait(
            GOOD.map((f) => ({ ...f })),
            {
                chatCheck: false,
                expectedSpeculative: undefined,
                info: { error: "GET /server_info: connection reset" },
            },
        );
        assert.equal(result.ok, true);
        assert.equal(result.ok && result.serverInfo, null);
        assert.equal(posts.length, 0);
    });

    it("fails when the unit cannot be polled", async () => {
        const result = await waitUntilReady({
            remote: { describe: () => "broken", run: async () => ({ code: 127, stdout: "", stderr: "sh: 1: systemctl: not found" }) },
            unit: "sglang-qwen.service",
            endpoint: "http://127.0.0.1:30000",
            startupTimeoutMs: 900_000,
            probeTimeoutMs: 1_000,
            since: { time: "@0" },
            chatCheck: false,
            servedModelName: "m",
            http: { get: async () => refused, post: async () => refused },
            sleep: async () => undefined,
        });
        assert.equal(!result.ok && result.cause.kind, "poll-error");
        assert.match(!result.ok && result.cause.kind === "poll-error" ? result.cause.reason : "", /systemctl: not found/);
    });
});

describe("waitUntilReady: a check registered beside the others", () => {
    // remote/checks/registry.ts holds the list; a new check is one file
    // (served-model-listed-check.ts here) and its line in that list.
    const checks = [...POST_READY_CHECKS, servedModelListedCheck];
    const listed = status(200, { object: "list", data: [{ id: "qwen3.6-27b", object: "model" }] });

    it("runs after the registered checks, with the key, and says its pass", async () => {
        const { result, progress, gets } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { checks, modelsWithKey: listed },
        );
        assert.equal(result.ok, true, JSON.stringify(result));
        const speculationAt = progress.findIndex((m) => m.startsWith("[readiness] speculative decoding active"));
        const listedAt = progress.indexOf("[readiness] GET /v1/models lists qwen3.6-27b");
        assert.ok(speculationAt >= 0 && listedAt > speculationAt, progress.join("\n"));
        assert.deepEqual(
            gets.filter((g) => g.url.endsWith("/v1/models")).map((g) => g.opts.bearer),
            [undefined, "sk-test-key"],
        );
    });

    it("fails the start with its own cause, told as every failure of the readiness wait is", async () => {
        const { result, progress } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { checks },
        );
        assert.equal(result.ok, false);
        if (result.ok) return;
        assert.deepEqual(result.cause, {
            kind: "post-ready-check",
            check: "served-model-listed",
            reason: "GET /v1/models (HTTP 200) lists [], not qwen3.6-27b",
            retry: false,
        });
        assert.equal(
            result.message,
            "[readiness] failed after 5 s during warming up: the server is up but failed the served-model-listed check: GET /v1/models (HTTP 200) lists [], not qwen3.6-27b",
        );
        assert.ok(progress.includes(result.message));
        assert.deepEqual(
            result.phaseTimeline.map((p) => p.phase),
            ["starting", "loading weights", "allocating caches", "capturing CUDA graphs", "starting HTTP server", "warming up"],
        );
    });

    it("is not run when a registered check before it failed", async () => {
        const { result, gets } = await runWait(
            GOOD.map((f) => ({ ...f })),
            { checks, chat: status(200, completion("!!!!!!!!!!!!!!!!")), modelsWithKey: listed },
        );
        assert.equal(!result.ok && result.cause.kind, "chat-check");
        assert.deepEqual(
            gets.filter((g) => g.url.endsWith("/v1/models")).map((g) => g.opts.bearer),
            [undefined],
        );
    });
});

describe("waitUntilReady: the healthy window after ready", () => {
    const healthy: Frame = { lines: [], health: status(200) };

    it("passes only after the server stayed healthy for the whole window, and says so", async () => {
        const { result, progress } = await runWait([...GOOD.map((f) => ({ ...f })), healthy], { minHealthyMs: 3_000 });
        assert.equal(result.ok, true, JSON.stringify(result));
        assert.ok(
            progress.some((m) => m.startsWith("[readiness] healthy window — ")),
            progress.join("\n"),
        );
        assert.ok(
            progress.some((m) => m.startsWith("[readiness] stayed healthy for 3 s after ready")),
            progress.join("\n"),
        );
        // Ready first, the window after the checks.
        const readyAt = progress.findIndex((m) => m.startsWith("[readiness] ready after"));
        const chatAt = progress.findIndex((m) => m.startsWith("[readiness] chat check passed"));
        const windowAt = progress.findIndex((m) => m.startsWith("[readiness] healthy window"));
        assert.ok(readyAt < chatAt && chatAt < windowAt, progress.join("\n"));
    });

    it("fails a server that dies 3 s after ready, with the cause, the journal and this start's lines", async () => {
        const dead: Frame = { lines: [], unit: { activeState: "activating", subState: "auto-restart", mainPid: 0, nRestarts: 0 }, health: refused };
        const { result, progress } = await runWait([...GOOD.map((f) => ({ ...f })), healthy, healthy, dead], { minHealthyMs: 30_000 });
        assert.equal(result.ok, false);
        if (result.ok) return;
        assert.equal(result.cause.kind, "unhealthy");
        assert.match(
            result.message,
            /in the healthy window: the server was ready but did not stay healthy for 30 s \(readiness\.minHealthySeconds\): after 3 s, the unit is activating\/auto-restart/,
        );
        assert.ok(progress.includes(result.message));
        assert.ok(result.startLines.includes("[2026-05-02 10:02:46] The server is fired up and ready to roll!"), result.startLines.join("\n"));
    });

    it("fails the window on a scheduler death with HTTP up, naming the fatal line", async () => {
        const died: Frame = { lines: ["[2026-05-02 10:03:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"], health: status(503) };
        const { result } = await runWait([...GOOD.map((f) => ({ ...f })), healthy, died], { minHealthyMs: 30_000 });
        assert.equal(!result.ok && result.cause.kind === "unhealthy" && result.cause.fatalReason, "scheduler died");
    });

    it("shows the attempt in its progress lines", async () => {
        const { progress } = await runWait([...GOOD.map((f) => ({ ...f })), healthy], { minHealthyMs: 2_000, attempt: { attempt: 2, attempts: 3 } });
        assert.ok(
            progress.some((m) => /^\[readiness\] loading weights — \d+ s elapsed, .*\(budget 900 s, attempt 2 of 3\)$/.test(m)),
            progress.join("\n"),
        );
        assert.ok(
            progress.some((m) => /^\[readiness\] healthy window — .*\(budget 2 s, attempt 2 of 3\)$/.test(m)),
            progress.join("\n"),
        );
    });

    it("has no window by default", async () => {
        const { result, progress } = await runWait(GOOD.map((f) => ({ ...f })));
        assert.equal(result.ok, true);
        assert.ok(!progress.some((m) => m.includes("healthy window")), progress.join("\n"));
    });
});

describe("waitUntilReady: the lines of a failed start", () => {
    it("reads the journal to its end after a failure, so lines the exit beat into the journal count too", async () => {
        const box = new FakeBox();
        try {
            box.setUnit({ activeState: "failed", subState: "failed", mainPid: 0, nRestarts: 0 });
            let polls = 0;
            const late = ["usage: sglang serve [-h] [--model-path MODEL_PATH] ...", "sglang serve: error: unrecognized arguments: --bogus"];
            const result = await waitUntilReady({
                remote: {
                    describe: () => box.describe(),
                    run: async (argv, opts) => {
                        const r = await box.run(argv, opts);
                        if (argv[2]?.includes("systemctl show") && polls++ === 0) box.appendJournal(late);
                        return r;
                    },
                },
                unit: "sglang-qwen.service",
                endpoint: "http://127.0.0.1:30000",
                startupTimeoutMs: 900_000,
                probeTimeoutMs: 30_000,
                since: { time: "@0" },
                chatCheck: false,
                servedModelName: "m",
                http: { get: async () => refused, post: async () => refused },
                sleep: async () => undefined,
            });
            assert.equal(!result.ok && result.cause.kind, "unit-stopped");
            assert.deepEqual(!result.ok && result.startLines, late);
        } finally {
            box.destroy();
        }
    });
});

describe("journal helpers", () => {
    it("reads the journal position as the cursor of the last entry, or the remote clock when empty", async () => {
        const box = new FakeBox();
        try {
            const empty = await journalPosition(box, "sglang-qwen.service");
            assert.ok("time" in empty && /^@\d+$/.test(empty.time), JSON.stringify(empty));
            box.appendJournal(["one", "two"]);
            assert.deepEqual(await journalPosition(box, "sglang-qwen.service"), { cursor: "c=2" });
        } finally {
            box.destroy();
        }
    });

    it("reads the journal's tail", async () => {
        const box = new FakeBox();
        try {
            box.appendJournal(["a", "b", "c", "d"]);
            assert.deepEqual(await readJournalTail(box, "sglang-qwen.service", 2), ["c", "d"]);
        } finally {
            box.destroy();
        }
    });

    const MARKER = "sglang-serve-0123456789abcdef";

    it("parses a poll's output: unit properties, lines, cursor", () => {
        const out = [
            `${MARKER} state`,
            "ActiveState=active",
            "SubState=running",
            "MainPID=4242",
            "NRestarts=1",
            `${MARKER} journal`,
            "line = with equals",
            "",
            "-- cursor: s=0123;i=2a",
            "",
        ].join("\n");
        assert.deepEqual(parsePollOutput(out, "", 0, MARKER), {
            unit: { activeState: "active", subState: "running", mainPid: 4242, nRestarts: 1 },
            lines: ["line = with equals", ""],
            cursor: "s=0123;i=2a",
            journalError: null,
        });
    });

    it("takes journalctl's silent exit 1 for no entries yet, as systemd 252 answers --show-cursor --since with nothing after it", () => {
        const out = [`${MARKER} state`, "ActiveState=activating", "SubState=start", "MainPID=77", "NRestarts=0", `${MARKER} journal`, ""].join("\n");
        assert.deepEqual(parsePollOutput(out, "", 1, MARKER), {
            unit: { activeState: "activating", subState: "start", mainPid: 77, nRestarts: 0 },
            lines: [],
            cursor: null,
            journalError: null,
        });
    });

    it("still reports a journalctl that fails with a message", () => {
        const out = [`${MARKER} state`, "ActiveState=active", "SubState=running", "MainPID=77", "NRestarts=0", `${MARKER} journal`, ""].join("\n");
        assert.equal(parsePollOutput(out, "Failed to open journal: Permission denied\n", 1, MARKER).journalError, "Failed to open journal: Permission denied");
    });
});
