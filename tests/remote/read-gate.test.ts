import assert from "node:assert/strict";
import { spawn } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import fc from "fast-check";
import { BOX_FACTS_SCRIPT, boxFactsCommand } from "../../core/box-facts";
import { checkSpeculativeActive } from "../../core/chat-check";
import { remoteCommand, shCommand } from "../../core/shell";
import { parseServerInfoReadOutput, SERVER_INFO_SCRIPT, serverInfoReadArgv } from "../../core/server-info-read";
import { normalizeServerInfo } from "../../core/sglang-args";
import { renderEnvironmentFile, renderUnit } from "../../core/systemd-unit";
import { renderUnitReadScript } from "../../core/unit-read";
import { containerReadScript } from "../../providers/lxc-container";
import { readServerInfoOnBox } from "../../providers/server-info-on-box";
import { unitPaths } from "../../providers/unit-view";
import type { RemoteRunner } from "../../remote/remote-host";
import { fieldService } from "../core/fixtures";
import { checkBatch, GATE, readerCommands } from "./read-gate-fixture";

const PCT = ["--vmid", "129"];
const DIRECT = ["--direct"];

function allowed(commands: (string | null)[], gateArgs: string[]): void {
    checkBatch(commands, gateArgs).forEach((v, i) => assert.ok(v.allowed, `refused ${JSON.stringify(commands[i])}: ${JSON.stringify(v)}`));
}

function refused(commands: (string | null)[], gateArgs: string[]): string[] {
    return checkBatch(commands, gateArgs).map((v, i) => {
        assert.ok(!v.allowed, `allowed ${JSON.stringify(commands[i])?.slice(0, 300)}: ${JSON.stringify(v)}`);
        return v.reason;
    });
}

const serviceName = fc.stringMatching(/^[a-z][a-z0-9-]{0,39}$/);
const marker = fc.stringMatching(/^[0-9a-f]{16}$/).map((h) => `sglang-serve-${h}`);

describe("read-only gate: what the stack's readers send is allowed", () => {
    it("allows every read of a pct-exec refresh (host facts, pct config/status, the unit read and /server_info in the container)", () => {
        const c = readerCommands({ kind: "pct-exec", vmid: 129 }, ["sglang-qwen.service"]);
        const verdicts = checkBatch([c.gpuFacts, c.containerRead!, c.unitRead, ...c.serverInfo], PCT);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? v.shape : v.reason)),
            ["gpu-facts", "container-read", "unit-read", "server-info"],
        );
    });

    it("allows every read of a direct refresh (facts, the unit read and /server_info on the box itself)", () => {
        const c = readerCommands({ kind: "direct" }, ["sglang-qwen.service"]);
        const verdicts = checkBatch([c.gpuFacts, c.unitRead, ...c.serverInfo], DIRECT);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? v.shape : v.reason)),
            ["gpu-facts", "unit-read", "server-info"],
        );
    });

    it("allows the readers' commands for any valid service names, batch sizes, markers and vmids (property)", () => {
        fc.assert(
            fc.property(
                fc.uniqueArray(serviceName, { minLength: 1, maxLength: 6 }),
                marker,
                fc.integer({ min: 100, max: 999_999_999 }),
                fc.integer({ min: 1, max: 3600 }),
                (names, m, vmid, timeout) => {
                    const units = names.map((n) => `sglang-${n}.service`);
                    const pct = readerCommands({ kind: "pct-exec", vmid }, units, m, timeout);
                    const direct = readerCommands({ kind: "direct" }, units, m, timeout);
                    const verdicts = [
                        ...checkBatch([pct.gpuFacts, pct.containerRead!, pct.unitRead, ...pct.serverInfo], ["--vmid", String(vmid)]),
                        ...checkBatch([direct.gpuFacts, direct.unitRead, ...direct.serverInfo], DIRECT),
                    ];
                    return verdicts.every((v) => v.allowed);
                },
            ),
            { numRuns: 40 },
        );
    });

    it("allows only the vmids its authorized_keys line names", () => {
        const c = readerCommands({ kind: "pct-exec", vmid: 130 }, ["sglang-qwen.service"]);
        allowed([c.containerRead!, c.unitRead, ...c.serverInfo], ["--vmid", "129", "--vmid", "130"]);
        const reasons = refused([c.containerRead!, c.unitRead, ...c.serverInfo], PCT);
        for (const r of reasons) assert.match(r, /container 130: this key may read container 129 only/);
    });

    it("refuses the other topology's commands: pct exec on a --direct key, a unit read on the Proxmox host itself", () => {
        const pct = readerCommands({ kind: "pct-exec", vmid: 129 }, ["sglang-qwen.service"]);
        const direct = readerCommands({ kind: "direct" }, ["sglang-qwen.service"]);
        const onDirect = refused([pct.containerRead!, pct.unitRead, ...pct.serverInfo], DIRECT);
        assert.match(onDirect[1]!, /direct topology/);
        const onHost = refused([direct.unitRead, ...direct.serverInfo], PCT);
        assert.match(onHost[0]!, /inside the container \(pct exec <vmid> --\)/);
    });
});

