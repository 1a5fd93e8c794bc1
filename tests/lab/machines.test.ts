import assert from "node:assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LabInfo, labStatus, sshArgv } from "../../lab/control";
import { under } from "../../lab/layout";
import { exec, labAddresses, lab, ok, testLabDir } from "./lab-fixture";

describe("lab machines", function () {
    let info: LabInfo;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
    });

    it("comes up from nothing with a lab.json describing both machines", () => {
        const status = labStatus(testLabDir());
        assert.equal(status.up, true);
        assert.equal(status.container?.running, true);
        const onDisk = JSON.parse(fs.readFileSync(path.join(testLabDir(), "lab.json"), "utf8")) as LabInfo;
        assert.equal(onDisk.host.address, labAddresses().host);
        assert.equal(onDisk.container.address, labAddresses().container);
        assert.match(onDisk.host.hostKey, /^ssh-ed25519 AAAA[0-9A-Za-z+/=]+$/);
        assert.match(onDisk.container.hostKey, /^ssh-ed25519 AAAA[0-9A-Za-z+/=]+$/);
        assert.notEqual(onDisk.host.hostKey, onDisk.container.hostKey);
        assert.equal(onDisk.vmid, 129);
        assert.equal(onDisk.modelPath, "/models/Qwen3.6-27B");
        assert.deepEqual(onDisk.deviceMajors, { nvidia: 195, nvidiaUvm: 508 });
        assert.ok(fs.existsSync(onDisk.clientKeyPath));
        assert.ok(fs.existsSync(onDisk.knownHostsFile));
    });

    it("reaches the host over ssh with the lab key and the pinned host key", async () => {
        assert.equal((await ok("host", "hostname")).trim(), "kpro5");
    });

    it("reaches container 129 directly over ssh (ct129 topology)", async () => {
        assert.equal((await ok("container", "hostname")).trim(), "llm-two");
    });

    it("refuses a host whose key is not in known_hosts (host keys are checked)", () => {
        const empty = path.join(testLabDir(), "empty_known_hosts");
        fs.writeFileSync(empty, "");
        const argv = sshArgv(info, "host", "true").map((a) => (a === `UserKnownHostsFile=${info.knownHostsFile}` ? `UserKnownHostsFile=${empty}` : a));
        const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 30_000 });
        assert.equal(r.status, 255);
        assert.match(r.stderr, /Host key verification failed/);
    });

    it("puts the stand-ins first on root's PATH in ssh sessions, and the container's own systemctl and journalctl", async () => {
        assert.equal((await ok("host", "command -v pct")).trim(), "/usr/local/sbin/pct");
        assert.equal((await ok("container", "command -v nvidia-smi")).trim(), "/usr/local/sbin/nvidia-smi");
        assert.equal((await ok("container", "command -v systemctl")).trim(), "/usr/bin/systemctl");
        assert.equal((await ok("container", "command -v journalctl")).trim(), "/usr/bin/journalctl");
    });

    it("gives the host the lab's own /root, so no dotfile of this machine runs there, with the stand-ins' node in reach", async function () {
        // The lab keeps this machine's /root only where the lab or the checkout lives in it (lab/control.ts).
        if ([info.labDir, info.repoDir].some((p) => under(p, "/root"))) this.skip();
        const probe = `.lab-home-probe-${process.pid}`;
        await ok("host", `touch /root/${probe}`);
        try {
            assert.ok(fs.existsSync(path.join(info.mounts.host["/root"]!, probe)), "the host's /root is the lab's home directory");
            assert.equal(fs.existsSync(path.join("/root", probe)), false, "this machine's /root is untouched");
        } finally {
            fs.rmSync(path.join(info.mounts.host["/root"]!, probe), { force: true });
        }
        // pct's shim runs the node that runs the lab (scripts/node.sh's pinned one may live in this machine's /root).
        assert.equal((await exec("host", `${info.nodePath} -p process.version`)).stdout.trim(), process.version);
    });

    it("runs container 129 as a real LXC container with systemd 252 as PID 1, journald and Debian's sshd", async () => {
        assert.match(await ok("container", "systemctl --version"), /^systemd 252 /);
        assert.equal(await ok("container", "ps -p 1 -o comm="), "systemd\n");
        assert.equal(await ok("container", "cat /proc/1/environ | tr '\\0' '\\n' | grep ^container="), "container=lxc\n");
        assert.equal(await ok("container", "systemctl is-active systemd-journald ssh"), "active\nactive\n");
        assert.match(
            await ok("host", "pct exec 129 -- journalctl -u ssh -n 20 --no-pager"),
            /systemd\[1\]: Started ssh\.service - OpenBSD Secure Shell server\./,
        );
        assert.match(await ok("host", "lxc-info -n 129"), /^State:\s+RUNNING$/m);
    });

    it("keeps the container off this machine's /tmp, /run and /etc", async () => {
        const marker = path.join("/tmp", `sglang-lab-probe-${process.pid}`);
        fs.writeFileSync(marker, "");
        try {
            assert.equal((await exec("container", `test -e ${marker}`)).code, 1, "the container has its own /tmp");
            assert.equal((await exec("container", `test -e ${testLabDir()}`)).code, 1, "the lab directory is not visible inside");
            await ok("container", "touch /tmp/from-the-container /run/from-the-container /etc/from-the-container");
            for (const f of ["/tmp/from-the-container", "/run/from-the-container", "/etc/from-the-container"]) assert.equal(fs.existsSync(f), false, f);
            assert.ok(fs.existsSync(marker), "systemd-tmpfiles in the container left this machine's /tmp alone");
        } finally {
            fs.rmSync(marker, { force: true });
        }
    });

    it("bind-mounts the real paths from the lab directory, leaving the machine itself untouched", async () => {
        await ok("container", "echo from-the-stack > /etc/sglang/lab-probe.env");
        assert.equal(fs.readFileSync(path.join(info.mounts.container["/etc/sglang"]!, "lab-probe.env"), "utf8"), "from-the-stack\n");
        assert.equal(fs.existsSync("/etc/sglang/lab-probe.env"), false);
        assert.equal(fs.existsSync("/models"), false, "the real machine has no /models");
        assert.match(await ok("container", "cat /models/Qwen3.6-27B/config.json"), /Qwen3_5ForConditionalGeneration/);
        assert.match(await ok("host", "ls /etc/pve/lxc"), /^129\.conf$/m);
        assert.equal((await exec("container", "test -e /etc/pve/lxc/129.conf")).code, 1, "the container does not see the host's /etc/pve");
        assert.equal(fs.existsSync("/etc/pve"), false, "nor does this machine have one");
    });

    it("shows the NVIDIA device majors in /proc/devices and /dev on the host", async () => {
        const devices = await ok("host", "cat /proc/devices");
        assert.match(devices, /^195 nvidia$/m);
        assert.match(devices, /^508 nvidia-uvm$/m);
        const nodes = await ok("host", "stat -c '%t %T %n' /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools");
        assert.equal(nodes, "c3 0 /dev/nvidia0\nc3 1 /dev/nvidia1\nc3 ff /dev/nvidiactl\n1fc 0 /dev/nvidia-uvm\n1fc 1 /dev/nvidia-uvm-tools\n");
    });

    it("answers pveversion on the host only", async () => {
        assert.match(await ok("host", "pveversion"), /^pve-manager\/8\.\d+\.\d+\/[0-9a-f]+ \(running kernel: /);
        assert.equal((await exec("container", "pveversion")).code, 127);
    });
});
