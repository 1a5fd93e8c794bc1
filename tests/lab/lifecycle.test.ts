import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { labDown, labExec, labStatus, labUp } from "../../lab/control";
import { mountNs, pidsInNamespace, pinMountNamespaces } from "../../lab/machine-ns";
import { canConnect } from "../../lab/sshd";

// A lab of its own (other addresses, other directory): up, idempotent up, down, nothing left
// (processes, mounts, namespaces, cgroups, LXC's runtime files).
describe("lab lifecycle", function () {
    this.timeout(90_000);
    const host = "127.0.104.5";
    const container = "127.0.103.29";
    let dir: string;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-lab-lifecycle-"));
    });

    after(async () => {
        await labDown(dir).catch(() => undefined);
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("comes up, stays up on a second up, and leaves no process, mount or namespace after down", async () => {
        const info = await labUp({ labDir: dir, hostAddress: host, containerAddress: container, startupSeconds: 1 });
        const up = labStatus(dir);
        assert.equal(up.up, true);
        assert.equal(up.container?.running, true);
        assert.ok(up.processes.length >= 6, `holder, sshd, LXC's monitor, systemd, journald, the container's sshd: ${up.processes.join(",")}`);
        // The lab's mount namespaces, held open by their processes' fds until the end: labs go up and down side by
        // side, and a namespace freed by its last process gives its name to the next one made, another lab's
        // (tests/lab/machine-ns.test.ts). Named unpinned, a booting container's short-lived namespace was once
        // taken by another lab's LXC monitor (lxc.monitor.unshare) before this check, under load.
        // (Short-lived processes of the booting container may be gone by now: their namespaces are not checked.)
        const pinned = pinMountNamespaces(up.processes, null);
        try {
            const namespaces = new Set(pinned.keys());
            assert.ok(!namespaces.has(mountNs(process.pid)!), "nothing runs in the test's own mount namespace");
            const cgroup = info.lxc.cgroupDir;
            assert.ok(fs.existsSync(path.join(cgroup, "lxc", "129")), "the container's cgroup is below the lab's");
            const lockDir = path.join(info.mounts.host["/run"]!, "lxc");
            assert.ok(fs.existsSync(lockDir), "LXC keeps its locks in the host's /run, a lab directory");

            // A running server and an open session inside, to be cleaned up too.
            await labExec("container", `cat > /etc/systemd/system/sglang-life.service`, {
                labDir: dir,
                input: `[Service]\nExecStart=/opt/sglang/venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B --tp 2 --port 30200 --host ${container}\n`,
            });
            assert.equal((await labExec("container", "systemctl daemon-reload && systemctl start sglang-life", { labDir: dir })).code, 0);

            const pidsFile = path.join(dir, "state", "pids.json");
            const before = fs.readFileSync(pidsFile, "utf8");
            const again = await labUp({ labDir: dir, hostAddress: host, containerAddress: container });
            assert.equal(again.host.hostKey, info.host.hostKey);
            assert.equal(fs.readFileSync(pidsFile, "utf8"), before, "the second up started nothing new");
            assert.ok(((JSON.parse(before) as { hostSshd?: number }).hostSshd ?? 0) > 0);

            await labDown(dir);
            const down = labStatus(dir);
            assert.equal(down.up, false);
            assert.deepEqual(down.processes, []);
            assert.deepEqual([...namespaces].flatMap(pidsInNamespace), [], "no process left in the lab's namespaces");
            assert.ok(!fs.readFileSync("/proc/self/mountinfo", "utf8").includes(dir), "no mount of the lab directory in the outer namespace");
            assert.equal(fs.existsSync(cgroup), false, "the lab's cgroup is gone");
            assert.equal(fs.existsSync(lockDir), false, "LXC's runtime files are gone");
            assert.equal(fs.existsSync(`/run/lxc/lock${info.lxc.lxcPath}`), false, "no LXC lock on this machine's /run");
            assert.equal(await canConnect(host, info.host.sshPort), false);
            assert.equal(await canConnect(container, info.container.sshPort), false);
            assert.equal(await canConnect(container, 30200), false);

            await labDown(dir);
            assert.equal(labStatus(dir).up, false, "down again is a no-op");
        } finally {
            for (const fd of pinned.values()) fs.closeSync(fd);
        }
    });
});
