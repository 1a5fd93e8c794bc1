import * as assert from "node:assert/strict";
import { PROVIDER_VERSION } from "../../components/dynamic-provider";
import { ContainerConfig, ContainerSchema } from "../../core/config/schema";
import { lxcContainerProvider } from "../../providers/lxc-container";
import type { ContainerOutputs, ContainerProps } from "../../providers/lxc-container-props";
import { batchAnswer, ProviderBox } from "./provider-box";

// The LxcContainer provider's decisions, driven directly against the fake box
// (provider-box.ts): `pct config`/`status`/`set`/`start` are a fake pct over
// the box's /etc/pve/lxc/129.conf, and the passthrough edit's real script
// (flock on /run/lock/lxc, digest check, base64, tmp + rename) runs there.

type Inputs = ContainerProps;
type Outputs = ContainerOutputs;

/** The provider for the box's run (set when the box opens). */
let provider: ReturnType<typeof lxcContainerProvider>;

/** create, with the outputs it must return. */
async function create(news: Inputs): Promise<{ id: string; outs: Outputs }> {
    const r = await provider.create(news);
    assert.ok(r.outs, "create returns outputs");
    return { id: r.id, outs: r.outs };
}

const ID = "127.0.0.1/lxc/129";
const CONF_PATH = "etc/pve/lxc/129.conf";
const majors = { nvidia: 195, nvidiaUvm: 508 };

const PASSTHROUGH = [
    "lxc.cgroup2.devices.allow: c 195:* rwm",
    "lxc.cgroup2.devices.allow: c 508:* rwm",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
];

/** The snapshot and pending sections, which the stack must keep byte for byte. */
const SECTIONS = [
    "[before-sglang-0511]",
    "arch: amd64",
    "cores: 16",
    "hostname: llm-two",
    "snaptime: 1764460800",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "",
    "[pve:pending]",
    "swap: 8192",
    "",
].join("\n");

/** Container 129 as it stands in the field: 2 GPUs passed through, a description, a snapshot and pending changes. */
function fieldConf(passthrough: string[] = PASSTHROUGH, extra: string[] = []): string {
    return [
        "#llm-two%3A SGLang Qwen3.6-27B",
        "arch: amd64",
        "cores: 32",
        "features: nesting=1",
        "hostname: llm-two",
        "memory: 131072",
        "net0: name=eth0,bridge=vmbr0,firewall=1,gw=10.1.230.1,hwaddr=BC:24:11:5E:12:9A,ip=10.1.230.172/24,type=veth",
        "onboot: 1",
        "ostype: debian",
        "parent: before-sglang-0511",
        "rootfs: local-lvm:vm-129-disk-0,size=200G",
        "swap: 0",
        ...extra,
        ...passthrough,
        "",
        SECTIONS,
    ].join("\n");
}

/** check, with the inputs it must return. */
async function check(olds: Inputs, news: Inputs): Promise<{ inputs: Inputs; failures?: unknown }> {
    const r = await provider.check!(olds, news);
    assert.ok(r.inputs, "check returns inputs");
    return { inputs: r.inputs, failures: r.failures };
}

