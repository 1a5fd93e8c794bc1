import assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config";
import { formatConfigIssues } from "../../core/config-issues";
import type { GatewayConfig } from "../../core/config-schema";
import {
    describeWorkerDrift,
    gatewayAdminUrl,
    GATEWAY_ADMIN_SCRIPT,
    parseAdminAnswer,
    parseWorkers,
    renderGatewayEnvironmentFile,
    renderGatewayUnit,
    workerDrift,
    workerUrl,
} from "../../core/gateway";
import { parseExecStart, parseUnit, unitValues } from "../../core/systemd-unit";
import { gatewayVenvPlan } from "../../core/venv-layout";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { fieldConfig, SystemdRoot } from "./fixtures";

/** The field config as two one-GPU servers (H200-sized GPUs) with a gateway, `edit` applied to the gateway section. */
function withGateway(edit: (gateway: Record<string, unknown>) => void = () => {}): Record<string, unknown> {
    const raw = fieldConfig();
    raw.host.gpus = { count: 2, name: "NVIDIA H200", memoryMiB: 143771 };
    const one = (name: string, port: number, gpus: number[]) => ({ ...structuredClone(raw.service), name, port, tensorParallelSize: 1, gpus });
    const gateway: Record<string, unknown> = { smgVersion: "1.13.0", venv: { root: "/opt/smg" }, listenHost: "0.0.0.0", endpointHost: "10.1.230.172" };
    edit(gateway);
    const { service: _service, ...sections } = raw;
    return { ...sections, servers: [one("qwen", 30000, [0]), one("qwen-b", 30001, [1])], gateway };
}

function gatewayOf(raw: unknown): GatewayConfig {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    return result.config.gateway!;
}

function issueAt(raw: unknown, path: string): string {
    const result = validateStackConfig(raw);
    assert.ok(!result.ok, "expected the config to be rejected");
    const found = result.issues.find((i) => i.path === path);
    assert.ok(found, `no issue at ${path}; got: ${result.issues.map((i) => `${i.path}: ${i.message}`).join("\n")}`);
    return found.message;
}