describe("read-only gate: everything else is refused", () => {
    const pct = readerCommands({ kind: "pct-exec", vmid: 129 }, ["sglang-qwen.service"]);
    const readers = [pct.gpuFacts, pct.containerRead!, pct.unitRead, pct.serverInfo[0]!];

    it("refuses commands that change the box: systemctl stop, rm, pct set, a shell", () => {
        refused(
            [
                "systemctl stop sglang-qwen.service",
                "pct exec 129 -- systemctl stop sglang-qwen.service",
                shCommand(["pct", "exec", "129", "--", "systemctl", "stop", "sglang-qwen.service"]),
                "pct exec 129 -- rm -f /etc/systemd/system/sglang-qwen.service",
                "rm -rf /etc/sglang",
                "pct set 129 --cores 1",
                "pct stop 129",
                "pct enter 129",
                "pct exec 129 -- bash",
                "pct exec 129 -- sh -c id",
                "sh -c id",
                "sh",
                "bash -i",
                "",
                null,
                "internal-sftp",
                "/usr/lib/openssh/sftp-server",
                "scp -t /root",
                "pct config 129 --current",
                "pct config 129",
                "nvidia-smi",
            ],
            PCT,
        );
    });

    it("refuses each reader's command with something appended: '; id', '&& id', '| id', a newline, a second word", () => {
        const mutations = readers.flatMap((c) => [`${c}; id`, `${c} && id`, `${c} | sh`, `${c}\nid`, `${c} x`, `${c} #`]);
        refused(mutations, PCT);
    });

    it("refuses command substitution and other shell syntax put into the variable parts", () => {
        const unitRead = (name: string, m = "sglang-serve-0123456789abcdef") =>
            remoteCommand("pct-exec", 129, [
                "sh",
                "-c",
                renderUnitReadScript([{ unitName: name, unitPath: unitPaths(name).unit, environmentFilePath: unitPaths(name).environmentFile }], m),
            ]);
        refused(
            [
                unitRead("sglang-$(id).service"),
                unitRead("sglang-`id`.service"),
                unitRead("sglang-a;id.service"),
                unitRead("sglang-qwen.service", "sglang-serve-$(id)"),
                unitRead("sglang-qwen.service", "$(reboot)"),
                pct.unitRead.replace("sglang-qwen.service", "sglang-qwen$(id).service"),
                pct.unitRead.replace("sglang-serve-0123456789abcdef", "$(id)"),
                pct.gpuFacts.replace("cat /proc/devices", "cat /proc/devices; $(id)"),
                pct.containerRead!.replace("pct status 129", "pct status 129 $(id)"),
                `pct exec 129 -- $(id)`,
                "pct exec `id` -- true",
                pct.serverInfo[0]!.replace(" 30", " 30$(id)"),
            ],
            PCT,
        );
    });

    it("refuses paths outside /etc/systemd/system/sglang-<name>.service and /etc/sglang/<name>.env", () => {
        const read = (unitPath: string, environmentFilePath: string, unitName = "sglang-qwen.service") =>
            remoteCommand("pct-exec", 129, ["sh", "-c", renderUnitReadScript([{ unitName, unitPath, environmentFilePath }], "sglang-serve-0123456789abcdef")]);
        const info = (unitPath: string, environmentFilePath: string) =>
            remoteCommand("pct-exec", 129, serverInfoReadArgv({ unitPath, environmentFilePath, timeoutSeconds: 30 }));
        const reasons = refused(
            [
                read("/etc/shadow", "/etc/sglang/qwen.env"),
                read("/etc/systemd/system/sglang-qwen.service", "/etc/shadow"),
                read("/etc/systemd/system/sglang-qwen.service", "/etc/sglang/other.env"),
                read("/etc/systemd/system/../../shadow", "/etc/sglang/qwen.env"),
                read("/etc/systemd/system/ssh.service", "/etc/sglang/qwen.env", "ssh.service"),
                read("/root/.ssh/authorized_keys", "/etc/sglang/qwen.env", "sglang-qwen.service"),
                info("/etc/shadow", "/etc/sglang/qwen.env"),
                info("/etc/systemd/system/sglang-qwen.service", "/etc/shadow"),
                info("/etc/systemd/system/sglang-qwen.service", "/etc/sglang/../shadow"),
                info("/etc/systemd/system/sglang-../../shadow.service", "/etc/sglang/../../shadow.env"),
                info("/etc/systemd/system/sglang-qwen.service", "/etc/sglang/other.env"),
            ],
            PCT,
        );
        assert.match(reasons[6]!, /not a unit under \/etc\/systemd\/system\/sglang-<name>\.service/);
    });

    it("refuses a changed server-info program, other python programs and other timeouts", () => {
        const paths = unitPaths("sglang-qwen.service");
        const argv = serverInfoReadArgv({ unitPath: paths.unit, environmentFilePath: paths.environmentFile, timeoutSeconds: 30 });
        const withScript = (script: string) => remoteCommand("pct-exec", 129, ["python3", "-I", "-c", script, paths.unit, paths.environmentFile, "30"]);
        const reasons = refused(
            [
                withScript(`${SERVER_INFO_SCRIPT}print(key)\n`),
                withScript(SERVER_INFO_SCRIPT.replace('"version"', '"version","api_key"')),
                withScript("import os; os.system('systemctl stop sglang-qwen.service')"),
                remoteCommand("pct-exec", 129, [...argv.slice(0, 4), paths.unit, paths.environmentFile, "0"]),
                remoteCommand("pct-exec", 129, [...argv.slice(0, 4), paths.unit, paths.environmentFile, "3601"]),
                remoteCommand("pct-exec", 129, [...argv, "extra"]),
                remoteCommand("pct-exec", 129, ["python3", "-c", SERVER_INFO_SCRIPT, paths.unit, paths.environmentFile, "30"]),
            ],
            PCT,
        );
        assert.match(reasons[0]!, /not one of this gate's python reads, server-info or box-facts \(gate version 3; reinstall the gate/);
    });

    it("refuses unit reads the stack does not render: too many units, a changed line, a different marker per line", () => {
        const many = Array.from({ length: 65 }, (_, i) => `sglang-s${i}.service`);
        const big = readerCommands({ kind: "pct-exec", vmid: 129 }, many).unitRead;
        const reasons = refused(
            [
                big,
                pct.unitRead.replace("2>/dev/null && echo;", "&& echo;"),
                pct.unitRead.replace("-p UnitFileState", "-p UnitFileState -p Environment"),
                pct.unitRead.replace("unit 0'", "unit 1'"),
                pct.unitRead.replace("show'", "show'\\''; id; echo '\\''"),
                pct.unitRead.replace(/sglang-serve-0123456789abcdef show/, "sglang-serve-fedcba9876543210 show"),
            ],
            PCT,
        );
        assert.match(reasons[0]!, /65 units \(at most 64\)/);
    });

    it("refuses another quoting of an allowed argv: only the stack's own rendering runs", () => {
        const argv = ["sh", "-c", containerReadScript(129, "sglang-serve-0123456789abcdef")];
        const reasons = refused(
            [`'sh' -c ${shCommand([argv[2]!])}`, `sh  -c ${shCommand([argv[2]!])}`, `sh -c "${argv[2]}"`, `sh -c ${shCommand([argv[2]!])} `],
            PCT,
        );
        for (const r of reasons) assert.match(r, /not a command line sglang-serve sends/);
    });

    it("runs nothing it refuses and says why on stderr with exit 1", async () => {
        const r = await runGate(PCT, "systemctl stop sglang-qwen.service");
        assert.equal(r.code, 1);
        assert.equal(r.stdout, "");
        assert.match(r.stderr, /^sglang-serve-read-gate: refused "systemctl stop sglang-qwen.service": not one of sglang-serve's read commands\./);
        assert.match(r.stderr, /need the deploy key/);
        const login = await runGate(PCT, undefined);
        assert.equal(login.code, 1);
        assert.match(login.stderr, /no command \(an interactive login\)/);
    });

    it("fails with usage (exit 2) when its authorized_keys line gives neither --vmid nor --direct, or both", async () => {
        for (const args of [[], ["--vmid", "129", "--direct"], ["--vmid", "12"], ["--vmid"], ["--bogus"]]) {
            const r = await runGate(args, "true");
            assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
            assert.match(r.stderr, /give --vmid <vmid>|unknown or incomplete option/);
        }
    });
});

function runGate(args: string[], command: string | undefined, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const e: NodeJS.ProcessEnv = { PATH: process.env.PATH, ...env };
    if (command !== undefined) e.SSH_ORIGINAL_COMMAND = command;
    return runProcess(GATE, args, e);
}

function runProcess(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d));
        child.stderr.on("data", (d: Buffer) => (stderr += d));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
}

