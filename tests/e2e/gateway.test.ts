import * as assert from "node:assert/strict";
import { clearFaults, setFaults, simulatorEvents } from "../../lab/control";
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
    let d: Deployment;
    let gatewayUrl: string;
    /** A short chat completion, as a client of the gateway sends it. */
    let chat: Record<string, unknown>;
    /** The stack: two one-GPU servers, `server` applied to each (the same change to both), and the gateway. */
    let config: (server?: Record<string, unknown>) => Record<string, Record<string, unknown>>;
    before(async () => {
        const base = labStackConfig(lab.info, "pct-exec");
        Object.assign(base["sglang-serve:host"]!.gpus as Record<string, unknown>, GPU);
        // One start per config: a change that crashes is rolled back at once. The load's 8-token chats pull
        // the running servers' live accept length well below the prompt set's (README, "the drift check
        // compares live traffic"): the refresh after a run under load would call that drift at 10%.
        base["sglang-serve:readiness"] = { ...base["sglang-serve:readiness"], startAttempts: 1, acceptLengthDropLimit: 0.5 };
        const one: Record<string, unknown> = { ...service(base), tensorParallelSize: 1 };
        chat = { model: (one.model as { servedName: string }).servedName, messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 };
        const { "sglang-serve:service": _one, ...rest } = base;
        gatewayUrl = `http://${lab.info.container.address}:30080`;
        config = (server = {}) => ({
            ...rest,
            "sglang-serve:servers": [
                { ...one, ...server, name: "qwen", gpus: [0] },
                { ...one, ...server, name: "qwen-b", gpus: [1], port: 30001 },
            ] as unknown as Record<string, unknown>,
            "sglang-serve:gateway": {
                smgVersion: LAB_GATEWAY_RELEASE,
                venv: { root: "/opt/smg", findLinks: [CT_WHEELHOUSE], pipArgs: ["--no-index"] },
                listenHost: "0.0.0.0",
                endpointHost: lab.info.container.address,
                healthCheck: { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1 },
            },
        });
        d = await Deployment.create("lab", config());
        d.giveApiKey(API_KEY);
        d.giveGatewayAdminKey(ADMIN_KEY);
    });
    after(() => d?.cleanup());
    const admin = async (method: string, path: string): Promise<{ status: number; body: unknown }> => {
        const res = await fetch(`${gatewayUrl}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
        return { status: res.status, body: await res.json().catch(() => undefined) };
    };
    const workers = async () => ((await admin("GET", "/workers")).body as { workers: Worker[] }).workers;

    it("installs smg and registers each server as a worker; clients are served through it; a worker removed by hand is drift that up repairs", async () => {
        const { labDir, info } = lab;
        {
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
        }
    });

    /** Chat completions through the gateway, two at a time, for as long as it runs: every answer that is not a 200 counts. */
    function loadThroughGateway() {
        const counts = { sent: 0, failed: [] as string[] };
        let running = true;
        const client = async () => {
            while (running) {
                const r = await httpPostJson(`${gatewayUrl}/v1/chat/completions`, chat, { bearer: API_KEY, timeoutMs: 30_000 });
                counts.sent++;
                if (!("status" in r) || r.status !== 200) counts.failed.push(JSON.stringify(r).slice(0, 200));
            }
        };
        const clients = [client(), client()];
        return { counts, stop: async () => ((running = false), await Promise.all(clients)) };
    }

    /** The fewest workers the gateway listed ready at once while it runs (polled every 200 ms). */
    function watchWorkers() {
        let fewest = Infinity;
        let running = true;
        const loop = (async () => {
            while (running) {
                fewest = Math.min(fewest, (await workers()).filter((w) => w.status === "ready").length);
                await new Promise((r) => setTimeout(r, 200));
            }
        })();
        return { fewest: () => fewest, stop: async () => ((running = false), await loop) };
    }

    /** Starts of each server (the lab's launch events), by port. */
    const launches = (port: number) =>
        simulatorEvents(lab.labDir).filter((e) => e.event === "launched" && String(e.detail ?? "").includes(`--port ${port}`)).length;

    it("rolls one flag changed on both servers one at a time while clients send through the gateway: no request fails, one server out at most, each restarted once", async () => {
        const pids = [await mainPid(lab.labDir, "sglang-qwen.service"), await mainPid(lab.labDir, "sglang-qwen-b.service")];
        const starts = [launches(30000), launches(30001)];
        d.writeConfig(config({ maxRunningRequests: 32 }));
        const load = loadThroughGateway();
        const watch = watchWorkers();
        let up;
        try {
            up = await d.up();
        } finally {
            await watch.stop();
            await load.stop();
        }
        expectExit(up, 0, "up of the change to both servers");
        assert.match(up.output, /servers behind the gateway gateway roll out 1 at a time, in this order: qwen, qwen-b/);
        // qwen first, back in the gateway before qwen-b leaves it.
        const order = [
            ...up.output.matchAll(/\[(sglang-qwen(?:-b)?)\.service\] (taking the server out of the gateway|putting the server back into the gateway)/g),
        ].map((m) => `${m[1]} ${m[2]!.split(" ")[0]}`);
        assert.deepEqual(order, ["sglang-qwen taking", "sglang-qwen putting", "sglang-qwen-b taking", "sglang-qwen-b putting"]);
        assert.match(up.output, /\[sglang-qwen\.service\] drained: no request in flight/);
        assert.deepEqual(load.counts.failed, [], `of ${load.counts.sent} requests through the gateway`);
        assert.ok(load.counts.sent > 20, `the clients kept sending (${load.counts.sent} requests)`);
        assert.equal(watch.fewest(), 1, "never both servers out of the gateway, and each out once");
        assert.notEqual(await mainPid(lab.labDir, "sglang-qwen.service"), pids[0]);
        assert.notEqual(await mainPid(lab.labDir, "sglang-qwen-b.service"), pids[1]);
        assert.deepEqual([launches(30000) - starts[0]!, launches(30001) - starts[1]!], [1, 1], "each server started once");
        expectExit(await d.run(["preview", "--refresh", "--expect-no-changes", "--diff"]), 0, "both servers and the gateway as declared");
    });

    it("stops the wave at a change whose server dies at start: the first is rolled back and back in the gateway, the second untouched, no request fails, up names the server", async () => {
        const pids = [await mainPid(lab.labDir, "sglang-qwen.service"), await mainPid(lab.labDir, "sglang-qwen-b.service")];
        setFaults({ crashAfterSeconds: 1, whenArgs: ["--max-running-requests", "24"] }, lab.labDir);
        d.writeConfig(config({ maxRunningRequests: 24 }));
        const load = loadThroughGateway();
        let up;
        try {
            up = await d.up();
        } finally {
            await load.stop();
            clearFaults(lab.labDir);
        }
        assert.notEqual(up.code, 0, up.output);
        assert.match(up.output, /previous unit was put back and is ready again/);
        assert.match(up.output, /\[sglang-qwen\.service\] putting the server back into the gateway/);
        assert.doesNotMatch(up.output, /\[sglang-qwen-b\.service\] (taking|rollout)/, "the wave stopped before qwen-b");
        assert.deepEqual(load.counts.failed, [], `of ${load.counts.sent} requests through the gateway`);
        assert.equal(await mainPid(lab.labDir, "sglang-qwen-b.service"), pids[1], "qwen-b untouched");
        assert.notEqual(await mainPid(lab.labDir, "sglang-qwen.service"), pids[0], "qwen serves again from its previous unit");
        assert.deepEqual((await workers()).map((w) => [w.url, w.status]).sort(), [
            [`http://${lab.info.container.address}:30000`, "ready"],
            [`http://${lab.info.container.address}:30001`, "ready"],
        ]);
    });
});