describe("stack config: the gateway (sglang-serve:gateway)", () => {
    it("fills in its defaults: name gateway, the one box, every server behind it, port 30080, metrics on 29000", () => {
        const g = gatewayOf(withGateway());
        assert.equal(g.name, "gateway");
        assert.equal(g.box, "kpro5");
        assert.deepEqual(g.workers, ["qwen", "qwen-b"]);
        assert.equal(g.port, 30080);
        assert.equal(g.prometheusPort, 29000);
        assert.equal(g.policy, "cache_aware");
    });

    it("refuses a name or a port a server has, workers that name no server, and servers behind it that disagree on the API key", () => {
        assert.match(
            issueAt(
                withGateway((g) => (g.name = "qwen")),
                "gateway.name",
            ),
            /gateway\.name is "qwen", which servers\[0\] has too/,
        );
        assert.match(
            issueAt(
                withGateway((g) => (g.port = 30001)),
                "gateway.port",
            ),
            /gateway\.port is 30001, which servers\[1\] listens on, on the same box/,
        );
        assert.match(
            issueAt(
                withGateway((g) => (g.workers = ["qwen", "qwen-c"])),
                "gateway.workers[1]",
            ),
            /"qwen-c", which is no server of the stack: use one of qwen, qwen-b/,
        );
        const mixed = withGateway();
        const servers = mixed.servers as Array<Record<string, unknown>>;
        Object.assign(servers[1]!, { requireApiKey: false, allowUnauthenticated: true });
        assert.match(issueAt(mixed, "servers[1].requireApiKey"), /the gateway passes each client's key on to the server it picks/);
    });

    it("refuses a gateway that listens on loopback but is reached elsewhere", () => {
        assert.match(
            issueAt(
                withGateway((g) => delete g.listenHost),
                "gateway.listenHost",
            ),
            /unreachable at endpointHost 10\.1\.230\.172: set listenHost: 0\.0\.0\.0/,
        );
    });
});

describe("the gateway's unit and key file (core/gateway.ts)", () => {
    const g = () => gatewayOf(withGateway());

    it("runs smg launch from its venv with the declared settings, the keys as ${...} from the 0600 file, and systemd-analyze verify takes it", () => {
        const text = renderGatewayUnit(g(), { hasApiKey: true, owner: { project: "sglang-serve", stack: "kpro5" } });
        const unit = parseUnit(text);
        assert.deepEqual(unitValues(unit, "Service", "EnvironmentFile"), ["/etc/sglang/gateway.env"]);
        const argv = parseExecStart(unitValues(unit, "Service", "ExecStart")[0]!);
        assert.deepEqual(argv.slice(0, 2), ["/opt/smg/venv-1.13.0/bin/smg", "launch"]);
        const flag = (name: string) => argv[argv.indexOf(name) + 1];
        assert.equal(flag("--host"), "0.0.0.0");
        assert.equal(flag("--port"), "30080");
        assert.equal(flag("--prometheus-host"), "127.0.0.1");
        assert.equal(flag("--control-plane-api-keys"), "sglang-serve:sglang-serve:admin:${SMG_ADMIN_KEY}");
        assert.equal(flag("--api-key"), "${SMG_API_KEY}");
        assert.ok(!renderGatewayUnit(g(), { hasApiKey: false }).includes("--api-key"), "no data-plane key when the servers take none");
        const root = new SystemdRoot();
        try {
            assert.deepEqual(root.verify("sglang-gateway.service", text, ["/opt/smg/venv-1.13.0/bin/smg"]), { status: 0, output: "" });
        } finally {
            root.dispose();
        }
        assert.equal(
            renderGatewayEnvironmentFile({ adminKey: "admin-key-0123456789", apiKey: "api-key-0123456789" }).split("\n").slice(1).join("\n"),
            "SMG_ADMIN_KEY=admin-key-0123456789\nSMG_API_KEY=api-key-0123456789\n",
        );
    });

    it("installs smg==<version> in <root>/venv-<version>, and is reached on loopback from its box; workers at their endpoints", () => {
        const plan = gatewayVenvPlan(g());
        assert.equal(plan.product, "smg");
        assert.equal(plan.dir, "/opt/smg/venv-1.13.0");
        assert.deepEqual(plan.requirements, ["smg==1.13.0"]);
        assert.equal(gatewayAdminUrl(g()), "http://127.0.0.1:30080");
        assert.equal(gatewayAdminUrl({ listenHost: "10.1.230.172", port: 8000 }), "http://10.1.230.172:8000");
        assert.equal(workerUrl({ endpointHost: "10.1.230.172", port: 30001 }), "http://10.1.230.172:30001");
    });
});

describe("the gateway's workers (core/gateway.ts)", () => {
    const listed = parseWorkers(
        JSON.stringify({
            workers: [
                { id: "01a", url: "http://10.1.230.172:30000", status: "ready", load: 2 },
                { id: "01b", url: "http://10.1.230.172:30001", status: "not_ready", load: 0 },
                { id: "01c", url: "http://10.1.230.172:39999", status: "ready", load: 0 },
            ],
            total: 3,
        }),
    );

    it("reads GET /workers, and says what is missing, extra or not ready against the declared URLs", () => {
        assert.deepEqual(listed[0], { id: "01a", url: "http://10.1.230.172:30000", status: "ready", load: 2 });
        const drift = workerDrift(["http://10.1.230.172:30000", "http://10.1.230.172:30001", "http://10.1.230.172:30002"], listed);
        assert.deepEqual(describeWorkerDrift(drift), [
            "worker http://10.1.230.172:30002 is not registered",
            "worker http://10.1.230.172:39999 is registered (ready) but not declared",
            "worker http://10.1.230.172:30001 is not_ready, not ready",
        ]);
        assert.deepEqual(describeWorkerDrift(workerDrift(["http://10.1.230.172:30000"], [listed[0]!])), []);
        assert.throws(() => parseWorkers('{"error":"x"}'), /GET \/workers gave no worker list/);
    });

    it("asks the admin API with the key read from the gateway's file on the box, adding the servers' key to a worker it registers", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-admin-"));
        const env = path.join(dir, "gateway.env");
        fs.writeFileSync(env, renderGatewayEnvironmentFile({ adminKey: "admin-key-0123456789", apiKey: "api-key-0123456789" }), { mode: 0o600 });
        const seen: Array<{ method?: string; url?: string; auth?: string; body: string }> = [];
        const server = http.createServer((req, res) => {
            let body = "";
            req.on("data", (c) => (body += c));
            req.on("end", () => {
                seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body });
                res.writeHead(req.method === "POST" ? 202 : 200, { "content-type": "application/json" });
                res.end('{"ok":true}');
            });
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        try {
            const port = (server.address() as { port: number }).port;
            const ask = (...args: string[]) =>
                new Promise<string>((resolve) => {
                    // Run the script as the box runs it: python3 -I -c SCRIPT <file> <method> <url> [body].
                    const child = spawn("python3", ["-I", "-c", GATEWAY_ADMIN_SCRIPT, env, ...args]);
                    let out = "";
                    child.stdout.on("data", (c: Buffer) => (out += c));
                    child.on("close", () => resolve(out));
                });
            const added = parseAdminAnswer(await ask("POST", `http://127.0.0.1:${port}/workers`, JSON.stringify({ url: "http://10.1.230.172:30000" })));
            assert.deepEqual(added, { status: 202, body: '{"ok":true}' });
            assert.deepEqual(
                { ...seen[0], body: JSON.parse(seen[0]!.body) as unknown },
                {
                    method: "POST",
                    url: "/workers",
                    auth: "Bearer admin-key-0123456789",
                    body: { url: "http://10.1.230.172:30000", api_key: "api-key-0123456789" },
                },
            );
            const none = parseAdminAnswer(await ask("GET", "http://127.0.0.1:1/workers"));
            assert.equal(none.status, 0, "nothing answers: status 0 with the error");
        } finally {
            server.close();
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