// ---------------------------------------------------------------------------
// The server-info program itself (run here with python3, with test paths)
// ---------------------------------------------------------------------------

const API_KEY = "read-gate-test-key-0123456789abcdef";

/** /server_info as SGLang answers it: every server arg (api_key too) plus scheduler info. */
function fullServerInfo(port: number): Record<string, unknown> {
    return {
        model_path: "/models/Qwen3.6-27B",
        tokenizer_path: "/models/Qwen3.6-27B",
        served_model_name: "qwen3.6-27b",
        tp_size: 2,
        host: "0.0.0.0",
        port,
        mem_fraction_static: 0.88,
        max_running_requests: 48,
        speculative_algorithm: "EAGLE",
        speculative_draft_model_path: "/models/Qwen3.6-27B",
        speculative_num_steps: 1,
        speculative_eagle_topk: 1,
        speculative_num_draft_tokens: 2,
        mamba_scheduler_strategy: "extra_buffer",
        disable_radix_cache: false,
        api_key: API_KEY,
        admin_api_key: "another-secret-0123456789",
        attention_backend: "flashinfer",
        max_total_num_tokens: 412_000,
        internal_states: [{ avg_spec_accept_length: 1.8, last_gen_throughput: 41.7, memory_usage: { weight: 24.2 } }],
        version: "0.5.11",
    };
}

