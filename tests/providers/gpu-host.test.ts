import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import { PROVIDER_VERSION } from "../../components/dynamic-provider";
import { gpuHostProvider } from "../../providers/gpu-host";
import type { GpuHostOutputs, GpuHostProps } from "../../providers/gpu-host-props";
import { ProviderBox } from "./provider-box";

// The GpuHost provider's decisions, driven directly against the fake box
// (provider-box.ts): its one facts command runs there, against a fake
// nvidia-smi, the box's /proc/devices and pveversion.

type Inputs = GpuHostProps;
type Outputs = GpuHostOutputs;

/** The provider for the box's run (set when the box opens). */
let provider: ReturnType<typeof gpuHostProvider>;

/** create, with the outputs it must return. */
async function create(news: Inputs): Promise<{ id: string; outs: Outputs }> {
    const r = await provider.create(news);
    assert.ok(r.outs, "create returns outputs");
    return { id: r.id, outs: r.outs };
}

describe("GpuHost provider against the fake box", function () {
    this.timeout(20_000);
    let box: ProviderBox;

    beforeEach(async () => {
        box = await ProviderBox.open();
        provider = gpuHostProvider(box.run);
    });
    afterEach(async () => {
        await box.close();
    });

    /** The inputs as components/gpu-host.ts gives them: the host's connection (no vmid) and host.gpus. */
    const inputs = (edit: Partial<Inputs> = {}): Inputs => ({
        providerVersion: PROVIDER_VERSION,
        connection: box.connection("pct-exec", undefined),
        expectedGpus: { count: 2, name: "NVIDIA RTX A6000", memoryMiB: 49140 },
        ...edit,
    });

    const created = async (edit: Partial<Inputs> = {}): Promise<Outputs> => (await create(inputs(edit))).outs;

    describe("create", () => {
        it("reads the GPUs (with their compute capability), the driver, the NVIDIA device majors and the Proxmox version in one command", async () => {
            const { id, outs } = await create(inputs());
            assert.equal(id, "127.0.0.1:22");
            assert.deepEqual(
                outs.gpus.map((g) => [g.index, g.name, g.memoryMiB, g.computeCapability]),
                [
                    [0, "NVIDIA RTX A6000", 49140, "8.6"],
                    [1, "NVIDIA RTX A6000", 49140, "8.6"],
                ],
            );
            assert.equal(outs.driverVersion, "570.133.20");
            assert.deepEqual(outs.deviceMajors, { nvidia: 195, nvidiaUvm: 508 });
            assert.equal(outs.proxmoxVersion, "8.3.2");
            assert.equal(box.commands.length, 1, box.commands.join("\n"));
            assert.match(box.commands[0]!, /^sh -c /, "the host's own command, not wrapped in pct exec");
        });

        it("changes nothing on the host: only nvidia-smi and pveversion run", async () => {
            await created();
            assert.deepEqual(box.calls(), [
                "nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid,compute_cap --format=csv,noheader,nounits",
                "pveversion",
            ]);
        });

        it("fails naming the count, what nvidia-smi lists and the config key when a GPU is missing", async () => {
            fs.writeFileSync(box.fake.file("gpu-facts"), "0, NVIDIA RTX A6000, 49140, 570.133.20, GPU-3f1c2a9e-0000-4b6e-9d1a-000000000000, 8.6\n");
            await assert.rejects(created(), (e: Error) => {
                assert.match(e.message, /^GPU host 127\.0\.0\.1: expected 2 GPU\(s\) but nvidia-smi lists 1 \(0: NVIDIA RTX A6000\)/);
                assert.match(e.message, /sglang-serve:host\.gpus\.count/);
                return true;
            });
        });

        it("fails naming the GPU, both names and the key when the GPUs are another model", async () => {
            fs.writeFileSync(
                box.fake.file("gpu-facts"),
                "0, NVIDIA GeForce RTX 4090, 24564, 570.133.20, GPU-a, 8.9\n1, NVIDIA GeForce RTX 4090, 24564, 570.133.20, GPU-b, 8.9\n",
            );
            await assert.rejects(created(), (e: Error) => {
                assert.match(e.message, /GPU 0 is "NVIDIA GeForce RTX 4090", not "NVIDIA RTX A6000" \(sglang-serve:host\.gpus\.name\)/);
                assert.match(e.message, /GPU 1 has 24564 MiB, not 49140 MiB \(sglang-serve:host\.gpus\.memoryMiB\)/);
                return true;
            });
        });

        it("reports a driver that does not answer as nvidia-smi's own message and the hint, naming the host", async () => {
            fs.writeFileSync(box.fake.file("nvidia-smi-broken"), "");
            await assert.rejects(
                created(),
                /^Error: nvidia-smi failed on 127\.0\.0\.1 \(exit 1\): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\..*is the NVIDIA driver loaded\?$/s,
            );
        });

        it("fails with the read-only gate's own message, not the driver hint, when the gate refuses the read", async () => {
            box.failOn(/nvidia-smi/, {
                code: 1,
                stderr: "sglang-serve-read-gate: refused (gate version 1, expected 2): reinstall it with npm run read-gate -- install-script",
            });
            await assert.rejects(created(), (e: Error) => {
                assert.match(e.message, /^root@127\.0\.0\.1:22: sglang-serve-read-gate: refused \(gate version 1/);
                assert.doesNotMatch(e.message, /NVIDIA driver/);
                return true;
            });
        });

        it("reports nvidia-smi output it cannot parse as an error quoting the line, not a crash", async () => {
            fs.writeFileSync(box.fake.file("gpu-facts"), "No devices were found\n");
            await assert.rejects(created(), (e: Error) => {
                assert.equal(e.message, 'unexpected nvidia-smi line: "No devices were found"');
                return true;
            });
        });

        it("records no device majors when the driver's character devices are not in /proc/devices", async () => {
            fs.writeFileSync(box.root("proc/devices"), "Character devices:\n  1 mem\n\nBlock devices:\n  8 sd\n");
            const outs = await created();
            assert.equal(outs.deviceMajors, null);
        });

        it("records an empty Proxmox version where pveversion is not installed (the direct topology's container)", async () => {
            fs.rmSync(box.fake.file("bin/pveversion"));
            const outs = await created({ connection: box.connection("direct") });
            assert.equal(outs.proxmoxVersion, "");
            assert.equal(outs.gpus.length, 2);
        });
    });

    describe("read", () => {
        it("returns the id and the live facts over the recorded ones", async () => {
            const outs = await created();
            fs.writeFileSync(box.fake.file("gpu-facts"), fs.readFileSync(box.fake.file("gpu-facts"), "utf8").replace(/570\.133\.20/g, "575.51.03"));
            const read = await provider.read!("127.0.0.1:22", outs);
            assert.equal(read.id, "127.0.0.1:22");
            assert.equal(read.props!.driverVersion, "575.51.03");
            assert.deepEqual(read.props!.expectedGpus, outs.expectedGpus);
        });

        it("does not fail when a GPU is gone: the live facts show it, for diff to report", async () => {
            const outs = await created();
            fs.writeFileSync(box.fake.file("gpu-facts"), "1, NVIDIA RTX A6000, 49140, 570.133.20, GPU-3f1c2a9e-1111-4b6e-9d1a-111111111111, 8.6\n");
            const read = await provider.read!("127.0.0.1:22", outs);
            assert.deepEqual(
                read.props!.gpus.map((g) => g.index),
                [1],
            );
            const diff = await provider.diff!("127.0.0.1:22", read.props!, inputs());
            assert.equal(diff.changes, true);
        });

        it("fails with nvidia-smi's message when the driver stopped answering", async () => {
            const outs = await created();
            fs.writeFileSync(box.fake.file("nvidia-smi-broken"), "");
            await assert.rejects(provider.read!("127.0.0.1:22", outs), /nvidia-smi failed on 127\.0\.0\.1 \(exit 1\).*is the NVIDIA driver loaded\?/s);
        });

        it("fails naming the id when there is no state to read from", async () => {
            await assert.rejects(provider.read!("127.0.0.1:22"), /^Error: GpuHost 127\.0\.0\.1:22: no state to read from$/);
        });
    });

    describe("diff", () => {
        it("reports no change when the inputs are the same and the live GPUs meet them", async () => {
            const outs = await created();
            assert.deepEqual(await provider.diff!("127.0.0.1:22", outs, inputs()), { changes: false, replaces: [] });
        });

        it("reports a change, never a replacement, for each input: provider version, connection, expected GPUs", async () => {
            const outs = await created();
            for (const news of [
                inputs({ providerVersion: "sglang-serve/2" }),
                inputs({ connection: { ...box.connection("pct-exec", undefined), port: 2222 } }),
                inputs({ expectedGpus: { count: 1, name: "NVIDIA RTX A6000", memoryMiB: 49140 } }),
            ]) {
                assert.deepEqual(await provider.diff!("127.0.0.1:22", outs, news), { changes: true, replaces: [] }, JSON.stringify(news));
            }
        });

        it("reports a change when the recorded GPUs no longer meet the expectation (drift after a refresh)", async () => {
            const outs = await created();
            const drifted: Outputs = { ...outs, gpus: outs.gpus.slice(0, 1) };
            assert.equal((await provider.diff!("127.0.0.1:22", drifted, inputs())).changes, true);
        });
    });

    describe("update", () => {
        it("reads the facts again and records the new expectation", async () => {
            const olds = await created();
            const news = inputs({ expectedGpus: { count: 1, memoryMiB: 49140 } });
            const { outs } = await provider.update!("127.0.0.1:22", olds, news);
            assert.deepEqual(outs!.expectedGpus, { count: 1, memoryMiB: 49140 });
            assert.equal(outs!.gpus.length, 2);
        });
    });

    describe("delete", () => {
        it("runs nothing on the host", async () => {
            const outs = await created();
            box.forget();
            await provider.delete!("127.0.0.1:22", outs);
            assert.deepEqual(box.commands, []);
        });
    });
});
