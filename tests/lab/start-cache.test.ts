import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { LabInfo, simulatorEvents } from "../../lab/control";
import type { SimulatorEvent } from "../../lab/sglang/events";
import { startCacheDir } from "../../lab/sglang/venvs";
import { renderServerConfigFile } from "../../core/unit/systemd-unit";
import { releaseCacheRoot } from "../../sglang-release/oracle";
import { exec, httpRequest, installUnit, LAB_WAIT_MS, lab, ok, runUntilOutput, testLabDir, waitFor } from "./lab-fixture";

// The lab's start cache (lab/sglang/sglang_lab_start_cache.py): a start whose
// key was recorded replays what the release's config layer handed the
// simulator; any change of the key or of what the release read runs the
// release again. Each test names its servers with a nonce of its own, so no
// other test file's records (the cache is shared) decide what these see.

const PY = "/opt/sglang/venv/bin/python3";
const MODEL = "/models/Qwen3.6-27B";
const KEY = "start-cache-test-key-0123456789abcdef";

const nonce = () => randomBytes(6).toString("hex");

/** The launched event of the start after `before` events (the lab's servers start one at a time here). */
function launchedSince(before: number): SimulatorEvent {
    const events = simulatorEvents(testLabDir())
        .slice(before)
        .filter((e) => e.event === "launched");
    assert.equal(events.length, 1, JSON.stringify(events));
    return events[0]!;
}

const eventCount = () => simulatorEvents(testLabDir()).length;

/** What the release printed of a start (up to the simulator's first line), log timestamps blanked. */
function releaseLines(log: string): string[] {
    const lines = log.split("\n");
    const end = lines.findIndex((l) => l.includes("Init torch distributed begin."));
    return lines.slice(0, end < 0 ? lines.length : end).map((l) => l.replace(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]/, "[T]"));
}

/** Runs `command` in the container until the simulator's first line (past the hand-off) or its exit, then Ctrl-C; its launched event and output. */
async function runStart(command: string): Promise<{ launched: SimulatorEvent; output: string; code: number }> {
    const before = eventCount();
    const r = await runUntilOutput(command, "Init torch distributed begin");
    return { launched: launchedSince(before), output: `${r.stdout}${r.stderr}`, code: r.code };
}