interface Seen {
    path: string;
    authorization?: string;
}

function listen(server: http.Server, host: string): Promise<number> {
    return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as net.AddressInfo).port)));
}

describe("read-only gate: the server-info program", function () {
    this.timeout(20_000);
    let dir: string;
    let server: http.Server;
    let port: number;
    let seen: Seen[];
    let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void;
    let elsewhere: http.Server;
    let elsewherePort: number;
    let elsewhereSeen: Seen[];

    before(async () => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-server-info-"));
        server = http.createServer((req, res) => {
            seen.push({ path: req.url ?? "", authorization: req.headers.authorization });
            answer(req, res);
        });
        port = await listen(server, "127.0.0.1");
        elsewhere = http.createServer((req, res) => {
            elsewhereSeen.push({ path: req.url ?? "", authorization: req.headers.authorization });
            res.writeHead(200, { "content-type": "application/json" });
            res.end("{}");
        });
        elsewherePort = await listen(elsewhere, "127.0.0.1");
    });
    after(() => {
        server?.close();
        elsewhere?.close();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });
    beforeEach(() => {
        seen = [];
        elsewhereSeen = [];
        answer = (req, res) => {
            if (req.headers.authorization !== `Bearer ${API_KEY}`) {
                res.writeHead(401, { "content-type": "application/json" });
                res.end('{"error":"Unauthorized"}');
                return;
            }
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify(fullServerInfo(port)));
        };
    });

    /** The field's unit (listening on 0.0.0.0 at the test port) and its env file, in the test directory. */
    function writeService(opts: { listenHost?: string; withKey?: boolean; unitText?: string } = {}): { unit: string; env: string } {
        const service = { ...fieldService(), port, listenHost: opts.listenHost ?? "0.0.0.0" };
        const unit = path.join(dir, "sglang-qwen.service");
        const env = path.join(dir, "qwen.env");
        fs.writeFileSync(unit, opts.unitText ?? renderUnit(service, { hasSecrets: opts.withKey ?? true }));
        fs.rmSync(env, { force: true });
        if (opts.withKey ?? true) fs.writeFileSync(env, renderEnvironmentFile({ SGLANG_API_KEY: API_KEY }), { mode: 0o600 });
        return { unit, env };
    }

    async function readInfo(files: { unit: string; env: string }, env: NodeJS.ProcessEnv = {}) {
        const [cmd, ...args] = serverInfoReadArgv({ unitPath: files.unit, environmentFilePath: files.env, timeoutSeconds: 5 });
        const r = await runProcess(cmd!, args, { PATH: process.env.PATH, ...env });
        assert.equal(r.code, 0, r.stderr);
        return { stdout: r.stdout, result: parseServerInfoReadOutput(r.stdout) };
    }

    it("asks the server where its unit listens (0.0.0.0 -> 127.0.0.1), with the key from the env file", async () => {
        const { result } = await readInfo(writeService());
        assert.ok("status" in result && result.status === 200, JSON.stringify(result));
        assert.deepEqual(seen, [{ path: "/server_info", authorization: `Bearer ${API_KEY}` }]);
    });

    it("returns only the fields the stack reads: never the API key, and the same live args and speculation verdict as the full answer", async () => {
        const { stdout, result } = await readInfo(writeService());
        assert.doesNotMatch(stdout, new RegExp(API_KEY));
        assert.doesNotMatch(stdout, /api_key|another-secret|attention_backend|memory_usage/);
        assert.ok("body" in result);
        const full = fullServerInfo(port);
        assert.deepEqual(normalizeServerInfo(result.body), normalizeServerInfo(full));
        assert.deepEqual(checkSpeculativeActive(result.body, "NEXTN"), checkSpeculativeActive(full, "NEXTN"));
    });

    it("keeps the fields of a server_args object nested in the answer, and nothing else of it", async () => {
        answer = (_req, res) => {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify({ server_args: fullServerInfo(port), version: "0.5.11" }));
        };
        const { stdout, result } = await readInfo(writeService());
        assert.doesNotMatch(stdout, new RegExp(API_KEY));
        assert.ok("body" in result);
        assert.deepEqual(normalizeServerInfo(result.body), normalizeServerInfo(fullServerInfo(port)));
    });

    it("asks without a key when the service has no env file, and reports the 401 as the status", async () => {
        const { result } = await readInfo(writeService({ withKey: false }));
        assert.deepEqual(result, { status: 401 });
        assert.deepEqual(seen, [{ path: "/server_info", authorization: undefined }]);
    });

    it("follows no redirect (urllib would resend the key) and uses no proxy from the environment", async () => {
        answer = (_req, res) => {
            res.writeHead(302, { location: `http://127.0.0.1:${elsewherePort}/stolen` });
            res.end();
        };
        const { result } = await readInfo(writeService(), { http_proxy: `http://127.0.0.1:${elsewherePort}`, HTTP_PROXY: `http://127.0.0.1:${elsewherePort}` });
        assert.deepEqual(result, { status: 302 });
        assert.deepEqual(elsewhereSeen, []);
    });

    it("reports a missing unit, a server that is down and an answer that is not JSON as errors", async () => {
        const missing = await readInfo({ unit: path.join(dir, "none.service"), env: path.join(dir, "none.env") });
        assert.match((missing.result as { error: string }).error, /no unit file .*none\.service/);
        answer = (_req, res) => {
            res.writeHead(200, { "content-type": "text/plain" });
            res.end("not json");
        };
        const notJson = await readInfo(writeService());
        assert.match((notJson.result as { error: string }).error, /not a JSON object/);
        const down = await readInfo(
            writeService({ unitText: `[Service]\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --host 127.0.0.1 \\\n    --port 1\n` }),
        );
        assert.match((down.result as { error: string }).error, /GET http:\/\/127\.0\.0\.1:1\/server_info: .*refused/);
    });

    it("is the program the gate allows, byte for byte", () => {
        const gate = fs.readFileSync(GATE, "utf8");
        const start = gate.indexOf("SERVER_INFO_SCRIPT = r'''") + "SERVER_INFO_SCRIPT = r'''".length;
        assert.equal(gate.slice(start, gate.indexOf("'''", start)), SERVER_INFO_SCRIPT);
    });
});

