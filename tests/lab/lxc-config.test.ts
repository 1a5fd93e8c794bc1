// The LXC config pct start writes from /etc/pve/lxc/<vmid>.conf (pure).
import assert from "node:assert/strict";
import { fieldContainerConf } from "../../lab/pve/field-conf";
import { renderLxcConfig, LxcEnvironment } from "../../lab/pve/lxc-config";
import { nvidiaDevices } from "../../lab/pve/pct-conf";

const env = (over: Partial<LxcEnvironment> = {}): LxcEnvironment => ({
    vmid: 129,
    lxcPath: "/var/lib/lxc/lab-x",
    controllers: [],
    cpus: [0, 1, 2, 3],
    binds: [
        { target: "/etc/sglang", source: "/lab/ct/sglang" },
        { target: "/proc/devices", source: "/lab/proc-devices", file: true, readOnly: true },
    ],
    logFile: "/var/log/lxc/129.log",
    // The host's NVIDIA nodes as the lab makes them for two GPUs (195 and nvidia-uvm's 508).
    deviceNode: (p) => {
        const m = /^\/dev\/nvidia([01]|ctl|-uvm|-uvm-tools)$/.exec(p);
        if (!m) return undefined;
        const minor = m[1] === "ctl" ? 255 : m[1] === "-uvm" ? 0 : m[1] === "-uvm-tools" ? 1 : Number(m[1]);
        return { type: "c", major: m[1]!.startsWith("-uvm") ? 508 : 195, minor };
    },
    ...over,
});

const field = () => fieldContainerConf(129, "llm-two", nvidiaDevices(2, { nvidia: 195, nvidiaUvm: 508 }));
const lines = (text: string) => text.trimEnd().split("\n");

describe("lab LXC config (update_lxc_config)", () => {
    it("writes PVE's cgroup layout, common.conf, ttys, the hostname and the rootfs under lxcpath", () => {
        const l = lines(renderLxcConfig(field(), env()));
        for (const want of [
            "lxc.cgroup.relative = 0",
            "lxc.cgroup.dir.monitor = lxc.monitor/129",
            "lxc.cgroup.dir.container = lxc/129",
            "lxc.cgroup.dir.container.inner = ns",
            "lxc.arch = amd64",
            "lxc.include = /usr/share/lxc/config/common.conf",
            "lxc.monitor.unshare = 1",
            "lxc.tty.max = 2",
            "lxc.environment = TERM=linux",
            "lxc.uts.name = llm-two",
            "lxc.rootfs.path = /var/lib/lxc/lab-x/129/rootfs",
            "lxc.net.0.type = none",
        ]) {
            assert.ok(l.includes(want), `missing ${want}`);
        }
        assert.ok(!l.some((x) => x.startsWith("lxc.console.path")), "a console unless console: 0");
    });

    it("passes the raw lxc.* lines through verbatim, in order, before the lab's mounts", () => {
        const conf = field();
        const l = lines(renderLxcConfig(conf, env()));
        const raw = conf.lxc.map(([k, v]) => `${k} = ${v}`);
        const at = raw.map((r) => l.indexOf(r));
        assert.ok(
            at.every((i) => i >= 0),
            "every raw line is there",
        );
        assert.deepEqual(
            at,
            [...at].sort((a, b) => a - b),
        );
        assert.ok(at[at.length - 1]! < l.indexOf("lxc.mount.entry = /lab/ct/sglang etc/sglang none bind,create=dir 0 0"));
        assert.ok(l.includes("lxc.mount.entry = /lab/proc-devices proc/devices none bind,ro,create=file 0 0"));
    });

    it("records memory, swap and cores without the controllers, and sets them as cgroup limits with them", () => {
        const none = lines(renderLxcConfig(field(), env()));
        assert.ok(none.includes("# memory: 131072 MiB, swap: 0 MiB (not enforced: no memory controller in the host's cgroup2)"));
        assert.ok(none.includes("# cores: 32 (not enforced: no cpuset controller in the host's cgroup2)"));
        assert.ok(!none.some((x) => x.startsWith("lxc.cgroup2.memory") || x.startsWith("lxc.cgroup2.cpuset")));
        const conf = field();
        conf.options.set("cores", "2");
        conf.options.set("memory", "8192");
        const all = lines(renderLxcConfig(conf, env({ controllers: ["cpuset", "cpu", "memory"] })));
        assert.ok(all.includes(`lxc.cgroup2.memory.max = ${8192 * 1024 * 1024}`));
        assert.ok(all.includes(`lxc.cgroup2.memory.high = ${8192 * 1024 * 1016}`), "1016/1024 below 16 GiB");
        assert.ok(all.includes("lxc.cgroup2.memory.swap.max = 0"));
        assert.ok(all.includes("lxc.cgroup2.cpuset.cpus = 0,1"));
    });

    it("disables the console with console: 0 and notes net0 instead of a veth", () => {
        const conf = field();
        conf.options.set("console", "0");
        const l = lines(renderLxcConfig(conf, env()));
        assert.ok(l.includes("lxc.console.path = none"));
        assert.ok(l.includes("lxc.cgroup2.devices.deny = c 5:1 rwm"));
        assert.ok(l.some((x) => x.startsWith("# net0: name=eth0,bridge=vmbr0") && x.includes("not created")));
        assert.ok(!l.some((x) => x.startsWith("lxc.net.0.type = veth")));
    });

    it("allows each devN entry's node by the type, major and minor the host has at this start, and binds it at its path, as pve-container does", () => {
        const conf = fieldContainerConf(129, "llm-two", []);
        conf.options.set("dev0", "/dev/nvidia0");
        conf.options.set("dev1", "path=/dev/nvidia-uvm,mode=0666");
        conf.options.set("dev3", "/dev/nvidia1,deny-write=1");
        const l = lines(renderLxcConfig(conf, env()));
        const allow = l.filter((x) => x.startsWith("lxc.cgroup2.devices."));
        assert.deepEqual(allow, [
            "lxc.cgroup2.devices.allow = c 195:0 rw",
            "lxc.cgroup2.devices.allow = c 508:0 rw",
            "lxc.cgroup2.devices.allow = c 195:1 r",
            "lxc.cgroup2.devices.deny = c 195:1 w",
        ]);
        assert.ok(l.indexOf(allow[0]!) < l.indexOf("lxc.monitor.unshare = 1"), "written where update_lxc_config writes them");
        assert.ok(l.includes("lxc.mount.entry = /dev/nvidia-uvm dev/nvidia-uvm none bind,create=file 0 0"));
        // A driver update that moves nvidia-uvm's major: the next start allows the new one, with no edit of the config.
        const moved = lines(
            renderLxcConfig(conf, env({ deviceNode: (p) => (p === "/dev/nvidia-uvm" ? { type: "c", major: 511, minor: 0 } : env().deviceNode(p)) })),
        );
        assert.ok(moved.includes("lxc.cgroup2.devices.allow = c 511:0 rw"));
        conf.options.set("dev4", "/dev/nvidia7");
        assert.throws(() => renderLxcConfig(conf, env()), /^Error: Device \/dev\/nvidia7 does not exist$/);
    });
});
