import assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import type { GatewayConfig } from "../../core/config/schema";
import {
    describeWorkerDrift,
    gatewayAdminUrl,
    gatewayAdminArgv,
    gatewayArgv,
    gatewayLauncher,
    parseAdminAnswer,
    parseWorkers,
    renderGatewayEnvironmentFile,
    renderGatewayUnit,
    workerDrift,
    workerUrl,
} from "../../core/gateway/gateway";
import { parseExecStart, parseUnit, unitValues } from "../../core/unit/systemd-unit";
import { gatewayVenvPlan } from "../../core/venv/venv-layout";
import { GatewayAdmin } from "../../remote/gateway-admin";
import type { RemoteRunner } from "../../remote/remote-host";
import { spawn, spawnSync } from "node:child_process";
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

describe("the gateway's unit and key file (core/gateway/gateway.ts)", () => {
    const g = () => gatewayOf(withGateway());

    it("runs smg launch in its venv's python with the declared settings, no key flag on its command line, and systemd-analyze verify takes it", () => {
        const text = renderGatewayUnit(g(), { hasApiKey: true, owner: { project: "sglang-serve", stack: "kpro5" } });
        const unit = parseUnit(text);
        assert.deepEqual(unitValues(unit, "Service", "EnvironmentFile"), ["/etc/sglang/gateway.env"]);
        const argv = parseExecStart(unitValues(unit, "Service", "ExecStart")[0]!);
        assert.deepEqual(argv.slice(0, 5), ["/opt/smg/venv-1.13.0/bin/python3", "-I", "-c", gatewayLauncher({ hasApiKey: true }), "launch"]);
        const flag = (name: string) => argv[argv.indexOf(name) + 1];
        assert.equal(flag("--host"), "0.0.0.0");
        assert.equal(flag("--port"), "30080");
        assert.equal(flag("--prometheus-host"), "127.0.0.1");
        // Issue 34 #5: a key flag on ExecStart, even as ${VAR}, is the key on smg's command line (/proc/<pid>/cmdline, ps).
        for (const hasApiKey of [true, false]) {
            const words = parseExecStart(unitValues(parseUnit(renderGatewayUnit(g(), { hasApiKey })), "Service", "ExecStart")[0]!);
            assert.deepEqual(
                words.filter((w) => w === "--api-key" || w === "--control-plane-api-keys" || w.includes("${")),
                [],
                `hasApiKey ${hasApiKey}: ${words.join(" ")}`,
            );
        }
        const root = new SystemdRoot();
        try {
            assert.deepEqual(root.verify("sglang-gateway.service", text, ["/opt/smg/venv-1.13.0/bin/python3"]), { status: 0, output: "" });
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

    it("gives smg's CLI the keys from the EnvironmentFile inside its own process: on no command line, and gone from its environment; a missing key stops it", function () {
        this.timeout(20_000);
        // A venv whose smg.cli.main records what it was given, as smg's entry point (smg = smg.cli:main) would get it.
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-launcher-"));
        try {
            const venv = path.join(dir, "venv");
            const made = spawnSync("python3", ["-m", "venv", "--without-pip", venv], { encoding: "utf8" });
            assert.equal(made.status, 0, made.stderr);
            const site = spawnSync(path.join(venv, "bin", "python3"), ["-c", "import site; print(site.getsitepackages()[0])"], {
                encoding: "utf8",
            }).stdout.trim();
            fs.mkdirSync(path.join(site, "smg"));
            fs.writeFileSync(path.join(site, "smg", "__init__.py"), "");
            fs.writeFileSync(
                path.join(site, "smg", "cli.py"),
                [
                    "import json, os",
                    "def main(argv=None):",
                    "    with open('/proc/self/cmdline', 'rb') as f:",
                    "        cmdline = f.read().decode()",
                    "    with open(os.environ['FAKE_OUT'], 'w') as f:",
                    "        json.dump({'argv': argv, 'cmdline': cmdline, 'env': sorted(k for k in os.environ if k.startswith('SMG_'))}, f)",
                    "",
                ].join("\n"),
            );
            const out = path.join(dir, "out.json");
            const start = (hasApiKey: boolean, keys: Record<string, string>) => {
                fs.rmSync(out, { force: true });
                const [, ...args] = parseExecStart(unitValues(parseUnit(renderGatewayUnit(g(), { hasApiKey })), "Service", "ExecStart")[0]!);
                // What systemd does: the unit's words, the EnvironmentFile's variables in the environment.
                return spawnSync(path.join(venv, "bin", "python3"), args, { encoding: "utf8", env: { PATH: process.env.PATH, FAKE_OUT: out, ...keys } });
            };
            const keys = { SMG_ADMIN_KEY: "admin-key-0123456789", SMG_API_KEY: "api-key-0123456789" };
            const declared = gatewayArgv(g(), { hasApiKey: true }).slice(4);
            for (const hasApiKey of [true, false]) {
                const r = start(hasApiKey, keys);
                assert.equal(r.status, 0, r.stderr);
                const seen = JSON.parse(fs.readFileSync(out, "utf8")) as { argv: string[]; cmdline: string; env: string[] };
                assert.deepEqual(seen.argv, [
                    ...declared,
                    "--control-plane-api-keys",
                    "sglang-serve:sglang-serve:admin:admin-key-0123456789",
                    ...(hasApiKey ? ["--api-key", "api-key-0123456789"] : []),
                ]);
                assert.doesNotMatch(seen.cmdline, /admin-key-0123456789|api-key-0123456789/);
                assert.ok(seen.cmdline.includes("--log-json"), seen.cmdline);
                assert.deepEqual(seen.env, hasApiKey ? [] : ["SMG_API_KEY"]);
            }
            // Fail closed: a gateway that should require the servers' key never starts without it.
            const missing = start(true, { SMG_ADMIN_KEY: keys.SMG_ADMIN_KEY });
            assert.notEqual(missing.status, 0);
            assert.match(missing.stderr, /KeyError: 'SMG_API_KEY'/);
            assert.ok(!fs.existsSync(out), "smg started without the servers' key");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("the gateway's workers (core/gateway/gateway.ts)", () => {
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
});

/** A server that logs each request (method, path, Authorization, body) and answers `status` with `location` (argv: log file, status, location). */
const SQUATTER = String.raw`import http.server, sys
log, status, location = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        with open(log, "a") as f:
            f.write("%s %s %s %s\n" % (self.command, self.path, self.headers.get("Authorization"), body))
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = do_DELETE = answer
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(log, "w").close()
print(s.server_address[1], flush=True)
s.serve_forever()
`;

describe("the gateway's admin script on its box (core/gateway/gateway.ts GATEWAY_ADMIN_SCRIPT)", function () {
    this.timeout(20_000);
    const ADMIN_KEY = "admin-key-0123456789";
    const API_KEY = "api-key-0123456789";
    let dir: string;
    let env: string;
    /** What the fake systemctl says sglang-gateway.service's MainPID is. */
    let mainPid: number;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-admin-"));
        env = path.join(dir, "gateway.env");
        fs.writeFileSync(env, renderGatewayEnvironmentFile({ adminKey: ADMIN_KEY, apiKey: API_KEY }), { mode: 0o600 });
        fs.mkdirSync(path.join(dir, "bin"));
        fs.writeFileSync(path.join(dir, "bin", "systemctl"), '#!/bin/sh\necho "MainPID=$FAKE_MAIN_PID"\n', { mode: 0o755 });
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    beforeEach(() => (mainPid = process.pid));

    /** The box's side of `gatewayAdminArgv` run here, `env` file swapped in (as the box runs it: python3 -I -c SCRIPT <unit> <file> ...), with `proxy` set in the environment. */
    const box = (proxy?: string): RemoteRunner => ({
        describe: () => "this machine",
        run: (argv: string[]) =>
            new Promise((resolve) => {
                const args = argv.slice(1).map((a) => (a === "/etc/sglang/gateway.env" ? env : a));
                const child = spawn(argv[0]!, args, {
                    env: {
                        PATH: `${path.join(dir, "bin")}:${process.env.PATH}`,
                        FAKE_MAIN_PID: String(mainPid),
                        ...(proxy ? { http_proxy: proxy, HTTP_PROXY: proxy } : {}),
                    },
                });
                let stdout = "";
                let stderr = "";
                child.stdout.on("data", (c: Buffer) => (stdout += c));
                child.stderr.on("data", (c: Buffer) => (stderr += c));
                child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr, signal: null } as never));
            }),
    });
    const ask = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown, proxy?: string) => {
        const r = await box(proxy).run(gatewayAdminArgv("gateway", method, url, body));
        assert.equal(r.code, 0, r.stderr);
        return parseAdminAnswer(r.stdout);
    };
    /** A python server (SQUATTER) of its own, not this process's child in the unit's eyes unless mainPid says so. */
    async function squatter(status: number, location: string): Promise<{ pid: number; port: number; log: string; stop: () => void }> {
        const log = path.join(dir, `squatter-${status}.log`);
        const child = spawn("python3", ["-c", SQUATTER, log, String(status), location], { stdio: ["ignore", "pipe", "inherit"] });
        const port = await new Promise<number>((resolve, reject) => {
            child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
            child.once("error", reject);
        });
        return { pid: child.pid!, port, log, stop: () => child.kill() };
    }
    /** A listener that records whatever reaches it: the redirect's target, and the proxy. */
    async function recorder(): Promise<{ port: number; seen: string[]; close: () => void }> {
        const seen: string[] = [];
        const server = http.createServer((req, res) => {
            seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
            res.writeHead(200, { "content-type": "application/json" });
            res.end('{"workers":[]}');
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        return { port: (server.address() as { port: number }).port, seen, close: () => server.close() };
    }

    it("asks the admin API with the key read from the gateway's file on the box, adding the servers' key to a worker it registers", async () => {
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
            // This process holds the port, and is the unit's MainPID.
            const port = (server.address() as { port: number }).port;
            const added = await ask("POST", `http://127.0.0.1:${port}/workers`, { url: "http://10.1.230.172:30000" });
            assert.deepEqual(added, { status: 202, body: '{"ok":true}' });
            assert.deepEqual(
                { ...seen[0], body: JSON.parse(seen[0]!.body) as unknown },
                {
                    method: "POST",
                    url: "/workers",
                    auth: `Bearer ${ADMIN_KEY}`,
                    body: { url: "http://10.1.230.172:30000", api_key: API_KEY },
                },
            );
            assert.deepEqual(await ask("GET", "http://127.0.0.1:1/workers"), {
                status: 0,
                body: "GET http://127.0.0.1:1/workers: nothing listens on port 1; nothing was sent",
            });
        } finally {
            server.close();
        }
    });

    it("gives no key to a process that holds the gateway's port and answers 307 elsewhere: the admin call fails naming that process", async () => {
        const target = await recorder();
        const thief = await squatter(307, `http://127.0.0.1:${target.port}/stolen`);
        const other = spawn("sleep", ["60"], { stdio: "ignore" });
        try {
            for (const main of [0, other.pid!]) {
                mainPid = main;
                const admin = new GatewayAdmin(box(), "gateway", `http://127.0.0.1:${thief.port}`);
                const says = `port ${thief.port} is held by pid ${thief.pid} (python3), not by sglang-gateway.service (MainPID ${main}); the admin key was not sent`;
                await assert.rejects(
                    admin.workers(),
                    (e: Error) => e.message.includes(says) && e.message.startsWith("the gateway's admin API was not asked: GET"),
                );
                await assert.rejects(admin.add("http://10.1.230.172:30000"), (e: Error) => e.message.includes(says));
                // Not a liveness to wait for: the deploy stops at once.
                if (main === 0) await assert.rejects(admin.live(), (e: Error) => e.message.includes(says));
                assert.deepEqual(await ask("DELETE", `http://127.0.0.1:${thief.port}/workers/01a`), {
                    status: 0,
                    body: `DELETE http://127.0.0.1:${thief.port}/workers/01a: ${says}`,
                    refused: true,
                });
            }
            assert.equal(fs.readFileSync(thief.log, "utf8"), "", "the process that holds the port got a request");
            assert.deepEqual(target.seen, [], "the redirect's target got a request");
        } finally {
            thief.stop();
            other.kill();
            target.close();
        }
    });

    it("follows no redirect from the gateway's own port and uses no proxy from the environment", async () => {
        const target = await recorder();
        const proxy = await recorder();
        const gateway = await squatter(307, `http://127.0.0.1:${target.port}/stolen`);
        try {
            mainPid = gateway.pid;
            const url = `http://127.0.0.1:${gateway.port}`;
            assert.equal((await ask("GET", `${url}/workers`, undefined, `http://127.0.0.1:${proxy.port}`)).status, 307);
            assert.equal((await ask("POST", `${url}/workers`, { url: "http://10.1.230.172:30000" }, `http://127.0.0.1:${proxy.port}`)).status, 307);
            assert.deepEqual(target.seen, [], "the redirect was followed");
            assert.deepEqual(proxy.seen, [], "the proxy was used");
            assert.deepEqual(fs.readFileSync(gateway.log, "utf8").split("\n").filter(Boolean), [
                `GET /workers Bearer ${ADMIN_KEY} `,
                `POST /workers Bearer ${ADMIN_KEY} {"url": "http://10.1.230.172:30000", "api_key": "${API_KEY}"}`,
            ]);
        } finally {
            gateway.stop();
            target.close();
            proxy.close();
        }
    });
});
