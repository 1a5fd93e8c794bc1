import * as assert from "node:assert/strict";
import { clearFaults, setFaults } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { everyServer, GATEWAY_LAB_GPU, gatewayScenario, GatewayScenario, serverLaunches } from "../../lab/gateway-stack";
import { loadThroughGateway } from "../../lab/gateway-load";
import { httpGetJson, httpPostJson } from "../../remote/probe";
import { mainPid, onBox, useLab } from "./lab-box";

/** Each client's pause between its requests (lab/gateway-load.ts: two clients, about 40 requests a second). */
const LOAD_PAUSE_MS = 50;
const API_KEY = "e2e-gateway-api-key-0123456789abc";
const ADMIN_KEY = "e2e-gateway-admin-key-0123456789ab";
/**
 * Secrets a deploy job's environment may hold beside the stack's own (issue
 * 34): none may reach smg. The run's PULUMI_CONFIG_PASSPHRASE is the
 * deployment's own (its state's), checked by name and value below.
 */
const PLANTED = {
    SSH_AUTH_SOCK: "/tmp/ssh-planted/agent.1",
    AWS_SECRET_ACCESS_KEY: "planted-aws-secret",
};

interface Worker {
    id: string;
    url: string;
    status: string;
}

// Issue 20 item 3 on the lab box: smg, the real gateway from its wheel
// (installed by the stack into a venv of its own, from the lab's wheelhouse),
// in front of three servers over two boxes (lab/gateway-stack.ts): two
// one-GPU servers on kpro5 (a lab with two H200-sized GPUs, 127.0.135.x), the
// field's TP 2 server on kpro6 (a second lab, 127.0.136.x, container 130);
// each registered as a worker, the worker list read back on refresh, changes
// rolled one server at a time.
describe("SGLang's gateway (smg) in front of three servers over two boxes", function () {
    this.timeout(900_000);
    const lab = useLab("gateway", 135, { gpus: [GATEWAY_LAB_GPU, GATEWAY_LAB_GPU] });
    const labB = useLab("gateway-b", 136, { vmid: 130 });
    let d: Deployment;
    let scenario: GatewayScenario;
    let gatewayUrl: string;
    before(async () => {
        scenario = gatewayScenario(lab.info, labB.info);
        gatewayUrl = scenario.gatewayUrl;
        d = await Deployment.create("lab", scenario.config());
        d.giveApiKey(API_KEY);
        d.giveGatewayAdminKey(ADMIN_KEY);
    });
    after(() => d?.cleanup());
    const admin = async (method: string, path: string): Promise<{ status: number; body: unknown }> => {
        const res = await fetch(`${gatewayUrl}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
        return { status: res.status, body: await res.json().catch(() => undefined) };
    };
    const workers = async () => ((await admin("GET", "/workers")).body as { workers: Worker[] }).workers;
    /** The three servers' worker URLs, each ready, as the sorted list GET /workers gives. */
    const allReady = () => scenario.workerUrls.map((url) => [url, "ready"]).sort();
    /** The three servers' MainPIDs: qwen, qwen-b (kpro5), qwen-c (kpro6). */
    const mainPids = async () => [
        await mainPid(lab.labDir, "sglang-qwen.service"),
        await mainPid(lab.labDir, "sglang-qwen-b.service"),
        await mainPid(labB.labDir, "sglang-qwen-c.service"),
    ];

    it("installs smg and registers each server as a worker; clients are served through it; a worker removed by hand is drift that up repairs", async () => {
        const { labDir } = lab;
        {
            // The deploy run holds secrets of other tools: smg (staged by pip on the box, run by systemd) sees none of them.
            const up = await d.run(["up", "--yes", "--skip-preview", "--diff"], { env: PLANTED });
            expectExit(up, 0, "up of three servers over two boxes and the gateway");
            assert.match(up.output, /\[sglang-gateway\.service\] staging smg 1\.13\.0 in \/opt\/smg\/venv-1\.13\.0/);
            const smgPid = await mainPid(labDir, "sglang-gateway.service");
            const smgEnviron = await onBox(labDir, "container", `tr '\\0' '\\n' < /proc/${smgPid}/environ`);
            // What systemd gave it: the EnvironmentFile's keys (root alone reads /proc/<pid>/environ), nothing of the deploy run.
            assert.match(
                smgEnviron,
                /^SMG_ADMIN_KEY=/m,
                `smg's environment was read: ${smgEnviron
                    .split("\n")
                    .map((l) => l.split("=")[0])
                    .join(" ")}`,
            );
            const passphrase = d.env().PULUMI_CONFIG_PASSPHRASE!;
            for (const [name, value] of Object.entries({ ...PLANTED, PULUMI_CONFIG_PASSPHRASE: passphrase })) {
                assert.ok(!smgEnviron.includes(name) && !smgEnviron.includes(value), `smg's environment holds ${name}`);
            }
            assert.match(up.output, /\[sglang-gateway\.service\] registering worker http:\/\/127\.0\.135\.29:30001 \(qwen-b\)/);
            assert.deepEqual((await workers()).map((w) => [w.url, w.status]).sort(), allReady());
            // The keys are in the 0600 file; the unit names them only.
            const unit = await onBox(labDir, "container", "cat /etc/systemd/system/sglang-gateway.service");
            assert.ok(!unit.includes(ADMIN_KEY) && !unit.includes(API_KEY), "no key in the unit file");
            assert.equal(await onBox(labDir, "container", "stat -c %a /etc/sglang/gateway.env"), "600");

            // A client of the gateway: the data plane takes the servers' key, not the admin key.
            for (let i = 0; i < 4; i++) {
                const r = await httpPostJson(`${gatewayUrl}/v1/chat/completions`, scenario.chat, { bearer: API_KEY, timeoutMs: 30_000 });
                assert.ok("status" in r && r.status === 200, `request ${i} through the gateway: ${JSON.stringify(r).slice(0, 300)}`);
            }
            const refused = await httpGetJson(`${gatewayUrl}/workers`, { bearer: API_KEY, timeoutMs: 10_000 });
            assert.ok("status" in refused && refused.status === 401, "the servers' key does not open the admin API");

            // Someone removes a worker by hand: drift at the next refresh, repaired by up without restarting a server. The
            // up's own refresh (the stack's refresh: always) reports it, as a preview would, and the up then registers the
            // worker again: the change the drift left pending.
            const pid = await mainPid(labDir, "sglang-qwen-b.service");
            const b = (await workers()).find((w) => w.url.endsWith(":30001"))!;
            assert.equal((await admin("DELETE", `/workers/${b.id}`)).status, 202);
            for (let i = 0; i < 30 && (await workers()).some((w) => w.url.endsWith(":30001")); i++) await new Promise((r) => setTimeout(r, 500));
            const repair = await d.up();
            expectExit(repair, 0, "up repairing the gateway's workers");
            assert.match(repair.output, /\[sglang-gateway\.service\] drift: worker http:\/\/127\.0\.135\.29:30001 is not registered/);
            assert.match(repair.output, /registering worker http:\/\/127\.0\.135\.29:30001 \(qwen-b\)/);
            assert.ok(
                repair.output.indexOf("drift: worker http://127.0.135.29:30001") < repair.output.indexOf("registering worker http://127.0.135.29:30001"),
                "the refresh saw the drift before the update repaired it",
            );
            assert.doesNotMatch(repair.output, /rollout:/, "no server restarted");
            assert.equal(await mainPid(labDir, "sglang-qwen-b.service"), pid);
            assert.deepEqual((await workers()).map((w) => [w.url, w.status]).sort(), allReady());
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "the gateway as declared");
        }
    });

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

    /** Starts of each server (the labs' launch events): qwen, qwen-b, qwen-c. */
    const launches = () => serverLaunches(scenario, { a: lab.labDir, b: labB.labDir });

    it("rolls one flag changed on three servers over two boxes one at a time while clients send through the gateway: no request fails, one server out at most, each restarted once", async () => {
        const pids = await mainPids();
        const starts = launches();
        d.writeConfig(scenario.config(everyServer({ maxRunningRequests: 32 })));
        const load = loadThroughGateway(gatewayUrl, scenario.chat, API_KEY, { pauseMs: LOAD_PAUSE_MS });
        const watch = watchWorkers();
        let up;
        try {
            up = await d.up();
        } finally {
            await watch.stop();
            await load.stop();
        }
        expectExit(up, 0, "up of the change to the three servers");
        assert.match(up.output, /servers behind the gateway gateway roll out 1 at a time, in this order: qwen, qwen-b, qwen-c/);
        // Each back in the gateway before the next leaves it.
        const order = [
            ...up.output.matchAll(/\[(sglang-qwen(?:-b|-c)?)\.service\] (taking the server out of the gateway|putting the server back into the gateway)/g),
        ].map((m) => `${m[1]} ${m[2]!.split(" ")[0]}`);
        assert.deepEqual(order, [
            "sglang-qwen taking",
            "sglang-qwen putting",
            "sglang-qwen-b taking",
            "sglang-qwen-b putting",
            "sglang-qwen-c taking",
            "sglang-qwen-c putting",
        ]);
        assert.match(up.output, /\[sglang-qwen-c\.service\] drained: no request in flight/);
        assert.deepEqual(load.counts.failed, [], `of ${load.counts.sent} requests through the gateway`);
        assert.ok(load.counts.sent > 20, `the clients kept sending (${load.counts.sent} requests)`);
        assert.equal(watch.fewest(), 2, "never more than one server out of the gateway");
        const after = await mainPids();
        after.forEach((pid, i) => assert.notEqual(pid, pids[i], `server ${i} restarted`));
        assert.deepEqual(
            launches().map((n, i) => n - starts[i]!),
            [1, 1, 1],
            "each server started once",
        );
        expectExit(await d.run(["preview", "--refresh", "--expect-no-changes", "--diff"]), 0, "the servers and the gateway as declared");
    });

    it("stops the wave at a change whose server dies at start: the first is rolled back and back in the gateway, the other two untouched, no request fails, up names the server", async () => {
        const pids = await mainPids();
        setFaults({ crashAfterSeconds: 1, whenArgs: ["--max-running-requests", "24"] }, lab.labDir);
        d.writeConfig(scenario.config(everyServer({ maxRunningRequests: 24 })));
        const load = loadThroughGateway(gatewayUrl, scenario.chat, API_KEY, { pauseMs: LOAD_PAUSE_MS });
        let up;
        try {
            up = await d.up();
        } finally {
            await load.stop();
            clearFaults(lab.labDir);
        }
        assert.notEqual(up.code, 0, up.output);
        assert.match(up.output, /rollout of sglang-qwen\.service failed: /);
        assert.match(up.output, /previous unit was put back and is ready again/);
        assert.match(up.output, /\[sglang-qwen\.service\] putting the server back into the gateway/);
        assert.doesNotMatch(up.output, /\[sglang-qwen-[bc]\.service\] (taking|rollout)/, "the wave stopped before qwen-b");
        assert.deepEqual(load.counts.failed, [], `of ${load.counts.sent} requests through the gateway`);
        const after = await mainPids();
        assert.notEqual(after[0], pids[0], "qwen serves again from its previous unit");
        assert.deepEqual(after.slice(1), pids.slice(1), "qwen-b and qwen-c untouched");
        assert.deepEqual((await workers()).map((w) => [w.url, w.status]).sort(), allReady());
    });
});
