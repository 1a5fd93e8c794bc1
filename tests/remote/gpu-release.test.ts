import assert from "node:assert/strict";
import * as fs from "fs";
import { waitForGpuMemoryReleased } from "../../remote/gpu-release";
import { FakeBox } from "./fake-box";

// The real query script runs in a local shell against a fake nvidia-smi whose
// answers change while the wait sleeps.
describe("waitForGpuMemoryReleased", () => {
    let box: FakeBox;
    beforeEach(() => {
        box = new FakeBox();
    });
    afterEach(() => box.destroy());

    const states = (list: Array<{ gpus: string; apps: string }>) => {
        let i = 0;
        let clock = 0;
        const apply = () => {
            const s = list[Math.min(i, list.length - 1)]!;
            fs.writeFileSync(box.file("gpus"), s.gpus);
            fs.writeFileSync(box.file("apps"), s.apps);
        };
        apply();
        return {
            now: () => clock,
            sleep: async (ms: number) => {
                clock += ms;
                i++;
                apply();
            },
        };
    };

    it("waits until no compute process is left and every watched GPU is under the threshold", async () => {
        const progress: string[] = [];
        const r = await waitForGpuMemoryReleased(box, {
            gpus: [0, 1],
            thresholdMiB: 1024,
            timeoutMs: 120_000,
            onProgress: (m) => progress.push(m),
            ...states([
                { gpus: "0, GPU-a, 43012\n1, GPU-b, 43020\n", apps: "4242, 43000, GPU-a\n4243, 43000, GPU-b\n" },
                { gpus: "0, GPU-a, 20000\n1, GPU-b, 3\n", apps: "4242, 19990, GPU-a\n" },
                { gpus: "0, GPU-a, 3\n1, GPU-b, 3\n", apps: "4242, [N/A], GPU-a\n" },
                { gpus: "0, GPU-a, 3\n1, GPU-b, 3\n", apps: "" },
            ]),
        });
        assert.deepEqual(r, {
            ok: true,
            elapsedMs: 3_000,
            gpus: [
                { index: 0, uuid: "GPU-a", memoryUsedMiB: 3 },
                { index: 1, uuid: "GPU-b", memoryUsedMiB: 3 },
            ],
        });
        assert.match(progress[0]!, /GPU 0: 43012 MiB used, GPU 1: 43020 MiB used; compute processes 4242, 4243/);
        assert.ok(box.calls().includes("nvidia-smi --query-gpu=index,uuid,memory.used --format=csv,noheader,nounits"));
        assert.ok(box.calls().includes("nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits"));
    });

    it("ignores GPUs it was not asked about", async () => {
        const r = await waitForGpuMemoryReleased(box, {
            gpus: [1],
            thresholdMiB: 1024,
            timeoutMs: 10_000,
            ...states([{ gpus: "0, GPU-a, 40000\n1, GPU-b, 5\n", apps: "" }]),
        });
        assert.equal(r.ok, true);
    });

    it("is not held by a neighbour's process on another GPU of the box, only by one on the watched GPUs", async () => {
        const neighbour = { gpus: "0, GPU-a, 40000\n1, GPU-b, 5\n", apps: "5151, 39990, GPU-a\n" };
        const r = await waitForGpuMemoryReleased(box, { gpus: [1], thresholdMiB: 1024, timeoutMs: 10_000, ...states([neighbour]) });
        assert.equal(r.ok, true, JSON.stringify(r));
        const held = await waitForGpuMemoryReleased(box, {
            gpus: [1],
            thresholdMiB: 1024,
            timeoutMs: 2_000,
            ...states([{ gpus: neighbour.gpus, apps: `${neighbour.apps}4242, [N/A], GPU-b\n` }]),
        });
        assert.equal(held.ok, false);
        assert.match(!held.ok ? held.reason : "", /GPU 1: 5 MiB used; compute processes 4242$/);
    });

    it("gives up at the timeout, saying what still holds memory", async () => {
        const r = await waitForGpuMemoryReleased(box, {
            gpus: [0],
            thresholdMiB: 1024,
            timeoutMs: 5_000,
            ...states([{ gpus: "0, GPU-a, 43012\n", apps: "4242, 43000, GPU-a\n" }]),
        });
        assert.equal(r.ok, false);
        assert.match(!r.ok ? r.reason : "", /not released within 5 s .*GPU 0: 43012 MiB used; compute processes 4242/);
    });

    it("fails at once when a watched GPU is not visible", async () => {
        const r = await waitForGpuMemoryReleased(box, {
            gpus: [0, 1],
            thresholdMiB: 1024,
            timeoutMs: 60_000,
            ...states([{ gpus: "0, GPU-a, 3\n", apps: "" }]),
        });
        assert.match(!r.ok ? r.reason : "", /GPU\(s\) 1 not visible on fake-box \(nvidia-smi shows 0\)/);
    });

    it("fails at once when nvidia-smi cannot talk to the driver", async () => {
        fs.writeFileSync(box.file("nvidia-smi-broken"), "");
        const r = await waitForGpuMemoryReleased(box, { gpus: [0], thresholdMiB: 1024, timeoutMs: 60_000, ...states([{ gpus: "", apps: "" }]) });
        assert.match(!r.ok ? r.reason : "", /nvidia-smi failed on fake-box \(exit 9\): NVIDIA-SMI has failed/);
    });
});