describe("LxcContainer provider against the fake box", function () {
    this.timeout(20_000);
    let box: ProviderBox;

    beforeEach(async () => {
        box = await ProviderBox.open();
        provider = lxcContainerProvider(box.run);
        box.write(CONF_PATH, fieldConf(), 0o640);
    });
    afterEach(async () => {
        await box.close();
    });

    /** The container block of the stack config, validated as components/stack-config.ts does. */
    const container = (edit: Record<string, unknown> = {}): ContainerConfig =>
        ContainerSchema.parse({ vmid: 129, hostname: "llm-two", adopt: true, gpus: [0, 1], ...edit });

    /** The inputs as components/lxc-container.ts gives them, after check. */
    const inputs = (edit: Record<string, unknown> = {}, rest: Partial<Inputs> = {}): Inputs => {
        const c = container(edit);
        return {
            providerVersion: PROVIDER_VERSION,
            connection: box.connection("pct-exec", undefined),
            container: c,
            deviceMajors: majors,
            vmid: c.vmid,
            restart: "no",
            ...rest,
        };
    };

    const adopt = async (edit: Record<string, unknown> = {}): Promise<Outputs> => {
        const outs = (await create(inputs(edit))).outs;
        box.forget();
        return outs;
    };

    describe("check", () => {
        it("says no restart is needed on the first preview, when there are no old inputs", async () => {
            const { inputs: checked, failures } = await check({} as Inputs, inputs());
            assert.equal(checked.restart, "no");
            assert.equal(failures, undefined);
        });

        it("names the declared changes that need a container restart: hostname, features, GPUs", async () => {
            const olds = inputs();
            const news = inputs({ hostname: "llm-three", features: { nesting: true, keyctl: true }, gpus: [0] });
            const { inputs: checked } = await check(olds, news);
            assert.equal(checked.restart, "needed for: container.hostname, container.features, container.gpus (not done by the stack)");
        });

        it("says no restart for changes Proxmox applies to a running container (cores, memory, swap)", async () => {
            const { inputs: checked } = await check(inputs(), inputs({ cores: 16, memoryMiB: 65536, swapMiB: 512 }));
            assert.equal(checked.restart, "no");
        });
    });

    describe("diff", () => {
        it("reports no change when the inputs and the live container match", async () => {
            const outs = await adopt();
            assert.deepEqual(await provider.diff!(ID, outs, inputs()), { changes: false, replaces: [] });
        });

        it("replaces, creating the new one first, when the vmid changes: another vmid is another container", async () => {
            const outs = await adopt();
            assert.deepEqual(await provider.diff!(ID, outs, inputs({ vmid: 130 })), { changes: true, replaces: ["vmid"], deleteBeforeReplace: false });
        });

        it("reports a change, never a replacement, for each other input: provider version, connection, container, device majors", async () => {
            const outs = await adopt();
            for (const news of [
                inputs({}, { providerVersion: "sglang-serve/2" }),
                inputs({}, { connection: { ...box.connection("pct-exec", undefined), port: 2222 } }),
                inputs({ cores: 16 }),
                inputs({ gpus: [0] }),
                inputs({}, { deviceMajors: { nvidia: 195, nvidiaUvm: 511 } }),
            ]) {
                assert.deepEqual(await provider.diff!(ID, outs, news), { changes: true, replaces: [] }, JSON.stringify(news));
            }
        });

        it("reports drift when the live settings differ from the declared ones (a `pct set` by hand)", async () => {
            const outs = await adopt({ cores: 32 });
            const drifted: Outputs = { ...outs, settings: { ...outs.settings, cores: 8 } };
            assert.equal((await provider.diff!(ID, drifted, inputs({ cores: 32 }))).changes, true);
        });

        it("does not report drift for a live setting the config leaves out", async () => {
            const outs = await adopt();
            const other: Outputs = { ...outs, settings: { ...outs.settings, cores: 8, memoryMiB: 4096 } };
            assert.equal((await provider.diff!(ID, other, inputs())).changes, false);
        });

        it("reports drift when a GPU's passthrough is gone from the live config", async () => {
            const outs = await adopt();
            const drifted: Outputs = {
                ...outs,
                passthrough: { ...outs.passthrough, gpus: [0], mountedDevices: outs.passthrough.mountedDevices.filter((d) => d !== "nvidia1") },
            };
            assert.equal((await provider.diff!(ID, drifted, inputs())).changes, true);
        });

        it("reports drift when only a control device's bind mount is gone (nvidia-uvm-tools)", async () => {
            const outs = await adopt();
            const drifted: Outputs = {
                ...outs,
                passthrough: { ...outs.passthrough, mountedDevices: outs.passthrough.mountedDevices.filter((d) => d !== "nvidia-uvm-tools") },
            };
            assert.equal((await provider.diff!(ID, drifted, inputs())).changes, true);
        });

        it("reports a stopped container as drift: up starts it", async () => {
            const outs = await adopt();
            assert.equal((await provider.diff!(ID, { ...outs, status: "stopped" }, inputs())).changes, true);
        });
    });

    describe("create (adopt)", () => {
        it("adopts a container that already matches without running pct set or writing its config", async () => {
            const { id, outs } = await create(inputs());
            assert.equal(id, ID);
            assert.equal(outs.status, "running");
            assert.deepEqual(outs.passthrough.gpus, [0, 1]);
            assert.equal(outs.settings.hostname, "llm-two");
            assert.equal(outs.settings.cores, 32);
            assert.deepEqual(outs.pendingRestart, []);
            assert.equal(outs.restart, "no");
            assert.deepEqual(box.callsOf("pct"), ["pct config 129 --current", "pct status 129", "pct config 129 --current", "pct status 129"]);
            assert.equal(box.read(CONF_PATH), fieldConf());
        });

        it("refuses to create a container when adopt is false, running nothing on the host", async () => {
            await assert.rejects(
                create(inputs({ adopt: false })),
                /sglang-serve:container\.adopt is false, but creating containers is not supported: create container 129 with pct create and set adopt: true/,
            );
            assert.deepEqual(box.commands, []);
        });

        it("fails naming the vmid, the host and pct create when the container does not exist", async () => {
            box.remove(CONF_PATH);
            await assert.rejects(
                create(inputs()),
                /^Error: container 129 does not exist on 127\.0\.0\.1; sglang-serve adopts an existing container \(create it with pct create/,
            );
        });

        it("applies declared settings with exactly one pct set of the options that differ", async () => {
            const { outs } = await create(inputs({ cores: 16, memoryMiB: 65536, swapMiB: 0, onboot: true }));
            assert.deepEqual(box.callsOf("pct set"), ["pct set 129 -cores 16 -memory 65536"]);
            assert.equal(outs.settings.cores, 16);
            assert.equal(outs.settings.memoryMiB, 65536);
            // Cores and memory apply to a running container: nothing waits for a restart.
            assert.deepEqual(outs.pendingRestart, []);
            assert.ok(box.said.includes("[ct129] pct set 129 -cores 16 -memory 65536"), box.said.join("\n"));
        });

        it("reports a hostname change as taking effect at the next restart, and never restarts the container", async () => {
            const { outs } = await create(inputs({ hostname: "llm-three" }));
            assert.deepEqual(box.callsOf("pct set"), ["pct set 129 -hostname llm-three"]);
            assert.deepEqual(outs.pendingRestart, ["container.hostname"]);
            assert.ok(
                box.said.some((l) => l.includes("takes effect at the container's next restart (not restarted by the stack): container.hostname")),
                box.said.join("\n"),
            );
            assert.deepEqual(
                box.calls().filter((c) => /^pct (start|stop|reboot)/.test(c)),
                [],
            );
        });

        it("writes missing passthrough lines into the config file, keeping every other line and section byte for byte", async () => {
            const without = PASSTHROUGH.filter((l) => !l.includes("nvidia1") && !l.includes("nvidia-uvm-tools"));
            box.write(CONF_PATH, fieldConf(without), 0o640);
            const { outs } = await create(inputs());
            const after = box.read(CONF_PATH)!;
            assert.equal(
                after,
                fieldConf([
                    ...without,
                    "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
                    "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
                ]),
            );
            assert.ok(after.endsWith(`\n\n${SECTIONS}`), "the snapshot and pending sections are untouched");
            assert.deepEqual(outs.passthrough.gpus, [0, 1]);
            assert.deepEqual(outs.pendingRestart, ["container.gpus (passthrough lines)"]);
            assert.deepEqual(box.callsOf("pct set"), [], "pct set cannot write raw lxc.* keys");
        });

        it("on Proxmox VE 8.2 and later writes a passthrough that must change as devN entries, in place of the raw lines, and says so", async () => {
            const without = PASSTHROUGH.filter((l) => !l.includes("nvidia-uvm-tools"));
            box.write(CONF_PATH, fieldConf(without), 0o640);
            const { outs } = await create(inputs({}, { proxmoxVersion: "8.3.2" }));
            const devN = ["dev0: /dev/nvidia0", "dev1: /dev/nvidia1", "dev2: /dev/nvidiactl", "dev3: /dev/nvidia-uvm", "dev4: /dev/nvidia-uvm-tools"];
            assert.equal(box.read(CONF_PATH), fieldConf([]).replace("cores: 32\n", `cores: 32\n${devN.join("\n")}\n`));
            assert.deepEqual(outs.passthrough.gpus, [0, 1]);
            assert.deepEqual(outs.passthrough.devEntries, ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]);
            assert.deepEqual(outs.pendingRestart, ["container.gpus (passthrough devN entries)"]);
            assert.ok(
                box.said.some((l) => /written into \/etc\/pve\/lxc\/129\.conf as devN entries \(Proxmox VE 8\.3\.2: /.test(l)),
                box.said.join("\n"),
            );
        });

        it("adopts a container that passes the GPUs in either form as it is, on Proxmox VE 8.3", async () => {
            const { outs } = await create(inputs({}, { proxmoxVersion: "8.3.2" }));
            assert.equal(box.read(CONF_PATH), fieldConf(), "the raw lines stay");
            assert.deepEqual(outs.pendingRestart, []);
            const devN = fieldConf([]).replace(
                "cores: 32\n",
                "cores: 32\ndev0: /dev/nvidia0\ndev1: /dev/nvidia1,mode=0666\ndev2: /dev/nvidiactl\ndev3: /dev/nvidia-uvm\ndev4: /dev/nvidia-uvm-tools\n",
            );
            box.write(CONF_PATH, devN, 0o640);
            const adopted = await create(inputs({}, { proxmoxVersion: "8.3.2" }));
            assert.equal(box.read(CONF_PATH), devN);
            assert.deepEqual(adopted.outs.pendingRestart, []);
        });

        it("takes out the passthrough lines of a GPU no longer declared, and only those", async () => {
            const { outs } = await create(inputs({ gpus: [0] }));
            assert.equal(box.read(CONF_PATH), fieldConf(PASSTHROUGH.filter((l) => !l.includes("/dev/nvidia1 "))));
            assert.deepEqual(outs.passthrough.gpus, [0]);
        });

        it("refuses a locked container before changing anything, naming the lock and pct unlock", async () => {
            box.write(CONF_PATH, fieldConf(PASSTHROUGH.slice(0, 3), ["lock: backup"]), 0o640);
            const before = box.read(CONF_PATH);
            await assert.rejects(create(inputs({ cores: 16 })), (e: Error) => {
                assert.match(
                    e.message,
                    /^container 129 is locked \(backup\): its config has "lock: backup", which Proxmox sets while a backup \(vzdump\) runs/,
                );
                assert.match(e.message, /nothing was changed/);
                assert.match(e.message, /pct unlock 129/);
                return true;
            });
            assert.equal(box.read(CONF_PATH), before);
            assert.deepEqual(box.callsOf("pct set"), []);
        });

        it("adopts a locked container that needs no change", async () => {
            box.write(CONF_PATH, fieldConf(PASSTHROUGH, ["lock: backup"]), 0o640);
            const { outs } = await create(inputs());
            assert.equal(outs.status, "running");
        });

        it("starts a stopped container (never restarts a running one) and waits for its systemd", async () => {
            box.containerStatus(129, "stopped");
            const { outs } = await create(inputs());
            assert.ok(box.calls().includes("pct start 129"), box.calls().join("\n"));
            assert.ok(box.calls().includes("pct exec 129 -- systemctl is-system-running --wait"), box.calls().join("\n"));
            assert.equal(outs.status, "running");
        });
    });

    describe("read", () => {
        it("returns the live settings and passthrough, and inputs as the box has them for the declared fields", async () => {
            const outs = await adopt({ cores: 32, memoryMiB: 131072 });
            box.write(
                CONF_PATH,
                fieldConf(
                    PASSTHROUGH.filter((l) => !l.includes("/dev/nvidia1 ")),
                    [],
                )
                    .replace("cores: 32", "cores: 8")
                    .replace("hostname: llm-two", "hostname: renamed"),
                0o640,
            );
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, ID);
            assert.equal(read.props!.settings.cores, 8);
            assert.deepEqual(read.props!.passthrough.gpus, [0]);
            assert.equal(read.inputs!.container.cores, 8);
            assert.equal(read.inputs!.container.memoryMiB, 131072);
            assert.equal(read.inputs!.container.hostname, "renamed");
            assert.deepEqual(read.inputs!.container.gpus, [0]);
            assert.equal((read.inputs as unknown as Record<string, unknown>).status, undefined, "inputs carry no outputs");
            assert.equal((await provider.diff!(ID, read.props!, inputs({ cores: 32, memoryMiB: 131072 }))).changes, true);
        });

        it("leaves a setting the config does not declare out of the inputs", async () => {
            const outs = await adopt();
            const read = await provider.read!(ID, outs);
            assert.equal(read.inputs!.container.cores, undefined);
            assert.equal(read.inputs!.container.memoryMiB, undefined);
        });

        it("returns a blank id when the container is gone", async () => {
            const outs = await adopt();
            box.remove(CONF_PATH);
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, "");
        });

        it("reads only: the refresh runs pct config and pct status, in one command", async () => {
            const outs = await adopt();
            await provider.read!(ID, outs);
            assert.equal(box.commands.length, 1);
            assert.deepEqual(box.callsOf("pct"), ["pct config 129 --current", "pct status 129"]);
        });

        it("reports a config pct prints but the stack cannot parse as an error naming the line", async () => {
            const outs = await adopt();
            box.answer(/pct config/, batchAnswer({ config: "arch: amd64\nthis is not a pct line\n", status: "status: running\n" }));
            await assert.rejects(provider.read!(ID, outs), /line 2 is not "key: value": "this is not a pct line"/);
        });

        it("names the container and the host when the config it reads cannot be parsed", async () => {
            const outs = await adopt();
            box.answer(/pct config/, batchAnswer({ config: "arch: amd64\nthis is not a pct line\n", status: "status: running\n" }));
            await assert.rejects(provider.read!(ID, outs), /129.*127\.0\.0\.1|127\.0\.0\.1.*129/);
        });

        it("fails naming pct config, the vmid and the host when pct itself fails", async () => {
            const outs = await adopt();
            box.failOn(/pct config/, {
                code: 255,
                stderr: "ipcc_send_rec[1] failed: Connection refused\nUnable to load access control list: Connection refused",
            });
            await assert.rejects(provider.read!(ID, outs), /^Error: pct config 129 failed on root@127\.0\.0\.1:22 \(exit 255\): ipcc_send_rec\[1\] failed/);
        });
    });

    describe("update", () => {
        it("brings the box to the new declared settings and records them", async () => {
            const olds = await adopt();
            const { outs } = await provider.update!(ID, olds, inputs({ cores: 24 }));
            assert.deepEqual(box.callsOf("pct set"), ["pct set 129 -cores 24"]);
            assert.equal(outs!.settings.cores, 24);
            assert.match(box.read(CONF_PATH)!, /^cores: 24$/m);
        });

        it("fails naming the pct set command, its exit code and pct's message when pct set fails", async () => {
            const olds = await adopt();
            box.failOn(/pct set/, { code: 255, stderr: "unable to parse value of 'memory' - value must have a minimum value of 16" });
            await assert.rejects(provider.update!(ID, olds, inputs({ memoryMiB: 65536 })), (e: Error) => {
                assert.match(e.message, /command failed with exit code 255: pct set 129 -memory 65536/);
                assert.match(e.message, /unable to parse value of 'memory'/);
                return true;
            });
        });

        it("fails naming Proxmox's config lock when another task holds it, leaving the config file as it was", async () => {
            const olds = await adopt();
            const without = PASSTHROUGH.filter((l) => !l.includes("nvidia-uvm-tools"));
            box.write(CONF_PATH, fieldConf(without), 0o640);
            box.failOn(/flock -w/, { code: 75, stderr: "sglang-serve: timeout waiting for /run/lock/lxc/pve-config-129.lock" });
            await assert.rejects(
                provider.update!(ID, olds, inputs()),
                /cannot take Proxmox's config lock \/run\/lock\/lxc\/pve-config-129\.lock on root@127\.0\.0\.1:22 within 10 s/,
            );
            assert.equal(box.read(CONF_PATH), fieldConf(without));
        });

        it("throws { id, properties, reasons } recording the applied pct set when the passthrough edit after it fails", async () => {
            const olds = await adopt();
            const without = PASSTHROUGH.filter((l) => !l.includes("nvidia-uvm-tools"));
            box.write(CONF_PATH, fieldConf(without), 0o640);
            box.failOn(/flock -w/, { code: 75, stderr: "sglang-serve: timeout waiting for /run/lock/lxc/pve-config-129.lock" });
            await assert.rejects(provider.update!(ID, olds, inputs({ cores: 24 })), (e: Error & { id?: string; properties?: Outputs; reasons?: string[] }) => {
                assert.equal(e.id, ID);
                assert.equal(e.properties!.settings.cores, 24);
                assert.ok(e.reasons!.some((r) => /config lock/.test(r)));
                assert.match(
                    e.message,
                    /^pct set 129 -cores 24 was applied, then the GPU passthrough edit failed: cannot take Proxmox's config lock .*the passthrough lines were not changed/,
                );
                return true;
            });
        });
    });

    describe("delete", () => {
        it("refuses without container.allowDelete, naming the key, and leaves the container untouched", async () => {
            const outs = await adopt();
            await assert.rejects(
                provider.delete!(ID, outs),
                /refusing to delete container 129: the model weights live there\. Set sglang-serve:container\.allowDelete: true/,
            );
            assert.deepEqual(box.commands, []);
            assert.equal(box.read(CONF_PATH), fieldConf());
        });

        it("stops and destroys the container when container.allowDelete is true", async () => {
            const outs = await adopt({ allowDelete: true });
            await provider.delete!(ID, outs);
            assert.deepEqual(box.callsOf("pct"), ["pct stop 129", "pct destroy 129"]);
            assert.equal(box.read(CONF_PATH), null);
        });

        it("fails naming pct destroy and its message when Proxmox refuses the destroy", async () => {
            const outs = await adopt({ allowDelete: true });
            box.failOn(/pct destroy/, { code: 255, stderr: "can't remove CT 129 - protection mode enabled" });
            await assert.rejects(provider.delete!(ID, outs), /command failed with exit code 255: pct destroy 129\n.*protection mode enabled/s);
        });
    });
});
