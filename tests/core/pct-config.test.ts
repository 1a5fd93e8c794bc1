import assert from "node:assert/strict";
import fc from "fast-check";
import { ContainerSchema } from "../../core/config";
import {
    gpuPassthroughLines,
    PctConfig,
    PctLine,
    parsePctConfig,
    passthroughDiff,
    passthroughFromConfig,
    pctOption,
    pctSetArgs,
    pctView,
    renderPctConfig,
    withGpuPassthrough,
} from "../../core/pct-config";

/** /etc/pve/lxc/129.conf as Proxmox writes it for the field's container, with a snapshot and a pending change. */
const CT129 = `#llm-two%3A SGLang Qwen3.6-27B
#2x RTX A6000 passed through
arch: amd64
cores: 32
features: nesting=1,keyctl=1
hostname: llm-two
memory: 131072
net0: name=eth0,bridge=vmbr0,firewall=1,gw=10.1.230.1,hwaddr=BC:24:11:5A:3C:7E,ip=10.1.230.172/24,type=veth
onboot: 1
ostype: debian
parent: before-sglang-0511
rootfs: local-lvm:vm-129-disk-0,size=200G
swap: 0
unprivileged: 0
lxc.cgroup2.devices.allow: c 195:* rwm
lxc.cgroup2.devices.allow: c 508:* rwm
lxc.cgroup2.devices.allow: c 226:* rwm
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file
lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file
lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file
lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file
lxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir

[before-sglang-0511]
arch: amd64
cores: 16
hostname: llm-two
memory: 65536
snaptime: 1764460800
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file

[pve:pending]
swap: 8192
`;

const majors = { nvidia: 195, nvidiaUvm: 508 };

function container(extra: Record<string, unknown> = {}) {
    return ContainerSchema.parse({ vmid: 129, hostname: "llm-two", adopt: true, gpus: [0, 1], ...extra });
}

