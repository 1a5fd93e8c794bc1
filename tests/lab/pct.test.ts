import assert from "node:assert/strict";
import { gpuPassthroughLines } from "../../core/box/pct-config";
import { exec, lab, ok } from "./lab-fixture";

describe("lab pct", function () {
    let original: string;

    before(async function () {
        this.timeout(120_000);
        await lab();
        original = await ok("host", "cat /etc/pve/lxc/129.conf");
    });

    after(async function () {
        this.timeout(30_000);
        await ok("host", "cat > /etc/pve/lxc/129.conf", original);
        if ((await ok("host", "pct status 129")).trim() !== "status: running") await ok("host", "pct start 129");
    });

    it("lists the container and its status", async () => {
        assert.match(await ok("host", "pct list"), /^VMID\s+Status\s+Lock\s+Name\s*\n129\s+running\s+llm-two\s*$/m);
        assert.equal(await ok("host", "pct status 129"), "status: running\n");
    });

    it("starts with GPU passthrough lines for both GPUs in Proxmox's format", () => {
        assert.match(original, /^lxc\.cgroup2\.devices\.allow: c 195:\* rwm$/m);
        assert.match(original, /^lxc\.cgroup2\.devices\.allow: c 508:\* rwm$/m);
        for (const d of ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]) {
            assert.match(original, new RegExp(`^lxc\\.mount\\.entry: /dev/${d} dev/${d} none bind,optional,create=file$`, "m"));
        }
    });

    it("edits the config file like Proxmox on pct set (sorted keys, lxc lines kept last)", async () => {
        await ok("host", "pct set 129 -cores 16 -memory 65536 --swap 512");
        const conf = await ok("host", "cat /etc/pve/lxc/129.conf");
        assert.match(conf, /^cores: 16$/m);
        assert.match(conf, /^memory: 65536$/m);
        assert.match(conf, /^swap: 512$/m);
        const keys = conf
            .split("\n")
            .filter((l) => /^[a-z0-9]+: /.test(l))
            .map((l) => l.split(":")[0]!);
        assert.deepEqual(keys, [...keys].sort());
        const lines = conf.trimEnd().split("\n");
        assert.ok(
            lines.slice(-7).every((l) => l.startsWith("lxc.")),
            "the raw lxc.* entries stay at the end",
        );
        assert.match(await ok("host", "pct config 129"), /^cores: 16$/m);
    });

    it("rejects an unknown option with PVE's error and exit 255", async () => {
        const r = await exec("host", "pct set 129 -foo 1");
        assert.equal(r.code, 255);
        assert.equal(r.stderr, "Unknown option: foo\n400 unable to parse option\npct set <vmid> [OPTIONS]\n");
    });

    it("rejects an invalid value with PVE's parameter verification error", async () => {
        const r = await exec("host", "pct set 129 -memory lots");
        assert.equal(r.code, 255);
        assert.equal(r.stderr, "400 Parameter verification failed.\nmemory: type check ('integer') failed - got 'lots'\npct set <vmid> [OPTIONS]\n");
    });

    it("keeps non-hotpluggable changes of a running container pending until it restarts", async () => {
        await ok("host", "pct set 129 -features nesting=1,keyctl=1");
        assert.match(await ok("host", "pct config 129 --current"), /^features: nesting=1$/m);
        assert.match(await ok("host", "pct config 129"), /^features: nesting=1,keyctl=1$/m);
        assert.match(await ok("host", "cat /etc/pve/lxc/129.conf"), /\[pve:pending\]\nfeatures: nesting=1,keyctl=1/);
        await ok("host", "pct reboot 129");
        const conf = await ok("host", "cat /etc/pve/lxc/129.conf");
        assert.match(conf, /^features: nesting=1,keyctl=1$/m);
        assert.doesNotMatch(conf, /pve:pending/);
    });

    it("runs commands in the container with pct exec, passing stdin, stdout, stderr and the exit code", async () => {
        const r = await exec("host", "pct exec 129 -- sh -c 'cat; echo to-err >&2; hostname; exit 7'", "from-stdin\n");
        assert.equal(r.code, 7);
        assert.equal(r.stdout, "from-stdin\nllm-two\n");
        assert.equal(r.stderr, "to-err\n");
    });

    it("passes the caller's environment into the container (--keep-env), without the lab's own variables", async () => {
        const r = await ok("host", "FROM_CALLER=kept pct exec 129 -- sh -c 'echo \"$FROM_CALLER ${SGLANG_LAB_DIR-none} ${SGLANG_LAB_ARGV0-none}\"'");
        assert.equal(r, "kept none none\n");
        const plain = await ok("host", "FROM_CALLER=kept pct exec 129 --keep-env 1 -- sh -c 'echo \"$FROM_CALLER ${SGLANG_LAB_DIR-none}\"'");
        assert.equal(plain, "kept none\n", "the same through pct.js (an option given)");
    });

    it("answers a missing container like Proxmox", async () => {
        const r = await exec("host", "pct exec 130 -- true");
        assert.equal(r.code, 255);
        assert.equal(r.stderr, "Configuration file 'nodes/kpro5/lxc/130.conf' does not exist\n");
    });

    it("refuses pct exec on a stopped container, and starts it again", async function () {
        this.timeout(30_000);
        await ok("host", "pct stop 129");
        assert.equal(await ok("host", "pct status 129"), "status: stopped\n");
        const r = await exec("host", "pct exec 129 -- true");
        assert.equal(r.code, 255);
        assert.equal(r.stderr, "container '129' not running!\n");
        // Below pct, LXC itself: lxc-attach on a stopped container.
        const attach = await exec("host", "lxc-attach -n 129 -- true");
        assert.equal(attach.code, 1);
        assert.match(attach.stderr, /Failed to get init pid/);
        assert.equal((await exec("host", "pct stop 129")).code, 255);
        await ok("host", "pct start 129");
        assert.equal(await ok("host", "pct status 129"), "status: running\n");
        assert.equal(await ok("host", "pct exec 129 -- hostname"), "llm-two\n");
    });

    it("gives the container only the GPUs its passthrough lines bind in, from its next start", async function () {
        this.timeout(60_000);
        const conf = await ok("host", "cat /etc/pve/lxc/129.conf");
        const oneGpu = conf
            .split("\n")
            .filter((l) => !l.includes("/dev/nvidia1 "))
            .join("\n");
        await ok("host", "cat > /etc/pve/lxc/129.conf", oneGpu);
        assert.equal((await ok("host", "pct exec 129 -- nvidia-smi -L")).trim().split("\n").length, 2, "unchanged until restart");
        await ok("host", "pct reboot 129");
        assert.equal(await ok("host", "pct exec 129 -- nvidia-smi -L"), "GPU 0: NVIDIA RTX A6000 (UUID: GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000000)\n");
        const noCtl = oneGpu
            .split("\n")
            .filter((l) => !l.includes("/dev/nvidiactl "))
            .join("\n");
        await ok("host", "cat > /etc/pve/lxc/129.conf", noCtl);
        await ok("host", "pct reboot 129");
        const r = await exec("host", "pct exec 129 -- nvidia-smi");
        assert.equal(r.code, 9);
        assert.match(r.stdout, /^NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\./);
        await ok("host", "cat > /etc/pve/lxc/129.conf", conf);
        await ok("host", "pct reboot 129");
        assert.equal((await ok("host", "pct exec 129 -- nvidia-smi -L")).trim().split("\n").length, 2);
    });

    it("denies the NVIDIA devices in the kernel without the cgroup allow line, and the stack's passthrough lines allow them again", async function () {
        this.timeout(60_000);
        const conf = await ok("host", "cat /etc/pve/lxc/129.conf");
        const noAllow = conf
            .split("\n")
            .filter((l) => !l.startsWith("lxc.cgroup2.devices.allow: c 195:"))
            .join("\n");
        await ok("host", "cat > /etc/pve/lxc/129.conf", noAllow);
        await ok("host", "pct reboot 129");
        // The nodes are bound in, but the container's device cgroup (LXC's BPF program) refuses to open them:
        // EPERM from the kernel. An allowed node without a driver opens with ENXIO.
        assert.equal(await ok("host", "pct exec 129 -- sh -c 'test -c /dev/nvidia0 && test -c /dev/nvidiactl && echo present'"), "present\n");
        const denied = await exec("host", "pct exec 129 -- sh -c 'exec 3<>/dev/nvidia0'");
        assert.notEqual(denied.code, 0);
        assert.match(denied.stderr, /Operation not permitted/);
        const uvm = await exec("host", "pct exec 129 -- sh -c 'exec 3<>/dev/nvidia-uvm'");
        assert.match(uvm.stderr, /No such device or address/, "508:* is still allowed");
        const smi = await exec("host", "pct exec 129 -- nvidia-smi");
        assert.deepEqual([smi.code, smi.stdout], [255, "Failed to initialize NVML: Unknown Error\n"]);

        // The stack's own passthrough lines (core/box/pct-config.ts), as LxcContainer writes them.
        const stackLines = gpuPassthroughLines([0, 1], { nvidia: 195, nvidiaUvm: 508 }).map((l) =>
            l.kind === "option" ? `${l.key}: ${l.value}` : `#${l.text}`,
        );
        const restored =
            [
                ...noAllow
                    .trimEnd()
                    .split("\n")
                    .filter((l) => !l.startsWith("lxc.")),
                ...stackLines,
            ].join("\n") + "\n";
        await ok("host", "cat > /etc/pve/lxc/129.conf", restored);
        await ok("host", "pct reboot 129");
        const allowed = await exec("host", "pct exec 129 -- sh -c 'exec 3<>/dev/nvidia0'");
        assert.match(allowed.stderr, /No such device or address/);
        assert.equal((await ok("host", "pct exec 129 -- nvidia-smi -L")).trim().split("\n").length, 2);
        await ok("host", "cat > /etc/pve/lxc/129.conf", conf);
    });

    it("passes the GPUs by pve-container's devN entries alone: each host node stat'd and allowed by its own major and minor at start", async function () {
        this.timeout(60_000);
        const conf = await ok("host", "cat /etc/pve/lxc/129.conf");
        assert.ok(!conf.includes("\n["), "no snapshot sections in the lab's config");
        const entries = ["dev0: /dev/nvidia0", "dev1: /dev/nvidia1", "dev2: /dev/nvidiactl", "dev3: /dev/nvidia-uvm", "dev4: /dev/nvidia-uvm-tools"];
        const devN =
            [
                ...conf
                    .trimEnd()
                    .split("\n")
                    .filter((l) => !/^lxc\.(cgroup2\.devices\.allow: c (195|508):|mount\.entry: \/dev\/nvidia)/.test(l)),
                ...entries,
            ].join("\n") + "\n";
        await ok("host", "cat > /etc/pve/lxc/129.conf", devN);
        try {
            await ok("host", "pct reboot 129");
            const lxc = await ok("host", "cat $(sed -n 's/^lxc.lxcpath = //p' /etc/lxc/lxc.conf)/129/config");
            for (const allow of ["c 195:0 rw", "c 195:1 rw", "c 195:255 rw", "c 508:0 rw", "c 508:1 rw"])
                assert.match(lxc, new RegExp(`^lxc\\.cgroup2\\.devices\\.allow = ${allow}$`, "m"));
            assert.doesNotMatch(lxc, /c 195:\* rwm/);
            assert.equal((await ok("host", "pct exec 129 -- nvidia-smi -L")).trim().split("\n").length, 2);
            // Allowed by the cgroup: the node opens as far as the (absent) driver (ENXIO), not EPERM.
            assert.match((await exec("host", "pct exec 129 -- sh -c 'exec 3<>/dev/nvidia-uvm'")).stderr, /No such device or address/);
        } finally {
            await ok("host", "cat > /etc/pve/lxc/129.conf", conf);
            await ok("host", "pct reboot 129");
        }
    });

    it("writes LXC's config from the PVE config at start, the passthrough lines verbatim", async () => {
        const lxc = await ok("host", "cat $(sed -n 's/^lxc.lxcpath = //p' /etc/lxc/lxc.conf)/129/config");
        assert.match(lxc, /^lxc\.uts\.name = llm-two$/m);
        assert.match(lxc, /^lxc\.cgroup\.dir\.container = lxc\/129$/m);
        assert.match(lxc, /^lxc\.cgroup2\.devices\.allow = c 195:\* rwm$/m);
        assert.match(lxc, /^lxc\.mount\.entry = \/dev\/nvidia0 dev\/nvidia0 none bind,optional,create=file$/m);
        assert.match(lxc, /^lxc\.net\.0\.type = none$/m);
        assert.match(await ok("host", "lxc-info -n 129 -s"), /^State:\s+RUNNING$/m);
        assert.match(await ok("host", "cat /proc/self/cgroup; ls /sys/fs/cgroup/lxc"), /^0::\/init\.scope\n129$/m);
    });
});
