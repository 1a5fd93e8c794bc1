// The stack's readiness wait (remote/readiness-wait.ts) against the real
// systemd 252 and journald of container 129, through the lab's Proxmox host
// (pct exec): what the stack reads from a real box, poll by poll.
import assert from "node:assert/strict";
import { journalPosition, waitUntilReady } from "../../remote/readiness-wait";
import { RemoteHost } from "../../remote/remote-host";
import { SshPool } from "../../remote/ssh-pool";
import { LabInfo, setFaults, clearFaults } from "../../lab/control";
import { installUnit, LAB_WAIT_MS, lab, labContainerRemote, ok, testLabDir } from "./lab-fixture";

const PY = "/opt/sglang/venv/bin/python3";
const MODEL = "/models/Qwen3.6-27B";

describe("the readiness wait against the container's real systemd and journald", function () {
    this.timeout(2 * LAB_WAIT_MS);
    let info: LabInfo;
    let pool: SshPool;
    let remote: RemoteHost;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
        pool = new SshPool({ log: () => undefined });
        remote = labContainerRemote(info, pool);
    });
    after(async () => {
        clearFaults(testLabDir());
        await pool?.closeAll();
    });

    async function startAndWait(name: string, port: number, opts: { sinceAhead?: number } = {}): Promise<{ ok: boolean; progress: string[]; cause?: string }> {
        const unit = `sglang-${name}.service`;
        await installUnit(
            unit,
            `[Service]\nExecStart=${PY} -m sglang.launch_server --model-path ${MODEL} --tp 2 --port ${port} --host ${info.container.address}\nRestart=on-failure\nRestartSec=1\n`,
        );
        await ok("container", "systemctl daemon-reload");
        // As the rollout does: the position first (no entries yet for a new unit: the remote clock), then the start.
        let since = await journalPosition(remote, unit);
        if (opts.sinceAhead && "time" in since) since = { time: `@${Number(since.time.slice(1)) + opts.sinceAhead}` };
        await ok("container", `systemctl start ${unit}`);
        const progress: string[] = [];
        const r = await waitUntilReady({
            remote,
            unit,
            endpoint: `http://${info.container.address}:${port}`,
            startupTimeoutMs: LAB_WAIT_MS,
            pollIntervalMs: 250,
            probeTimeoutMs: 25_000,
            since,
            onProgress: (m) => progress.push(m),
            chatCheck: true,
            servedModelName: MODEL,
        });
        await ok("container", `systemctl stop ${unit}`);
        return { ok: r.ok, progress, ...(r.ok ? {} : { cause: r.message }) };
    }

    it("brings a server to ready reading the real journal", async () => {
        const r = await startAndWait("wait-ok", 30140);
        assert.equal(r.ok, true, r.progress.join("\n"));
        assert.deepEqual(
            r.progress.filter((m) => /cannot read the journal/.test(m)),
            [],
        );
    });

    it("takes polls that find no journal entries yet for no entries (journalctl exits 1 without a word), not for an unreadable journal", async () => {
        // The journal position a second ahead: the first polls find nothing after it, as a poll that comes
        // before journald has written the new process's first lines does.
        const r = await startAndWait("wait-empty", 30142, { sinceAhead: 1 });
        assert.equal(r.ok, true, r.progress.join("\n"));
        assert.deepEqual(
            r.progress.filter((m) => /cannot read the journal/.test(m)),
            [],
        );
        assert.ok(
            r.progress.some((m) => /ready/i.test(m)),
            r.progress.join("\n"),
        );
    });

    it("fails on the poll that shows a crash in the real journal", async () => {
        setFaults({ crashAfterSeconds: 0.5 }, testLabDir());
        try {
            const r = await startAndWait("wait-crash", 30141);
            assert.equal(r.ok, false);
            assert.match(r.cause ?? "", /RuntimeError|Scheduler hit an exception|restart|stopped/);
            assert.deepEqual(
                r.progress.filter((m) => /cannot read the journal/.test(m)),
                [],
            );
        } finally {
            clearFaults(testLabDir());
        }
    });
});
