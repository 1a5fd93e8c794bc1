import assert from "node:assert/strict";
import fc from "fast-check";
import { ContainerSchema } from "../../core/config/schema";
import {
    editPassthroughInPlace,
    gpuPassthroughLines,
    PctConfig,
    PctLine,
    parsePctConfig,
    passthroughDiff,
    passthroughForm,
    passthroughFromConfig,
    passthroughMatches,
    passthroughNeedsEdit,
    pctConfigLock,
    PctLockedError,
    pctOption,
    pctSetArgs,
    pctView,
    renderPctConfig,
    splitPctConfigText,
    withGpuPassthrough,
} from "../../core/box/pct-config";

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
        assert.deepEqual(
            conf.sections.map((s) => s.name),
            ["before-sglang-0511", "pve:pending"],
        );
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
        const option: fc.Arbitrary<PctLine> = fc.record(
            {
                kind: fc.constant("option" as const),
                key: fc.stringMatching(/^[a-z][a-z0-9_.]{0,20}$/),
                value: fc.oneof(fc.constant(""), text),
            },
            { noNullPrototype: true },
        );
        const comment: fc.Arbitrary<PctLine> = fc.record(
            { kind: fc.constant("comment" as const), text: fc.stringMatching(/^[^\n\r]{0,30}$/) },
            { noNullPrototype: true },
        );
        const config: fc.Arbitrary<PctConfig> = fc.record(
            {
                main: fc.tuple(fc.array(comment, { maxLength: 2 }), fc.array(option, { minLength: 1, maxLength: 8 })).map(([c, o]) => [...c, ...o]),
                sections: fc.array(
                    fc.record(
                        {
                            name: fc.stringMatching(/^[a-z][a-z0-9:_-]{0,12}$/),
                            lines: fc.array(
                                option.map((l) => (l.kind === "option" ? `${l.key}: ${l.value}`.trimEnd() : "")),
                                { maxLength: 4 },
                            ),
                        },
                        { noNullPrototype: true },
                    ),
                    { maxLength: 3 },
                ),
            },
            { noNullPrototype: true },
        );
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
            devEntries: [],
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
        assert.ok(
            text.endsWith(
                "[before-sglang-0511]\narch: amd64\ncores: 16\nhostname: llm-two\nmemory: 65536\nsnaptime: 1764460800\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n\n[pve:pending]\nswap: 8192\n",
            ),
        );
    });
});

