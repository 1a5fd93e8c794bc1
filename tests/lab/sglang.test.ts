import assert from "node:assert/strict";
import { clearFaults, Faults, LabInfo, setFaults, simulatorEvents } from "../../lab/control";
import { exec, httpRequest, installUnit, journalOnce, LAB_WAIT_MS, lab, ok, runUntilOutput, testLabDir, waitFor } from "./lab-fixture";

const PY = "/opt/sglang/venv/bin/python3";
const MODEL = "/models/Qwen3.6-27B";
const NEXTN_ONE_STEP = "--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2";

/** The field's first (failing) command line, on the lab container's address. */
const fieldFailing = (host: string, port: number) =>
    `${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 ${NEXTN_ONE_STEP} --mem-fraction-static 0.88 --port ${port} --host ${host}`;

const unit = (execStart: string, service = "") =>
    `[Unit]\nDescription=SGLang lab test\n\n[Service]\n${service}ExecStart=${execStart}\n\n[Install]\nWantedBy=multi-user.target\n`;

async function state(name: string): Promise<string> {
    return (await exec("container", `systemctl is-active ${name}`)).stdout.trim();
}

async function startUnit(name: string, text: string): Promise<void> {
    await installUnit(`${name}.service`, text);
    await ok("container", `systemctl daemon-reload && systemctl start ${name}`);
}

async function journal(name: string): Promise<string> {
    return ok("container", `journalctl -u ${name} -o cat --no-pager`);
}

/** The unit's journal once it holds every one of `lines`. */
function journalWithAll(name: string, ...lines: RegExp[]): Promise<string> {
    return journalOnce(name, lines.join(", "), (text) => lines.every((line) => line.test(text)));
}

async function healthy(url: string): Promise<boolean | undefined> {
    const r = await httpRequest(`${url}/health`).catch(() => null);
    return r?.status === 200 ? true : undefined;
}