describe("read-only gate: readServerInfoOnBox, the provider's side of the /server_info read", () => {
    /** A box that answers every command with `r`, and records the argv. */
    function box(r: { code: number; stdout?: string; stderr?: string }): RemoteRunner & { argv: string[][] } {
        const argv: string[][] = [];
        return {
            argv,
            describe: () => "root@10.1.2.5:22 (pct exec 129)",
            run: async (a: string[]) => {
                argv.push(a);
                return { code: r.code, stdout: r.stdout ?? "", stderr: r.stderr ?? "", signal: null } as never;
            },
        };
    }

    it("sends the gate's argv for the unit's paths, with the probe timeout in seconds", async () => {
        const b = box({ code: 0, stdout: '{"status": 200, "body": {"tp_size": 2}}\n' });
        assert.deepEqual(await readServerInfoOnBox(b, "sglang-qwen.service", 30_000), { status: 200, body: { tp_size: 2 } });
        assert.deepEqual(b.argv, [
            serverInfoReadArgv({ unitPath: "/etc/systemd/system/sglang-qwen.service", environmentFilePath: "/etc/sglang/qwen.env", timeoutSeconds: 30 }),
        ]);
    });

    it("returns a server that is down or a missing unit as a value (not serving), but fails on a 200 that is not a JSON object", async () => {
        assert.deepEqual(
            await readServerInfoOnBox(
                box({ code: 0, stdout: '{"error": "no unit file /etc/systemd/system/sglang-qwen.service"}' }),
                "sglang-qwen.service",
                5000,
            ),
            {
                error: "no unit file /etc/systemd/system/sglang-qwen.service",
            },
        );
        await assert.rejects(
            readServerInfoOnBox(
                box({ code: 0, stdout: '{"status": 200, "error": "GET http://127.0.0.1:30000/server_info: the answer is not a JSON object"}' }),
                "sglang-qwen.service",
                5000,
            ),
            /^Error: \/server_info of sglang-qwen\.service on root@10\.1\.2\.5:22 \(pct exec 129\): GET .* the answer is not a JSON object$/,
        );
    });

    it("fails naming the box when the command cannot run: python3 missing (with the fix), the gate refusing (its own message)", async () => {
        await assert.rejects(
            readServerInfoOnBox(box({ code: 127, stderr: "sh: 1: python3: not found" }), "sglang-qwen.service", 5000),
            /cannot read \/server_info of sglang-qwen\.service on root@10\.1\.2\.5:22 \(pct exec 129\) \(exit 127\): sh: 1: python3: not found; python3 is missing where the server runs: install it there \(apt-get install python3\)/,
        );
        await assert.rejects(
            readServerInfoOnBox(box({ code: 1, stderr: 'sglang-serve-read-gate: refused "...": reinstall the gate' }), "sglang-qwen.service", 5000),
            (e: Error) => {
                assert.match(e.message, /\(exit 1\): sglang-serve-read-gate: refused "\.\.\.": reinstall the gate$/);
                return true;
            },
        );
    });
});