describe("pct config: pct set", () => {
    it("changes nothing when the declared settings match", () => {
        const plan = pctSetArgs(
            container({ cores: 32, memoryMiB: 131072, swapMiB: 0, onboot: true, features: { nesting: true, keyctl: true } }),
            parsePctConfig(CT129),
        );
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
        const plan = pctSetArgs(container({ network: { name: "eth0", bridge: "vmbr1", ip: "10.1.230.172/24", gateway: "10.1.230.1" } }), parsePctConfig(CT129));
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

describe("pct config: is the passthrough on the box the declared one", () => {
    it("matches the field config for GPUs 0 and 1", () => {
        assert.equal(passthroughMatches(passthroughFromConfig(parsePctConfig(CT129)), [1, 0], majors), true);
    });

    it("does not match when a control device's bind mount is missing (not only a GPU's)", () => {
        const conf = parsePctConfig(CT129.replace("lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file\n", ""));
        assert.deepEqual(passthroughFromConfig(conf).gpus, [0, 1]);
        assert.equal(passthroughMatches(passthroughFromConfig(conf), [0, 1], majors), false);
    });

    it("does not match without the uvm major's allow, or with another GPU's mount", () => {
        const conf = passthroughFromConfig(parsePctConfig(CT129));
        assert.equal(passthroughMatches(conf, [0, 1], { nvidia: 195, nvidiaUvm: 511 }), false);
        assert.equal(passthroughMatches(conf, [0], majors), false);
    });
});

describe("pct config: passthrough lines edited in place", () => {
    const SNAPSHOT_AND_PENDING = CT129.slice(CT129.indexOf("\n[before-sglang-0511]"));

    it("changes nothing when the passthrough lines are already there", () => {
        const edit = editPassthroughInPlace(CT129, 129, [0, 1], majors);
        assert.equal(edit.text, CT129);
        assert.deepEqual(edit.added, []);
        assert.deepEqual(edit.removed, []);
    });

    it("keeps the [snapshot] and [pve:pending] sections byte-identical through a passthrough change", () => {
        const withoutUvmTools = CT129.replace("lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file\n", "");
        const edit = editPassthroughInPlace(withoutUvmTools, 129, [0, 1], majors);
        assert.deepEqual(edit.added, ["lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file"]);
        assert.ok(edit.text.endsWith(SNAPSHOT_AND_PENDING));
        assert.equal(splitPctConfigText(edit.text).rest, splitPctConfigText(CT129).rest);
        // The snapshot's own passthrough line is the snapshot's: untouched.
        assert.match(splitPctConfigText(edit.text).rest, /^lxc\.mount\.entry: \/dev\/nvidia0 /m);
    });

    it("adds missing lines after the main section's last line, before the blank line that ends it", () => {
        const withoutUvmTools = CT129.replace("lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file\n", "");
        const { text } = editPassthroughInPlace(withoutUvmTools, 129, [0, 1], majors);
        assert.match(
            text,
            /create=dir\nlxc\.mount\.entry: \/dev\/nvidia-uvm-tools dev\/nvidia-uvm-tools none bind,optional,create=file\n\n\[before-sglang-0511\]\n/,
        );
    });

    it("takes out the lines of a GPU no longer passed through and leaves every other line where it was", () => {
        const edit = editPassthroughInPlace(CT129, 129, [0], majors);
        assert.deepEqual(edit.removed, ["lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file"]);
        assert.equal(edit.text, CT129.replace("lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file\n", ""));
    });

    it("replaces the allow of an old uvm major in place of nothing else", () => {
        const edit = editPassthroughInPlace(CT129, 129, [0, 1], { nvidia: 195, nvidiaUvm: 511 });
        assert.deepEqual(edit.removed, []);
        assert.deepEqual(edit.added, ["lxc.cgroup2.devices.allow: c 511:* rwm"]);
        const old = editPassthroughInPlace(CT129.replace("c 508:* rwm", "c 511:* rwm"), 129, [0, 1], majors);
        assert.deepEqual(old.added, ["lxc.cgroup2.devices.allow: c 508:* rwm"]);
    });

    it("keeps a passthrough line written as lxc.key = value", () => {
        const text = CT129.replace("lxc.mount.entry: /dev/nvidiactl", "lxc.mount.entry = /dev/nvidiactl");
        assert.equal(editPassthroughInPlace(text, 129, [0, 1], majors).text, text);
    });

    it("adds the lines to a config that has no section and no final newline", () => {
        const text = "arch: amd64\nhostname: llm-two";
        const edit = editPassthroughInPlace(text, 129, [0], majors);
        assert.ok(edit.text.startsWith("arch: amd64\nhostname: llm-two\nlxc.cgroup2.devices.allow: c 195:* rwm\n"));
        assert.equal(editPassthroughInPlace(edit.text, 129, [0], majors).text, edit.text);
    });

    it("refuses a locked config, naming the lock", () => {
        const locked = CT129.replace("arch: amd64\n", "arch: amd64\nlock: backup\n");
        assert.equal(pctConfigLock(locked), "backup");
        assert.throws(
            () => editPassthroughInPlace(locked, 129, [0], majors),
            (e: Error) => e instanceof PctLockedError && /container 129 is locked \(backup\)/.test(e.message) && /pct unlock 129/.test(e.message),
        );
    });

    it("reads a lock only from the main section (a snapshot's lines are its own)", () => {
        assert.equal(pctConfigLock(`${CT129}\n[other]\nlock: snapshot\n`), undefined);
        assert.equal(pctConfigLock(CT129), undefined);
    });

    it("splits at the first section header as pve-container reads it", () => {
        const { main, rest } = splitPctConfigText(CT129);
        assert.equal(main + rest, CT129);
        assert.ok(rest.startsWith("[before-sglang-0511]\n"));
        assert.deepEqual(splitPctConfigText("a: 1\n"), { main: "a: 1\n", rest: "" });
        assert.ok(splitPctConfigText("a: 1\n\n[PVE:Pending]\nb: 2\n").rest.startsWith("[PVE:Pending]"));
    });
});

describe("pct config: in-place edit keeps every byte that is not a passthrough line (property)", () => {
    const nvidiaLine = fc.constantFrom(
        "lxc.cgroup2.devices.allow: c 195:* rwm",
        "lxc.cgroup2.devices.allow: c 508:* rwm",
        "lxc.cgroup2.devices.allow: c 511:* rwm",
        "lxc.cgroup.devices.allow: c 195:* rwm",
        "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia3 dev/nvidia3 none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
        "lxc.mount.entry = /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
    );
    const otherLine = fc.oneof(
        fc.constantFrom("arch: amd64", "cores: 32", "memory: 131072", "parent: before-sglang", "onboot: 1", "", "  ", "#llm-two%3A notes"),
        fc.constantFrom(
            "lxc.cgroup2.devices.allow: c 226:* rwm",
            "lxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir",
            "lxc.apparmor.profile: unconfined",
        ),
        fc.stringMatching(/^[a-z][a-z0-9]{0,8}: [ -~]{0,20}$/).filter((l) => !l.startsWith("lock:")),
        fc.stringMatching(/^#[ -~]{0,30}$/),
    );
    const mainLines = fc.array(fc.oneof(otherLine, nvidiaLine), { maxLength: 16 });
    const section = fc.tuple(fc.constantFrom("[before-sglang]", "[pve:pending]", "[snap2]"), fc.array(fc.oneof(otherLine, nvidiaLine), { maxLength: 6 }));
    const configText = fc.tuple(mainLines, fc.array(section, { maxLength: 3 }), fc.boolean()).map(([main, sections, finalNewline]) => {
        const text = [main.join("\n"), ...sections.map(([h, ls]) => [h, ...ls].join("\n"))].join("\n\n");
        return finalNewline || sections.length > 0 ? `${text}\n` : text;
    });
    const gpus = fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 });
    const isPassthrough = (line: string) => /^lxc\.(cgroup2?\.devices\.allow(:| =) c (195|508):|mount\.entry(:| =) \/dev\/nvidia)/.test(line);
    const lineList = (text: string) => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];

    it("keeps the sections byte-identical and the main section's other lines in order, byte-identical", () => {
        fc.assert(
            fc.property(configText, gpus, (text, gs) => {
                const { text: out } = editPassthroughInPlace(text, 129, gs, majors);
                assert.equal(splitPctConfigText(out).rest, splitPctConfigText(text).rest);
                const others = (t: string) =>
                    lineList(splitPctConfigText(t).main)
                        .map((l) => l.replace(/\n$/, ""))
                        .filter((l) => !isPassthrough(l));
                assert.deepEqual(others(out), others(text));
            }),
            { numRuns: 500 },
        );
    });

    it("leaves exactly the declared GPUs' passthrough lines in the main section, and a second edit changes nothing", () => {
        fc.assert(
            fc.property(configText, gpus, (text, gs) => {
                const { text: out } = editPassthroughInPlace(text, 129, gs, majors);
                const conf = parsePctConfig(out.replace(/ = \/dev/g, ": /dev"));
                assert.deepEqual(passthroughDiff(conf, gs, majors), { missing: [], extra: [] });
                assert.equal(editPassthroughInPlace(out, 129, gs, majors).text, out);
            }),
            { numRuns: 500 },
        );
    });
});

describe("pct config: devN passthrough entries (PVE 8.2+, pve-container's dev0..dev255)", () => {
    const SECTIONS = CT129.slice(CT129.indexOf("\n[before-sglang-0511]"));
    /** The config's main section without its NVIDIA raw lines (the snapshot keeps its own). */
    const withoutRawNvidia = (text: string) => {
        const at = text.indexOf("\n[before-sglang-0511]");
        return text.slice(0, at).replace(/^lxc\.(cgroup2\.devices\.allow: c (195|508):|mount\.entry: \/dev\/nvidia).*\n/gm, "") + text.slice(at);
    };
    /** CT129 passing its GPUs by devN entries instead of raw lines (the /dev/dri line and 226 allow kept). */
    const DEVN = withoutRawNvidia(CT129).replace(
        "cores: 32\n",
        "cores: 32\ndev0: /dev/nvidia0\ndev1: path=/dev/nvidia1,mode=0666\ndev2: /dev/nvidiactl\ndev3: /dev/nvidia-uvm\ndev4: /dev/nvidia-uvm-tools,gid=44\n",
    );

    it("picks devN from Proxmox VE 8.2 on, raw lines before it or when the release is unknown", () => {
        assert.deepEqual(
            ["8.1.4", "8.2.0", "8.3.2", "9.0.3", "", undefined].map((v) => passthroughForm(v)),
            ["raw", "devN", "devN", "devN", "raw", "raw"],
        );
    });

    it("reads the GPUs and devices a devN config passes (path= or the positional path), and it is the declared passthrough without allow lines", () => {
        const live = passthroughFromConfig(parsePctConfig(DEVN));
        assert.deepEqual(live.gpus, [0, 1]);
        assert.deepEqual(live.devEntries, ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]);
        assert.deepEqual(live.mountedDevices, []);
        assert.equal(passthroughMatches(live, [0, 1], majors), true);
        assert.equal(passthroughMatches(live, [0, 1], { nvidia: 195, nvidiaUvm: 511 }), true, "pve-container allows the majors the host has at start");
        assert.equal(passthroughMatches(live, [0], majors), false);
        const noTools = passthroughFromConfig(parsePctConfig(DEVN.replace("dev4: /dev/nvidia-uvm-tools,gid=44\n", "")));
        assert.equal(passthroughMatches(noTools, [0, 1], majors), false);
    });

    it("adopts either form as it is: no edit for a raw config on PVE 8.3, nor for a devN config on either", () => {
        assert.equal(passthroughNeedsEdit(parsePctConfig(CT129), [0, 1], majors, "devN"), false);
        assert.equal(passthroughNeedsEdit(parsePctConfig(DEVN), [0, 1], majors, "devN"), false);
        assert.equal(passthroughNeedsEdit(parsePctConfig(DEVN), [0, 1], majors, "raw"), false);
        assert.equal(passthroughNeedsEdit(parsePctConfig(CT129), [0], majors, "devN"), true);
        assert.equal(editPassthroughInPlace(DEVN, 129, [0, 1], majors, "devN").text, DEVN);
    });

    it("writes a passthrough that must change as devN entries: the raw NVIDIA lines go, the entries where Proxmox writes them (in key order), every other byte kept", () => {
        const withoutUvmTools = CT129.replace("lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file\n", "");
        const edit = editPassthroughInPlace(withoutUvmTools, 129, [0, 1], majors, "devN");
        assert.deepEqual(edit.added, [
            "dev0: /dev/nvidia0",
            "dev1: /dev/nvidia1",
            "dev2: /dev/nvidiactl",
            "dev3: /dev/nvidia-uvm",
            "dev4: /dev/nvidia-uvm-tools",
        ]);
        assert.equal(edit.removed.length, 6);
        assert.equal(edit.text, withoutRawNvidia(withoutUvmTools).replace("cores: 32\n", `cores: 32\n${edit.added.join("\n")}\n`));
        assert.ok(edit.text.endsWith(SECTIONS), "the snapshot and pending sections byte-identical");
        const live = passthroughFromConfig(parsePctConfig(edit.text));
        assert.equal(passthroughMatches(live, [0, 1], majors), true);
    });

    it("keeps a declared device's entry as written and another device's entry, takes out an undeclared GPU's, and adds at the lowest free index", () => {
        const mixed = DEVN.replace("dev0: /dev/nvidia0\n", "dev0: /dev/dri/renderD128\n");
        const edit = editPassthroughInPlace(mixed, 129, [0], majors, "devN");
        assert.deepEqual(edit.removed, ["dev1: path=/dev/nvidia1,mode=0666"]);
        assert.deepEqual(edit.added, ["dev1: /dev/nvidia0"]);
        assert.match(edit.text, /^dev0: \/dev\/dri\/renderD128\ndev1: \/dev\/nvidia0\ndev2: \/dev\/nvidiactl\n/m);
        assert.match(edit.text, /^dev4: \/dev\/nvidia-uvm-tools,gid=44$/m);
        assert.deepEqual(passthroughFromConfig(parsePctConfig(edit.text)).gpus, [0]);
    });

    it("refuses a locked container before editing", () => {
        assert.throws(() => editPassthroughInPlace(CT129.replace("arch: amd64", "lock: backup\narch: amd64"), 129, [0], majors, "devN"), PctLockedError);
    });
});
