import * as assert from "node:assert/strict";
import { HealthWatch } from "../../bench/lib/health-watch";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { mainPid, onBox, service, useLab } from "./lab-box";

const API_KEY = "e2e-servers-api-key-0123456789abcd";
/** Two GPUs that each hold the 52 GB model: one-GPU servers side by side. */
const GPU = { name: "NVIDIA H200", memoryMiB: 143771 };

/** The lab config with the box's GPUs as the lab's, its one server moved into `servers` with the entries given. */
function withServers(config: StackConfigFile, servers: Array<Record<string, unknown>>): StackConfigFile {
    const { "sglang-serve:service": _one, ...rest } = config;
    return { ...rest, "sglang-serve:servers": servers as unknown as Record<string, unknown> };
}

/** Which pids nvidia-smi shows on which GPU index (the host's view of the simulated GPUs). */
async function appsByGpu(labDir: string): Promise<Map<number, string[]>> {
    const uuids = await onBox(labDir, "host", "nvidia-smi --query-gpu=index,uuid --format=csv,noheader");
    const indexOf = new Map(uuids.split("\n").map((l) => l.split(", ").reverse() as [string, string]));
    const apps = await onBox(labDir, "host", "nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader");
    const by = new Map<number, string[]>();
    for (const line of apps.split("\n").filter(Boolean)) {
        const [pid, uuid] = line.split(", ");
        const index = Number(indexOf.get(uuid!));
        by.set(index, [...(by.get(index) ?? []), pid!]);
    }
    return by;
}

// Issue 20 items 1-2 on the lab box: two one-GPU servers in one stack, each
// unit seeing only its GPU; a change to one restarts only it while the other
// serves on. A lab of its own (127.0.132.x) with two H200-sized GPUs.
describe("several servers on one box, each on its own GPUs", function () {
    this.timeout(900_000);
    const lab = useLab("servers", 132, { gpus: [GPU, GPU] });

    it("runs each server on its GPUs only; a change to one restarts only it, the other keeps its MainPID and answers throughout", async () => {
        const { labDir, info } = lab;
        const base = labStackConfig(info, "pct-exec");
        Object.assign(base["sglang-serve:host"]!.gpus as Record<string, unknown>, GPU);
        const qwen = { ...service(base), tensorParallelSize: 1, gpus: [0] };
        const d = await Deployment.create("lab", withServers(base, [qwen]));
        try {
            d.giveApiKey(API_KEY);
            expectExit(await d.up(), 0, "up of one server on GPU 0");
            assert.match(
                await onBox(labDir, "container", "systemctl show -p Environment --value sglang-qwen.service"),
                /CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0/,
            );
            const qwenPid = await mainPid(labDir, "sglang-qwen.service");
            assert.deepEqual([...(await appsByGpu(labDir)).keys()], [0], "the server holds GPU 0 only");

            // The same server written as `service` is the same resources and inputs, so nothing to do:
            // tests/components/stack.test.ts holds the program to that (no preview of it here).

            const qwenB = { ...qwen, name: "qwen-b", port: 30001, gpus: [1] };
            d.writeConfig(withServers(base, [qwen, qwenB]));
            expectExit(await d.up(), 0, "up adding a server on GPU 1");
            assert.equal(await mainPid(labDir, "sglang-qwen.service"), qwenPid, "adding a neighbour leaves the first server alone");
            const bPid = await mainPid(labDir, "sglang-qwen-b.service");
            const apps = await appsByGpu(labDir);
            assert.deepEqual([...apps.keys()].sort(), [0, 1]);
            assert.equal(apps.get(0)!.length, 1, "one server on GPU 0");
            assert.equal(apps.get(1)!.length, 1, "one server on GPU 1");

            const watch = new HealthWatch(`http://${info.container.address}:30000/health`, 250, 10_000);
            watch.start();
            let r;
            try {
                d.writeConfig(withServers(base, [qwen, { ...qwenB, maxRunningRequests: 32 }]));
                r = await d.up();
            } finally {
                await watch.stop();
            }
            expectExit(r, 0, "up changing qwen-b");
            assert.match(r.output, /\[sglang-qwen-b\.service\] rollout/);
            assert.doesNotMatch(r.output, /\[sglang-qwen\.service\] rollout/);
            assert.notEqual(await mainPid(labDir, "sglang-qwen-b.service"), bPid, "qwen-b restarted");
            assert.equal(await mainPid(labDir, "sglang-qwen.service"), qwenPid, "qwen kept its process");
            assert.ok(watch.samples.length > 10, `qwen was watched through the rollout (${watch.samples.length} samples)`);
            assert.deepEqual(
                watch.samples.filter((s) => !s.ok),
                [],
                "qwen answered /health with 200 throughout",
            );
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "the box as declared");
        } finally {
            d.cleanup();
        }
    });
});
