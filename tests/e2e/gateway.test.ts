import * as assert from "node:assert/strict";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { CT_WHEELHOUSE, LAB_GATEWAY_RELEASE } from "../../lab/sglang/venvs";
import { httpGetJson, httpPostJson } from "../../remote/probe";
import { mainPid, onBox, service, useLab } from "./lab-box";

const API_KEY = "e2e-gateway-api-key-0123456789abc";
const ADMIN_KEY = "e2e-gateway-admin-key-0123456789ab";
const GPU = { name: "NVIDIA H200", memoryMiB: 143771 };

interface Worker {
    id: string;
    url: string;
    status: string;
}

// Issue 20 item 3 on the lab box: smg, the real gateway from its wheel
// (installed by the stack into a venv of its own, from the lab's wheelhouse),
// in front of two one-GPU servers; each server registered as a worker, the
// worker list read back on refresh. A lab of its own (127.0.135.x).
describe("SGLang's gateway (smg) in front of the stack's servers", function () {
    this.timeout(900_000);
    const lab = useLab("gateway", 135, { gpus: [GPU, GPU] });

    it("installs smg and registers each server as a worker; clients are served through it; a worker removed by hand is drift that up repairs", async () => {
        const { labDir, info } = lab;
        const base = labStackConfig(info, "pct-exec");
        Object.assign(base["sglang-serve:host"]!.gpus as Record<string, unknown>, GPU);
        const one = { ...service(base), tensorParallelSize: 1 };
        const { "sglang-serve:service": _one, ...rest } = base;
        const gatewayUrl = `http://${info.container.address}:30080`;
        const d = await Deployment.create("lab", {
            ...rest,
            "sglang-serve:servers": [
                { ...one, name: "qwen", gpus: [0] },
                { ...one, name: "qwen-b", gpus: [1], port: 30001 },
            ] as unknown as Record<string, unknown>,
            "sglang-serve:gateway": {
                smgVersion: LAB_GATEWAY_RELEASE,
                venv: { root: "/opt/smg", findLinks: [CT_WHEELHOUSE], pipArgs: ["--no-index"] },
                listenHost: "0.0.0.0",
                endpointHost: info.container.address,
                healthCheck: { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1 },
            },
        });
        const admin = async (method: string, path: string): Promise<{ status: number; body: unknown }> => {
            const res = await fetch(`${gatewayUrl}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
            return { status: res.status, body: await res.json().catch(() => undefined) };
        };
        const workers = async () => ((await admin("GET", "/workers")).body as { workers: Worker[] }).workers;
        try {
            d.giveApiKey(API_KEY);
            d.giveGatewayAdminKey(ADMIN_KEY);
            const up = await d.up();
            expectExit(up, 0, "up of two servers and the gateway");
            assert.match(up.output, /\[sglang-gateway\.service\] staging smg 1\.13\.0 in \/opt\/smg\/venv-1\.13\.0/);
            assert.match(up.output, /\[sglang-gateway\.service\] registering worker http:\/\/127\.0\.135\.29:30001 \(qwen-b\)/);
            assert.deepEqual((await workers()).map((w) => [w.url, w.status]).sort(), [
                [`http://${info.container.address}:30000`, "ready"],
                [`http://${info.container.address}:30001`, "ready"],
            ]);
            // The keys are in the 0600 file; the unit names them only.
            const unit = await onBox(labDir, "container", "cat /etc/systemd/system/sglang-gateway.service");
            assert.ok(!unit.includes(ADMIN_KEY) && !unit.includes(API_KEY), "no key in the unit file");
            assert.equal(await onBox(labDir, "container", "stat -c %a /etc/sglang/gateway.env"), "600");

            // A client of the gateway: the data plane takes the servers' key, not the admin key.
            const chat = {
                model: (service(base).model as { servedName: string }).servedName,
                messages: [{ role: "user", content: "Say hello." }],
                max_tokens: 8,
            };
            for (let i = 0; i < 4; i++) {
                const r = await httpPostJson(`${gatewayUrl}/v1/chat/completions`, chat, { bearer: API_KEY, timeoutMs: 30_000 });
                assert.ok("status" in r && r.status === 200, `request ${i} through the gateway: ${JSON.stringify(r).slice(0, 300)}`);
            }
            const refused = await httpGetJson(`${gatewayUrl}/workers`, { bearer: API_KEY, timeoutMs: 10_000 });
            assert.ok("status" in refused && refused.status === 401, "the servers' key does not open the admin API");

            // Someone removes a worker by hand: drift at the next refresh, repaired by up without restarting a server.
            const pid = await mainPid(labDir, "sglang-qwen-b.service");
            const b = (await workers()).find((w) => w.url.endsWith(":30001"))!;
            assert.equal((await admin("DELETE", `/workers/${b.id}`)).status, 202);
            for (let i = 0; i < 30 && (await workers()).some((w) => w.url.endsWith(":30001")); i++) await new Promise((r) => setTimeout(r, 500));
            const drift = await d.run(["preview", "--refresh", "--expect-no-changes"]);
            assert.notEqual(drift.code, 0, drift.output);
            assert.match(drift.output, /\[sglang-gateway\.service\] drift: worker http:\/\/127\.0\.135\.29:30001 is not registered/);
            const repair = await d.up();
            expectExit(repair, 0, "up repairing the gateway's workers");
            assert.match(repair.output, /registering worker http:\/\/127\.0\.135\.29:30001 \(qwen-b\)/);
            assert.doesNotMatch(repair.output, /rollout:/, "no server restarted");
            assert.equal(await mainPid(labDir, "sglang-qwen-b.service"), pid);
            assert.equal((await workers()).filter((w) => w.status === "ready").length, 2);
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "the gateway as declared");
        } finally {
            d.cleanup();
        }
    });
});