describe("read-only gate: the box-facts read", () => {
    const command = (topology: "pct-exec" | "direct", python: string, model: string) =>
        remoteCommand(topology, topology === "pct-exec" ? 129 : undefined, boxFactsCommand(python, model));

    it("allows the box-facts read the stack builds, for the field's venv and model, in both topologies", () => {
        allowed([command("pct-exec", "/opt/sglang/venv/bin/python3", "/models/Qwen3.6-27B")], PCT);
        allowed([command("direct", "/opt/sglang/venv-0.5.10/bin/python3.11", "/models/Qwen3.6-27B")], DIRECT);
    });

    it("is the program the gate allows, byte for byte", () => {
        const gate = fs.readFileSync(GATE, "utf8");
        const start = gate.indexOf("BOX_FACTS_SCRIPT = r'''") + "BOX_FACTS_SCRIPT = r'''".length;
        assert.equal(gate.slice(start, gate.indexOf("'''", start)), BOX_FACTS_SCRIPT);
    });

    it("refuses another interpreter, a relative or climbing path, and a changed program", () => {
        const reasons = refused(
            [
                command("pct-exec", "/bin/sh", "/models/Qwen3.6-27B"),
                command("pct-exec", "/opt/sglang/venv/bin/../../../tmp/bin/python3", "/models/Qwen3.6-27B"),
                command("pct-exec", "python3", "/models/Qwen3.6-27B"),
                command("pct-exec", "/opt/sglang/venv/bin/python3", "/models/../etc"),
                command("pct-exec", "/opt/sglang/venv/bin/python3", "models"),
                remoteCommand("pct-exec", 129, ["/opt/sglang/venv/bin/python3", "-I", "-c", `${BOX_FACTS_SCRIPT}import os\n`, "/models/m", "sglang"]),
                remoteCommand("pct-exec", 129, ["/opt/sglang/venv/bin/python3", "-I", "-c", BOX_FACTS_SCRIPT, "/models/m", "torch"]),
            ],
            PCT,
        );
        assert.match(reasons[0]!, /not one of sglang-serve's read commands|not an absolute \.\.\.\/bin\/python3/);
        assert.match(reasons[1]!, /box-facts: .* is not an absolute \.\.\.\/bin\/python3 of a venv/);
        assert.match(reasons[3]!, /box-facts: '\/models\/\.\.\/etc' is not an absolute model folder path/);
        assert.match(reasons[5]!, /not one of this gate's python reads/);
    });
});