describe("pct config: parse and render", () => {
    it("renders exactly the text it parsed (description, repeated lxc lines, snapshot, pending)", () => {
        assert.equal(renderPctConfig(parsePctConfig(CT129)), CT129);
    });

    it("keeps repeated raw keys in order and sections apart", () => {
        const conf = parsePctConfig(CT129);
        assert.equal(conf.sections.length, 2);
        assert.deepEqual(conf.sections.map((s) => s.name), ["before-sglang-0511", "pve:pending"]);
        assert.equal(pctOption(conf, "cores"), "32"); // not the snapshot's 16
        assert.equal(conf.main.filter((l) => l.kind === "option" && l.key === "lxc.mount.entry").length, 6);
    });

    it("gives a typed view of the managed settings", () => {
        const view = pctView(parsePctConfig(CT129));
        assert.equal(view.cores, 32);
        assert.equal(view.memoryMiB, 131072);
        assert.equal(view.swapMiB, 0);
        assert.equal(view.hostname, "llm-two");
        assert.equal(view.onboot, true);
        assert.deepEqual(view.features, { nesting: "1", keyctl: "1" });
        assert.equal(view.networks.net0.ip, "10.1.230.172/24");
        assert.equal(view.networks.net0.gw, "10.1.230.1");
        assert.equal(view.networks.net0.bridge, "vmbr0");
    });

    it("parse(render(config)) == config for generated configs (property)", () => {
        const text = fc.stringMatching(/^[^\n\r[\s][^\n\r]{0,30}$/).filter((t) => t.trimEnd() === t);
        const option: fc.Arbitrary<PctLine> = fc.record({
            kind: fc.constant("option" as const),
            key: fc.stringMatching(/^[a-z][a-z0-9_.]{0,20}$/),
            value: fc.oneof(fc.constant(""), text),
        }, { noNullPrototype: true });
        const comment: fc.Arbitrary<PctLine> = fc.record({ kind: fc.constant("comment" as const), text: fc.stringMatching(/^[^\n\r]{0,30}$/) }, { noNullPrototype: true });
        const config: fc.Arbitrary<PctConfig> = fc.record({
            main: fc.tuple(fc.array(comment, { maxLength: 2 }), fc.array(option, { minLength: 1, maxLength: 8 })).map(([c, o]) => [...c, ...o]),
            sections: fc.array(
                fc.record({
                    name: fc.stringMatching(/^[a-z][a-z0-9:_-]{0,12}$/),
                    lines: fc.array(option.map((l) => (l.kind === "option" ? `${l.key}: ${l.value}`.trimEnd() : "")), { maxLength: 4 }),
                }, { noNullPrototype: true }),
                { maxLength: 3 },
            ),
        }, { noNullPrototype: true });
        fc.assert(fc.property(config, (conf) => assert.deepEqual(parsePctConfig(renderPctConfig(conf)), conf)));
    });

    it("rejects a line that is not key: value", () => {
        assert.throws(() => parsePctConfig("cores 32\n"), /not "key: value"/);
    });
});

describe("pct config: GPU passthrough", () => {
    it("renders the cgroup allows and bind mounts for each GPU and the control devices", () => {
        const lines = gpuPassthroughLines([1, 0], majors).map((l) => (l.kind === "option" ? `${l.key}: ${l.value}` : ""));
        assert.deepEqual(lines, [
            "lxc.cgroup2.devices.allow: c 195:* rwm",
            "lxc.cgroup2.devices.allow: c 508:* rwm",
            "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
            "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
            "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
            "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
            "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
        ]);
    });

    it("reads the passthrough back from the config", () => {
        assert.deepEqual(passthroughFromConfig(parsePctConfig(CT129)), {
            gpus: [0, 1],
            allowedMajors: [195, 508, 226],
            mountedDevices: ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"],
        });
    });

    it("finds nothing to change when the declared GPUs are passed through", () => {
        assert.deepEqual(passthroughDiff(parsePctConfig(CT129), [0, 1], majors), { missing: [], extra: [] });
    });

    it("finds a missing uvm allow after the uvm major changed", () => {
        const diff = passthroughDiff(parsePctConfig(CT129), [0, 1], { nvidia: 195, nvidiaUvm: 511 });
        assert.deepEqual(diff.missing, [{ kind: "option", key: "lxc.cgroup2.devices.allow", value: "c 511:* rwm" }]);
    });

    it("replaces only the NVIDIA lines, keeping other devices and snapshots", () => {
        const updated = withGpuPassthrough(parsePctConfig(CT129), [0], majors);
        assert.deepEqual(passthroughFromConfig(updated).gpus, [0]);
        const text = renderPctConfig(updated);
        assert.match(text, /lxc\.cgroup2\.devices\.allow: c 226:\* rwm/);
        assert.match(text, /lxc\.mount\.entry: \/dev\/dri dev\/dri/);
        assert.ok(text.endsWith("[before-sglang-0511]\narch: amd64\ncores: 16\nhostname: llm-two\nmemory: 65536\nsnaptime: 1764460800\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n\n[pve:pending]\nswap: 8192\n"));
    });
});

describe("pct config: pct set", () => {
    it("changes nothing when the declared settings match", () => {
        const plan = pctSetArgs(container({ cores: 32, memoryMiB: 131072, swapMiB: 0, onboot: true, features: { nesting: true, keyctl: true } }), parsePctConfig(CT129));
        assert.deepEqual(plan, { argv: undefined, changes: [], needsRestart: false });
    });

    it("leaves undeclared settings alone", () => {
        assert.equal(pctSetArgs(container(), parsePctConfig(CT129)).argv, undefined);
    });

    it("applies memory and cores live, without a restart", () => {
        const plan = pctSetArgs(container({ cores: 24, memoryMiB: 98304 }), parsePctConfig(CT129));
        assert.deepEqual(plan.argv, ["pct", "set", "129", "-cores", "24", "-memory", "98304"]);
        assert.equal(plan.needsRestart, false);
        assert.deepEqual(plan.changes[0], { field: "container.cores", option: "-cores", declared: "24", actual: "32", needsRestart: false });
    });

    it("needs a restart for features and hostname, and keeps undeclared features", () => {
        const conf = parsePctConfig(CT129.replace("features: nesting=1,keyctl=1", "features: nesting=1,keyctl=1,fuse=1"));
        const plan = pctSetArgs(container({ features: { keyctl: false }, hostname: "llm-three" }), conf);
        assert.equal(plan.needsRestart, true);
        assert.deepEqual(plan.argv, ["pct", "set", "129", "-hostname", "llm-three", "-features", "nesting=1,keyctl=0,fuse=1"]);
    });

    it("keeps the MAC address and firewall flag when changing the network", () => {
        const plan = pctSetArgs(
            container({ network: { name: "eth0", bridge: "vmbr1", ip: "10.1.230.172/24", gateway: "10.1.230.1" } }),
            parsePctConfig(CT129),
        );
        assert.deepEqual(plan.argv, [
            "pct",
            "set",
            "129",
            "-net0",
            "name=eth0,bridge=vmbr1,firewall=1,gw=10.1.230.1,hwaddr=BC:24:11:5A:3C:7E,ip=10.1.230.172/24,type=veth",
        ]);
    });

    it("sees an equal network in a different key order as unchanged", () => {
        const plan = pctSetArgs(container({ network: { name: "eth0", bridge: "vmbr0", ip: "10.1.230.172/24", gateway: "10.1.230.1" } }), parsePctConfig(CT129));
        assert.equal(plan.argv, undefined);
    });

    it("sets onboot when the live config does not have it", () => {
        const plan = pctSetArgs(container({ onboot: true }), parsePctConfig(CT129.replace("onboot: 1\n", "")));
        assert.deepEqual(plan.argv, ["pct", "set", "129", "-onboot", "1"]);
    });
});