describe("the lab's start cache (the release's config layer once per start key)", function () {
    this.timeout(4 * LAB_WAIT_MS);
    let info: LabInfo;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
    });

    it("replays a recorded start as it ran: the same /server_info, the release's own log lines, the simulator as the unit's main process", async () => {
        const name = "sglang-cached";
        const served = `cache-test-${nonce()}`;
        const port = 30301;
        await ok("container", `mkdir -p /etc/sglang && (umask 077 && cat > /etc/sglang/${name}.yaml)`, renderServerConfigFile(KEY));
        const execStart = `${PY} -m sglang.launch_server --config /etc/sglang/${name}.yaml --model-path ${MODEL} --served-model-name ${served} --tp 2 --host ${info.container.address} --port ${port}`;
        await installUnit(`${name}.service`, `[Unit]\nDescription=start cache test\n\n[Service]\nExecStart=${execStart}\n`);
        const url = `http://${info.container.address}:${port}`;

        const startOnce = async () => {
            const before = eventCount();
            await ok("container", `systemctl daemon-reload && systemctl start ${name}`);
            await waitFor(`/health 200 at ${url}`, async () => ((await httpRequest(`${url}/health`).catch(() => null))?.status === 200 ? true : undefined));
            const r = await httpRequest(`${url}/server_info`, { headers: { authorization: `Bearer ${KEY}` } });
            assert.equal(r.status, 200, r.body);
            const invocation = (await ok("container", `systemctl show -p InvocationID --value ${name}`)).trim();
            const mainPid = Number((await ok("container", `systemctl show -p MainPID --value ${name}`)).trim());
            const log = await ok("container", `journalctl _SYSTEMD_INVOCATION_ID=${invocation} -o cat --no-pager`);
            const launched = launchedSince(before);
            assert.equal(launched.invocationId, invocation);
            assert.equal(launched.pid, mainPid, "the simulator runs in the process systemd started");
            assert.equal((await exec("container", `systemctl is-active ${name}`)).stdout.trim(), "active");
            await ok("container", `systemctl stop ${name}`);
            return { launched, info: JSON.parse(r.body) as Record<string, unknown>, lines: releaseLines(log) };
        };

        const ran = await startOnce();
        const replayed = await startOnce();
        assert.equal(ran.launched.configLayer, "ran");
        assert.equal(replayed.launched.configLayer, "replayed");
        assert.equal(ran.info.served_model_name, served);
        assert.deepEqual(replayed.info, ran.info);
        assert.ok(
            ran.lines.some((l) => l.startsWith(`[T] server_args=ServerArgs(model_path='${MODEL}'`)),
            ran.lines.join("\n"),
        );
        assert.deepEqual(replayed.lines, ran.lines);

        // The record holds where the API key is (the --config file), never the key itself.
        const dir = startCacheDir(releaseCacheRoot());
        const records = fs
            .readdirSync(dir)
            .filter((f) => f.endsWith(".json"))
            .map((f) => fs.readFileSync(path.join(dir, f), "utf8"))
            .filter((t) => t.includes(served));
        assert.equal(records.length, 1);
        assert.ok(!records[0]!.includes(KEY), "the API key is not in the record");
    });

    it("runs the release again when any part of the key changes: a flag, a variable, the GPUs it may open, a byte of config.json", async () => {
        const folder = `/models/cache-test-${nonce()}`;
        await ok("container", `cp -r ${MODEL} ${folder}`);
        const base = `${PY} -m sglang.launch_server --model-path ${folder} --tp 2 --host ${info.container.address} --port 30302`;
        assert.equal((await runStart(base)).launched.configLayer, "ran");
        assert.equal((await runStart(base)).launched.configLayer, "replayed");

        const flag = await runStart(`${base} --max-running-requests 40`);
        assert.equal(flag.launched.configLayer, "ran");
        assert.match(flag.output, /max_running_requests=40/);

        assert.equal((await runStart(`env HF_HUB_DISABLE_TELEMETRY=1 ${base}`)).launched.configLayer, "ran");

        // A /dev of its own (its own mount namespace) with /dev/nvidia0 and no /dev/nvidia1: one GPU it may open instead of two.
        const dev = [
            "mount -t tmpfs -o mode=755 none /dev",
            "mknod -m 666 /dev/null c 1 3",
            "mknod -m 666 /dev/nvidiactl c 195 255",
            "mknod -m 666 /dev/nvidia0 c 195 0",
        ];
        const oneGpu = await runStart(`unshare --mount --propagation private sh -c '${dev.join(" && ")} && exec ${base}'`);
        assert.equal(oneGpu.launched.configLayer, "ran", oneGpu.output);

        await ok("container", `printf ' ' >> ${folder}/config.json`);
        assert.equal((await runStart(base)).launched.configLayer, "ran");
        assert.equal((await runStart(base)).launched.configLayer, "replayed");

        // What the release reads gone: its own refusal, from its own run.
        await ok("container", `mv ${folder}/config.json ${folder}/config.json.away`);
        const refused = await runStart(base);
        assert.equal(refused.launched.configLayer, "ran");
        assert.notEqual(refused.code, 0);
        assert.doesNotMatch(refused.output, /server_args=ServerArgs/);
        assert.match(refused.output, /Traceback \(most recent call last\):/);
    });

    it("leaves every refusal to the release: a refused command line runs the release's code at each start", async () => {
        const refusing = `${PY} -m sglang.launch_server --model-path ${MODEL} --served-model-name cache-test-${nonce()} --tp 2 --speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2 --port 30303`;
        for (let i = 0; i < 2; i++) {
            const r = await runStart(refusing);
            assert.equal(r.launched.configLayer, "ran");
            assert.equal(r.code, 1);
            assert.match(r.output, /^ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache/m);
            assert.match(r.output, /File "\/usr\/local\/lib\/sglang-lab\/releases\/0\.5\.11\/site\/sglang\/srt\/server_args\.py", line \d+/);
        }
    });

    it("runs the release and records nothing where a start's environment says SGLANG_LAB_START_CACHE=off", async () => {
        const off = `env SGLANG_LAB_START_CACHE=off ${PY} -m sglang.launch_server --model-path ${MODEL} --served-model-name cache-test-${nonce()} --tp 2 --port 30304`;
        for (let i = 0; i < 2; i++) assert.equal((await runStart(off)).launched.configLayer, "ran");
    });
});