describe("lab SGLang simulator", function () {
    let info: LabInfo;
    let ct: string;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
        ct = info.container.address;
        clearFaults(testLabDir());
    });

    afterEach(() => clearFaults(testLabDir()));

    describe("the field's failures and fixes", function () {
        this.timeout(2 * LAB_WAIT_MS);

        it("fails the field's first command line before loading anything: the ValueError in the journal, is-active failed", async () => {
            await startUnit("sglang-bad", unit(fieldFailing(ct, 30100)));
            await waitFor("sglang-bad to fail", async () => ((await state("sglang-bad")) === "failed" ? true : undefined));
            const r = await exec("container", "systemctl is-active sglang-bad");
            assert.deepEqual([r.code, r.stdout], [3, "failed\n"]);
            const log = await journal("sglang-bad");
            assert.match(
                log,
                /^ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer\.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1\.$/m,
            );
            assert.match(log, /^Traceback \(most recent call last\):$/m);
            assert.match(log, /^sglang-bad\.service: Main process exited, code=exited, status=1\/FAILURE$/m);
            assert.doesNotMatch(log, /server_args=ServerArgs/, "it fails before loading anything");
        });

        it("brings the field's working command line (extra_buffer + SGLANG_ENABLE_SPEC_V2=1) to ready: /health 200", async () => {
            setFaults({ gpuReleaseDelaySeconds: 4 }, testLabDir());
            const execStart = `${fieldFailing(ct, 30101)} --mamba-scheduler-strategy extra_buffer --served-model-name qwen3.6-27b --api-key lab-secret --enable-metrics`;
            await startUnit("sglang-qwen", unit(execStart, "Environment=SGLANG_ENABLE_SPEC_V2=1\n"));
            const url = `http://${ct}:30101`;
            await waitFor("/health 200 on the working unit", () => healthy(url));
            assert.equal(await state("sglang-qwen"), "active");
            const log = await journalWithAll("sglang-qwen", /The server is fired up and ready to roll!/);
            assert.match(log, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Capture cuda graph begin\. This can take up to several minutes\. avail mem=6\.56 GB$/m);
            assert.match(log, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] The server is fired up and ready to roll!$/m);
            assert.match(log, /speculative_algorithm='EAGLE'/);
            const order = [
                "Attention backend not specified",
                "Max running requests is reset to 48",
                "server_args=ServerArgs(",
                "Init torch distributed begin.",
                "Load weight begin.",
                "using attn output gate!",
                "Load weight end.",
                "KV Cache is allocated.",
                "Capture cuda graph begin.",
                "max_total_num_tokens=",
                "Uvicorn running on",
                "The server is fired up and ready to roll!",
            ];
            const at = order.map((s) => log.indexOf(s));
            assert.ok(
                at.every((i) => i >= 0),
                `missing startup lines: ${order.filter((_, k) => at[k]! < 0).join(", ")}`,
            );
            assert.deepEqual(
                at,
                [...at].sort((a, b) => a - b),
                "startup lines in SGLang's order",
            );

            // The API, with --api-key enforced except on /health* and /metrics.
            assert.equal((await httpRequest(`${url}/v1/models`)).status, 401);
            assert.equal((await httpRequest(`${url}/v1/models`)).body, '{"error":"Unauthorized"}');
            const auth = { authorization: "Bearer lab-secret" };
            const models = JSON.parse((await httpRequest(`${url}/v1/models`, { headers: auth })).body) as {
                data: Array<{ id: string; max_model_len: number }>;
            };
            assert.equal(models.data[0]!.id, "qwen3.6-27b");
            const si = JSON.parse((await httpRequest(`${url}/server_info`, { headers: auth })).body) as Record<string, unknown>;
            assert.equal(si.speculative_algorithm, "EAGLE");
            assert.equal(si.max_running_requests, 48);
            assert.equal(si.mamba_scheduler_strategy, "extra_buffer");
            assert.equal(si.tp_size, 2);
            assert.equal(si.version, "0.5.11");
            const accept = (si.internal_states as Array<{ avg_spec_accept_length: number }>)[0]!.avg_spec_accept_length;
            assert.ok(accept > 1 && accept <= 2, `avg_spec_accept_length ${accept}`);
            assert.equal((await httpRequest(`${url}/get_server_info`, { headers: auth })).status, 200);
            const chat = await httpRequest(`${url}/v1/chat/completions`, {
                method: "POST",
                headers: { ...auth, "content-type": "application/json" },
                body: JSON.stringify({ model: "qwen3.6-27b", messages: [{ role: "user", content: "What is 17+25?" }], max_tokens: 32 }),
            });
            const answer = JSON.parse(chat.body) as { object: string; choices: Array<{ message: { content: string }; finish_reason: string }> };
            assert.equal(answer.object, "chat.completion");
            assert.match(answer.choices[0]!.message.content, /42/);
            assert.equal(answer.choices[0]!.finish_reason, "stop");
            const metrics = await httpRequest(`${url}/metrics`);
            assert.equal(metrics.status, 200);
            assert.match(metrics.body, /^sglang:num_running_reqs\{model_name="qwen3\.6-27b"\} 0\.0$/m);

            // GPU memory: held while running, released a while after the stop.
            const used = async () => (await ok("host", "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits")).trim().split("\n").map(Number);
            assert.ok(
                (await used()).every((m) => m > 40_000),
                "both GPUs hold the model",
            );
            const mainPid = (await ok("container", "systemctl show -p MainPID --value sglang-qwen")).trim();
            assert.match(
                await ok("host", "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits"),
                new RegExp(`^${mainPid}, \\d+$`, "m"),
            );
            await ok("container", "systemctl stop sglang-qwen");
            assert.ok(
                (await used()).every((m) => m > 40_000),
                "still held during the release delay",
            );
            await waitFor("GPU memory to be released", async () => ((await used()).every((m) => m < 100) ? true : undefined));

            const events = simulatorEvents(testLabDir())
                .filter((e) => String(e.pid) === mainPid)
                .map((e) => e.event);
            assert.deepEqual(events, ["launched", "http-up", "ready", "stopped"]);
        });
    });

    describe("argparse and startup checks", function () {
        this.timeout(120_000);

        it("rejects an unknown flag with SGLang's argparse usage and exit 2", async () => {
            const r = await exec("container", `${PY} -m sglang.launch_server --model-path ${MODEL} --foo 3`);
            assert.equal(r.code, 2);
            assert.match(r.stderr, /^usage: sglang serve \[-h\] --model-path MODEL_PATH/m);
            assert.match(r.stderr, /\nsglang serve: error: unrecognized arguments: --foo 3\n$/);
        });

        it("rejects MTP as a speculative algorithm with SGLang 0.5.11's choices (both entry points)", async () => {
            const msg = "argument --speculative-algorithm: invalid choice: 'MTP' (choose from 'DFLASH', 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')";
            const r = await exec("container", `${PY} -m sglang.launch_server --model-path ${MODEL} --speculative-algorithm MTP`);
            assert.equal(r.code, 2);
            assert.ok(r.stderr.endsWith(`sglang serve: error: ${msg}\n`), r.stderr.slice(-300));
            const s = await exec("container", `/opt/sglang/venv/bin/sglang serve --model-path ${MODEL} --speculative-algorithm MTP`);
            assert.equal(s.code, 2);
            assert.ok(s.stderr.endsWith(`sglang serve: error: ${msg}\n`), s.stderr.slice(-300));
        });

        it("raises a bare AssertionError for partial speculative settings", async () => {
            const r = await exec(
                "container",
                `${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 --speculative-algorithm NEXTN --speculative-eagle-topk 1 --disable-radix-cache`,
            );
            assert.equal(r.code, 1);
            assert.match(r.stderr, /\nAssertionError\n$/);
        });

        it("accepts speculation with --disable-radix-cache instead of extra_buffer", async () => {
            const r = await runUntilOutput(
                `${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 ${NEXTN_ONE_STEP} --disable-radix-cache --port 30102 --host ${ct}`,
                "server_args=ServerArgs\\(",
            );
            assert.match(r.stderr, /server_args=ServerArgs\(/);
            assert.doesNotMatch(r.stderr, /Error/);
        });

        it("runs out of memory when the weights do not fit one GPU (--tp 1)", async () => {
            // Killed by a signal: ssh itself would answer 255, so the shell reports the status.
            const r = await exec("container", `${PY} -m sglang.launch_server --model-path ${MODEL} --tp 1 --port 30103 --host ${ct}; echo "exit=$?"`);
            assert.equal(r.stdout, "exit=137\n", "the main process kills its tree (SIGKILL)");
            assert.match(r.stderr, /TP0\] Scheduler hit an exception: Traceback \(most recent call last\):/);
            assert.match(r.stderr, /^torch\.OutOfMemoryError: CUDA out of memory\./m);
            assert.match(r.stderr, /^\[[\d\- :]+\] Received sigquit from a child process\. It usually means the child failed\.$/m);
        });

        it("reports 'Not enough memory' when mem-fraction-static leaves no room for the KV cache", async () => {
            const r = await exec(
                "container",
                `${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 --mem-fraction-static 0.5 --port 30104 --host ${ct}; echo "exit=$?"`,
            );
            assert.equal(r.stdout, "exit=137\n");
            assert.match(r.stderr, /^RuntimeError: Not enough memory\. Please try to increase --mem-fraction-static\.$/m);
        });
    });

    describe("faults", function () {
        this.timeout(2 * LAB_WAIT_MS);
        const simple = (port: number) => unit(`${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 --port ${port} --host ${ct}`);

        async function runWith(name: string, port: number, faults: Faults): Promise<string> {
            setFaults(faults, testLabDir());
            await startUnit(name, simple(port));
            return `http://${ct}:${port}`;
        }

        it("crashAfterSeconds: a RuntimeError in a scheduler and the unit fails", async () => {
            await runWith("sglang-crash", 30110, { crashAfterSeconds: 0.8 });
            await waitFor("sglang-crash to fail", async () => ((await state("sglang-crash")) === "failed" ? true : undefined));
            const log = await journalWithAll("sglang-crash", /^RuntimeError: /m, /Main process exited/);
            assert.match(log, /Scheduler hit an exception: Traceback/);
            assert.match(log, /^RuntimeError: CUDA error: an illegal memory access was encountered$/m);
            assert.match(log, /^sglang-crash\.service: Main process exited, code=killed, status=9\/KILL$/m);
            assert.ok(simulatorEvents(testLabDir()).some((e) => e.event === "crashed" && e.port === 30110));
        });

        it("neverReady: HTTP comes up but /health stays 503", async () => {
            const url = await runWith("sglang-stuck", 30111, { neverReady: true });
            await waitFor("the stuck server's HTTP", async () =>
                simulatorEvents(testLabDir()).some((e) => e.event === "http-up" && e.port === 30111) ? true : undefined,
            );
            assert.equal((await httpRequest(`${url}/health`)).status, 503);
            assert.equal((await httpRequest(`${url}/health_generate`)).status, 503);
            assert.doesNotMatch(await journal("sglang-stuck"), /fired up/);
            await ok("container", "systemctl stop sglang-stuck");
        });

        it("schedulerDeathAfterReadySeconds: /health turns 503 while the process stays up", async () => {
            const url = await runWith("sglang-sched", 30112, { schedulerDeathAfterReadySeconds: 0.3 });
            await waitFor("scheduler death", async () =>
                simulatorEvents(testLabDir()).some((e) => e.event === "scheduler-died" && e.port === 30112) ? true : undefined,
            );
            assert.equal((await httpRequest(`${url}/health`)).status, 503);
            assert.equal(await state("sglang-sched"), "active");
            await journalWithAll("sglang-sched", /Scheduler hit an exception:/);
            await ok("container", "systemctl stop sglang-sched");
        });

        it("degenerateOutput: chat answers with one token repeated", async () => {
            const url = await runWith("sglang-garbage", 30113, { degenerateOutput: true });
            await waitFor("/health 200", () => healthy(url));
            const r = await httpRequest(`${url}/v1/chat/completions`, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ messages: [{ role: "user", content: "What is 2+2?" }] }),
            });
            const content = (JSON.parse(r.body) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
            assert.match(content, /^(the )+the$/);
            await ok("container", "systemctl stop sglang-garbage");
        });

        it("dieAfterReadySeconds: the process is killed after it was ready", async () => {
            await runWith("sglang-die", 30114, { dieAfterReadySeconds: 0.2 });
            await waitFor("sglang-die to fail", async () => ((await state("sglang-die")) === "failed" ? true : undefined));
            assert.equal((await ok("container", "systemctl show -p Result --value sglang-die")).trim(), "signal");
            const events = simulatorEvents(testLabDir())
                .filter((e) => e.port === 30114)
                .map((e) => e.event);
            assert.deepEqual(events.slice(-2), ["ready", "died"]);
        });
    });
});
