import * as assert from "node:assert/strict";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { healthStatus, mainPid, useLab } from "./lab-box";

const API_KEY = "e2e-boxes-api-key-0123456789abcdef";

// Issue 20 item 1 on two lab boxes: one stack, two Proxmox hosts (labs of
// their own, 127.0.133.x and 127.0.134.x, each with its own SSH key), a server
// on each. The second lab's container is 130, so the two LxcContainers differ.
describe("one stack over two boxes", function () {
    this.timeout(900_000);
    const kpro5 = useLab("box-a", 133);
    const kpro6 = useLab("box-b", 134, { vmid: 130 });

    it("serves on each box with that box's key; a change to one box's server restarts only it; the preview is clean afterwards", async () => {
        const a = labStackConfig(kpro5.info, "pct-exec");
        const b = labStackConfig(kpro6.info, "pct-exec");
        const server = (config: typeof a, name: string, box: string) => ({ ...config["sglang-serve:service"], name, box });
        const config = (qwenB: Record<string, unknown>) => ({
            "sglang-serve:boxes": [
                { host: a["sglang-serve:host"], container: a["sglang-serve:container"] },
                { host: { ...b["sglang-serve:host"], name: "kpro6" }, container: b["sglang-serve:container"] },
            ] as unknown as Record<string, unknown>,
            "sglang-serve:servers": [server(a, "qwen", "kpro5"), qwenB] as unknown as Record<string, unknown>,
            "sglang-serve:readiness": a["sglang-serve:readiness"]!,
        });
        const qwenB = server(b, "qwen-b", "kpro6");
        const d = await Deployment.create("lab", config(qwenB));
        try {
            d.giveApiKey(API_KEY);
            const up = await d.up();
            expectExit(up, 0, "up of a server on each box");
            assert.equal(await healthStatus(kpro5.info), 200);
            assert.equal(await healthStatus(kpro6.info), 200);
            const qwenPid = await mainPid(kpro5.labDir, "sglang-qwen.service");
            const bPid = await mainPid(kpro6.labDir, "sglang-qwen-b.service");

            d.writeConfig(config({ ...qwenB, maxRunningRequests: 32 }));
            const change = await d.up();
            expectExit(change, 0, "up changing the server on kpro6");
            assert.match(change.output, /\[sglang-qwen-b\.service\] rollout/);
            assert.notEqual(await mainPid(kpro6.labDir, "sglang-qwen-b.service"), bPid);
            assert.equal(await mainPid(kpro5.labDir, "sglang-qwen.service"), qwenPid, "kpro5's server is untouched");
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "both boxes as declared");
        } finally {
            d.cleanup();
        }
    });
});
