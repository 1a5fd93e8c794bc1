import assert from "node:assert/strict";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import fc from "fast-check";
import { BOX_FACTS_LAUNCHER, BOX_FACTS_SCRIPT, boxFactsCommand } from "../../core/box/box-facts";
import { checkSpeculativeActive } from "../../core/serving/chat-check";
import { sha256 } from "../../core/digest";
import { containerReadScript } from "../../core/box/host-reads";
import { GATE_MAX_UNITS } from "../../core/read-gate/reads";
import { manifestCheckArgv } from "../../core/weights/manifest";
import { remoteCommand, shCommand } from "../../core/shell";
import { parseServerInfoReadOutput, SERVER_INFO_MAX_BODY_BYTES, SERVER_INFO_SCRIPT, serverInfoReadArgv } from "../../core/sglang/server-info-read";
import { normalizeServerInfo } from "../../core/sglang/args";
import { renderEnvironmentFile, renderUnit } from "../../core/unit/systemd-unit";
import { renderUnitReadScript, unitPaths } from "../../core/unit/unit-read";
import { readServerInfoOnBox } from "../../providers/server-info-on-box";
import type { RemoteRunner } from "../../remote/remote-host";
import { fieldService } from "../core/fixtures";
import { checkBatch, FIELD_MODEL, FIELD_PYTHON, GATE, GATE_SOURCE, PINS, readerCommands } from "./read-gate-fixture";
import { venvPython } from "../host-python";

const PCT = ["--vmid", "129", ...PINS];
const DIRECT = ["--direct", ...PINS];

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
        const verdicts = checkBatch([c.gpuFacts, c.containerRead!, c.unitRead, ...c.serverInfo, c.boxFacts], PCT);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? `${v.shape} ${v.detail}`.trim() : v.reason)),
            [
                "gpu-facts",
                "container-read vmid 129",
                "unit-read vmid 129, name qwen",
                "server-info vmid 129, name qwen, timeout 30",
                `box-facts vmid 129, python ${FIELD_PYTHON}, model ${FIELD_MODEL}`,
            ],
        );
    });

    it("allows every read of a direct refresh (facts, the unit read and /server_info on the box itself)", () => {
        const c = readerCommands({ kind: "direct" }, ["sglang-qwen.service"]);
        const verdicts = checkBatch([c.gpuFacts, c.unitRead, ...c.serverInfo, c.boxFacts], DIRECT);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? v.shape : v.reason)),
            ["gpu-facts", "unit-read", "server-info", "box-facts"],
        );
    });

    it("allows the readers' commands for any valid service names, batch sizes, markers and vmids (property)", () => {
        fc.assert(
            fc.property(
                fc.uniqueArray(serviceName, { minLength: 1, maxLength: GATE_MAX_UNITS }),
                marker,
                fc.integer({ min: 100, max: 999_999_999 }),
                fc.integer({ min: 1, max: 3600 }),
                (names, m, vmid, timeout) => {
                    const units = names.map((n) => `sglang-${n}.service`);
                    const pct = readerCommands({ kind: "pct-exec", vmid }, units, m, timeout);
                    const direct = readerCommands({ kind: "direct" }, units, m, timeout);
                    const verdicts = [
                        ...checkBatch([pct.gpuFacts, pct.containerRead!, pct.unitRead, ...pct.serverInfo, pct.boxFacts], ["--vmid", String(vmid), ...PINS]),
                        ...checkBatch([direct.gpuFacts, direct.unitRead, ...direct.serverInfo, direct.boxFacts], DIRECT),
                    ];
                    return verdicts.every((v) => v.allowed);
                },
            ),
            { numRuns: 40 },
        );
    });

    it("allows only the vmids its authorized_keys line names", () => {
        const c = readerCommands({ kind: "pct-exec", vmid: 130 }, ["sglang-qwen.service"]);
        allowed([c.containerRead!, c.unitRead, ...c.serverInfo, c.boxFacts], ["--vmid", "129", "--vmid", "130", ...PINS]);
        const reasons = refused([c.containerRead!, c.unitRead, ...c.serverInfo, c.boxFacts], PCT);
        for (const r of reasons) assert.match(r, /container 130: this key may read container 129 only/);
    });

    it("refuses the other topology's commands: pct exec on a --direct key, a unit read on the Proxmox host itself", () => {
        const pct = readerCommands({ kind: "pct-exec", vmid: 129 }, ["sglang-qwen.service"]);
        const direct = readerCommands({ kind: "direct" }, ["sglang-qwen.service"]);
        const onDirect = refused([pct.containerRead!, pct.unitRead, ...pct.serverInfo], DIRECT);
        assert.match(onDirect[1]!, /direct topology/);
        const onHost = refused([direct.unitRead, ...direct.serverInfo, direct.boxFacts], PCT);
        for (const r of onHost) assert.match(r, /on the Proxmox host itself: the stack reads the server inside the container \(pct exec <vmid> --\)/);
    });
});

describe("read-only gate: everything else is refused", () => {
    const pct = readerCommands({ kind: "pct-exec", vmid: 129 }, ["sglang-qwen.service"]);
    const readers = [pct.gpuFacts, pct.containerRead!, pct.unitRead, pct.serverInfo[0]!, pct.boxFacts];

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
                renderUnitReadScript(
                    [{ unitName: name, unitPath: unitPaths(name).unit, environmentFilePath: unitPaths(name).environmentFile, expectedEnvironmentHash: "" }],
                    m,
                ),
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

    it("gives no answer about a digest the caller chose, for a server's or the gateway's env file: only the read without a digest runs", async () => {
        const guess = sha256("SGLANG_API_KEY=guess\n");
        const read = (units: string[], digest: string) =>
            remoteCommand("direct", undefined, [
                "sh",
                "-c",
                renderUnitReadScript(
                    units.map((u) => ({
                        unitName: u,
                        unitPath: unitPaths(u).unit,
                        environmentFilePath: unitPaths(u).environmentFile,
                        expectedEnvironmentHash: digest,
                    })),
                    "sglang-serve-0123456789abcdef",
                ),
            ]);
        const chosen = [
            read(["sglang-qwen.service"], guess),
            read(["sglang-gateway.service"], guess),
            read(["sglang-qwen.service", "sglang-qwen.service"], guess),
        ];
        for (const reason of refused(chosen, DIRECT)) {
            assert.match(
                reason,
                /^a unit read that carries an expected digest of an env file: this key learns only whether the file is there, never whether it matches a digest it sends/,
            );
        }
        allowed([read(["sglang-qwen.service"], ""), read(["sglang-gateway.service"], "")], DIRECT);
        // Run for real: the gate answers nothing on stdout, only its refusal.
        const r = await runGate(DIRECT, chosen[0]!);
        assert.equal(r.code, 1);
        assert.equal(r.stdout, "");
        assert.match(r.stderr, /refused .*: a unit read that carries an expected digest of an env file/);
    });

    it("refuses paths outside /etc/systemd/system/sglang-<name>.service and /etc/sglang/<name>.env", () => {
        const read = (unitPath: string, environmentFilePath: string, unitName = "sglang-qwen.service") =>
            remoteCommand("pct-exec", 129, [
                "sh",
                "-c",
                renderUnitReadScript([{ unitName, unitPath, environmentFilePath, expectedEnvironmentHash: "" }], "sglang-serve-0123456789abcdef"),
            ]);
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
        for (const r of reasons.slice(6)) assert.match(r, /a python program that is not one of this gate's reads/);
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
        assert.match(reasons[0]!, /a python program that is not one of this gate's reads \(gate version 6; reinstall the gate/);
        assert.match(reasons[4]!, /server-info: the timeout 3601 is not 1 to 3600 seconds/);
    });

    it("refuses unit reads the stack does not render: too many units, a changed line, a different marker per line", () => {
        const many = Array.from({ length: GATE_MAX_UNITS + 1 }, (_, i) => `sglang-s${i}.service`);
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
        assert.match(reasons[0]!, new RegExp(`a unit read that differs from sglang-serve's \\(at most ${GATE_MAX_UNITS} units`));
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
        assert.match(
            r.stderr,
            /^sglang-serve-read-gate: refused "systemctl stop sglang-qwen.service": not one of sglang-serve's read commands \(gate version 6\)\./,
        );
        assert.match(r.stderr, /need the deploy key/);
        const login = await runGate(PCT, undefined);
        assert.equal(login.code, 1);
        assert.match(login.stderr, /no command \(an interactive login\)/);
    });

    it("escapes and bounds what it shows of a refused command: no raw newline or control character, at most a few hundred characters", async () => {
        const forged = "\nsglang-serve-read-gate: allowed\u001b[2K";
        for (const command of [
            shCommand(["pct", "exec", `129${forged}`, "--", "true"]),
            shCommand(["pct", "exec", "130", "--", ...boxFactsCommand(FIELD_PYTHON, `/models/x${"y".repeat(5000)}`)]),
            `${"x".repeat(20_000)}${forged}`,
        ]) {
            const r = await runGate(PCT, command);
            assert.equal(r.code, 1);
            assert.equal(r.stderr.split("\n").length, 2, `one line: ${JSON.stringify(r.stderr.slice(0, 300))}`);
            assert.ok(printableAscii(r.stderr.trimEnd()), JSON.stringify(r.stderr.slice(0, 300)));
            assert.ok(r.stderr.length < 1500, `${r.stderr.length} characters`);
        }
        const [reason] = refused([shCommand(["pct", "exec", `131${forged}`, "--", "true"])], PCT);
        assert.ok(printableAscii(reason!), JSON.stringify(reason));
    });

    it("fails with usage (exit 2) when its authorized_keys line gives neither --vmid nor --direct, or both", async () => {
        for (const args of [[], ["--vmid", "129", "--direct"], ["--vmid", "12"], ["--vmid"], ["--bogus"]]) {
            const r = await runGate(args, "true");
            assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
            assert.match(r.stderr, /give --vmid <vmid>|unknown or incomplete option/);
        }
    });
});

/** Only printable ASCII: no newline, escape sequence or other control character came through. */
function printableAscii(text: string): boolean {
    return [...text].every((c) => c >= " " && c <= "~");
}

/** `python3` for the commands run here (the server-info program, the box-facts launcher the gate runs): tests/host-python.ts. */
const pythonDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-read-gate-python-"));
const PYTHON_BIN = venvPython(pythonDir);
after(() => fs.rmSync(pythonDir, { recursive: true, force: true }));

function runGate(args: string[], command: string | undefined, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const e: NodeJS.ProcessEnv = { PATH: `${PYTHON_BIN}:${process.env.PATH}`, ...env };
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
    /** What the fake systemctl says the unit's MainPID is (this process: the test's server is the unit's). */
    let mainPid: number;

    before(async () => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-server-info-"));
        fs.mkdirSync(path.join(dir, "bin"));
        fs.writeFileSync(path.join(dir, "bin", "systemctl"), '#!/bin/sh\necho "MainPID=$FAKE_MAIN_PID"\n', { mode: 0o755 });
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
        mainPid = process.pid;
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
        const r = await runProcess(cmd!, args, { PATH: `${path.join(dir, "bin")}:${PYTHON_BIN}:${process.env.PATH}`, FAKE_MAIN_PID: String(mainPid), ...env });
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
        assert.match((down.result as { error: string }).error, /GET http:\/\/127\.0\.0\.1:1\/server_info: nothing listens on port 1; nothing was sent/);
    });

    it("copies only values of the type the stack compares (strings and numbers of bounded size, booleans; null for unset), at most 64 states", async () => {
        const info = {
            ...fullServerInfo(port),
            speculative_algorithm: null,
            internal_states: Array.from({ length: 100 }, () => ({ avg_spec_accept_length: 1.5, memory_usage: { weight: 24.2 } })),
        };
        answer = (_req, res) => {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify(info));
        };
        const { stdout, result } = await readInfo(writeService());
        assert.ok("body" in result, stdout);
        const body = result.body as Record<string, unknown> & { internal_states: unknown[] };
        assert.equal(body.speculative_algorithm, null);
        assert.equal(body.internal_states.length, 64);
        assert.deepEqual(body.internal_states[0], { avg_spec_accept_length: 1.5 });
        for (const [field, value, says] of [
            ["model_path", { $ref: "/etc/shadow" }, "model_path is a dict, not a string of at most 4096 characters"],
            ["served_model_name", "x".repeat(5000), "served_model_name is a str, not a string of at most 4096 characters"],
            ["tp_size", "2", "tp_size is a str, not a number up to 1e15"],
            ["mem_fraction_static", 1e300, "mem_fraction_static is a float, not a number up to 1e15"],
            ["max_running_requests", true, "max_running_requests is a bool, not a number up to 1e15"],
            ["disable_radix_cache", "yes", "disable_radix_cache is a str, not a boolean"],
            ["internal_states", [{ avg_spec_accept_length: [1, 2] }], "internal_states[].avg_spec_accept_length is a list, not a number up to 1e15"],
        ] as const) {
            answer = (_req, res) => {
                res.writeHead(200, { "content-type": "application/json" });
                res.end(JSON.stringify({ ...fullServerInfo(port), [field]: value }));
            };
            const wrong = await readInfo(writeService());
            assert.deepEqual(wrong.result, {
                status: 200,
                error: `GET http://127.0.0.1:${port}/server_info: /server_info is not the expected JSON object: ${says}`,
            });
            assert.doesNotMatch(wrong.stdout, /shadow|xxxx|yes/);
        }
    });

    it("reads a bounded answer: one larger than the limit is an error, not parsed", async () => {
        answer = (_req, res) => {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify({ ...fullServerInfo(port), padding: "x".repeat(SERVER_INFO_MAX_BODY_BYTES) }));
        };
        const { result } = await readInfo(writeService());
        assert.deepEqual(result, {
            status: 200,
            error: `GET http://127.0.0.1:${port}/server_info: the answer is larger than ${SERVER_INFO_MAX_BODY_BYTES} bytes`,
        });
    });

    it("minds only the sockets that take the request: a process on another address with the same port is not the unit's concern", async () => {
        // As in the lab, where containers share one network namespace: another server on 127.0.0.2 at the unit's
        // port, started so that it is no child of this process (the unit's MainPID here).
        const other = spawn("sh", ["-c", '(python3 -c "$0" "$1" "$2" "$3" & echo $!)', THIEF, path.join(dir, "other.log"), "127.0.0.2", String(port)], {
            stdio: ["ignore", "pipe", "inherit"],
        });
        let otherPid = 0;
        try {
            await new Promise<void>((resolve, reject) => {
                let out = "";
                other.stdout.on("data", (d: Buffer) => {
                    out += d.toString();
                    const lines = out.split("\n").filter(Boolean);
                    if (lines.length >= 2) {
                        otherPid = Number(lines[0]);
                        resolve();
                    }
                });
                other.once("error", reject);
            });
            const { result } = await readInfo(writeService());
            assert.ok("status" in result && result.status === 200, JSON.stringify(result));
            assert.deepEqual(seen, [{ path: "/server_info", authorization: `Bearer ${API_KEY}` }]);
            assert.equal(fs.readFileSync(path.join(dir, "other.log"), "utf8"), "", "the server on the other address got a request");
        } finally {
            if (otherPid) process.kill(otherPid);
        }
    });

    it("sends the key to no process but the unit's: a process holding the port while the unit is stopped gets nothing, and is named", async () => {
        // Another process listens on a port, and the unit's file names that port; the unit's main process is
        // none (stopped) or a process that is not the listener's ancestor.
        const thief = spawn("python3", ["-c", THIEF, path.join(dir, "thief.log")], { stdio: ["ignore", "pipe", "inherit"] });
        const other = spawn("sleep", ["60"], { stdio: "ignore" });
        try {
            const thiefPort = await new Promise<number>((resolve, reject) => {
                thief.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
                thief.once("error", reject);
            });
            const service = { ...fieldService(), port: thiefPort, listenHost: "0.0.0.0" };
            const files = writeService({ unitText: renderUnit(service, { hasSecrets: true }) });
            for (const main of [0, other.pid!]) {
                mainPid = main;
                const { result } = await readInfo(files);
                assert.deepEqual(result, {
                    error: `GET http://127.0.0.1:${thiefPort}/server_info: port ${thiefPort} is held by pid ${thief.pid} (python3), not by sglang-qwen.service (MainPID ${main}); the API key was not sent`,
                });
            }
            assert.equal(fs.readFileSync(path.join(dir, "thief.log"), "utf8"), "", "the process that holds the port got a request");
            // The same listener as the unit's main process: it is asked, with the key.
            mainPid = thief.pid!;
            const asked = await readInfo(files);
            assert.ok("status" in asked.result && asked.result.status === 401, JSON.stringify(asked.result));
            assert.equal(fs.readFileSync(path.join(dir, "thief.log"), "utf8"), `GET /server_info Bearer ${API_KEY}\n`);
        } finally {
            thief.kill();
            other.kill();
        }
    });
});

/** A server that logs every request and its Authorization header, then answers 401 (argv: the log file, optionally the address and port to bind). */
const THIEF = `import http.server, sys
log = sys.argv[1]
bind = (sys.argv[2], int(sys.argv[3])) if len(sys.argv) > 3 else ("127.0.0.1", 0)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write("GET %s %s\\n" % (self.path, self.headers.get("Authorization")))
        self.send_response(401)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(bind, H)
open(log, "w").close()
print(s.server_address[1], flush=True)
s.serve_forever()
`;

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

describe("read-only gate: the staged weights' manifest check", () => {
    const command = (dir: string, rehash: boolean) => remoteCommand("pct-exec", 129, manifestCheckArgv(dir, rehash));

    it("allows the manifest check, cheap and re-hashing, of a revision folder the key's line pins", () => {
        const revision = "/models/org--model/0123456789abcdef0123456789abcdef01234567";
        const verdicts = checkBatch([command(revision, false), command(revision, true)], ["--vmid", "129", ...PINS, "--model", revision]);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? `${v.shape} ${v.detail}`.trim() : v.reason)),
            [`manifest-check vmid 129, model ${revision}`, `manifest-check vmid 129, model ${revision}`],
        );
    });

    it("refuses it for a folder the line does not pin", () => {
        const [reason] = refused([command("/etc", true)], PCT);
        assert.match(reason!, /^manifest-check: model \/etc is not the one this key's line pins/);
    });
});

describe("read-only gate: the box-facts read", function () {
    this.timeout(20_000);
    const command = (topology: "pct-exec" | "direct", python: string, model: string, staged = false) =>
        remoteCommand(topology, topology === "pct-exec" ? 129 : undefined, boxFactsCommand(python, model, staged));

    it("allows the box-facts read the stack builds for the interpreter and model folders its line pins, in both topologies", () => {
        allowed([command("pct-exec", FIELD_PYTHON, FIELD_MODEL)], PCT);
        allowed([command("direct", FIELD_PYTHON, FIELD_MODEL)], DIRECT);
        const drafter = ["--vmid", "129", "--python", "/opt/sglang/venv-0.5.10/bin/python3.11", "--model", FIELD_MODEL, "--model", "/models/drafter"];
        allowed([command("pct-exec", "/opt/sglang/venv-0.5.10/bin/python3.11", "/models/drafter")], drafter);
    });

    it("refuses an interpreter or a model folder other than the pinned ones (/tmp/x/bin/python3 among them), and any when none is pinned", () => {
        const reasons = refused(
            [
                command("pct-exec", "/tmp/x/bin/python3", FIELD_MODEL),
                command("pct-exec", "/dev/shm/v/bin/python3", FIELD_MODEL),
                command("pct-exec", "/proc/self/cwd/bin/python3", FIELD_MODEL),
                command("pct-exec", "/opt/sglang/venv/bin/../../../tmp/bin/python3", FIELD_MODEL),
                command("pct-exec", FIELD_PYTHON, "/etc"),
                command("pct-exec", FIELD_PYTHON, "/models/Qwen3.6-27B/../../etc"),
                command("pct-exec", "python3", FIELD_MODEL),
                command("pct-exec", FIELD_PYTHON, "models"),
            ],
            PCT,
        );
        for (const r of reasons.slice(0, 4))
            assert.match(r, /^box-facts: python \S+ is not the one this key's line pins \(--python \/opt\/sglang\/venv\/bin\/python3\)/);
        for (const r of reasons.slice(4, 6))
            assert.match(r, /^box-facts: model \S+ is not the one this key's line pins \(--model \/models\/Qwen3\.6-27B\); reinstall/);
        const [unpinned] = refused([command("pct-exec", FIELD_PYTHON, FIELD_MODEL)], ["--vmid", "129"]);
        assert.match(unpinned!, /python \/opt\/sglang\/venv\/bin\/python3 is not the one this key's line pins \(--python none\)/);
    });

    it("with --venv-root, allows the python of any release's venv the stack stages there, and nothing else under or beside it", () => {
        const scope = ["--vmid", "129", "--venv-root", "/opt/sglang", "--model", FIELD_MODEL];
        allowed(
            [
                command("pct-exec", "/opt/sglang/venv-0.5.23/bin/python3", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang/venv-0.6.0/bin/python3", FIELD_MODEL, true),
            ],
            scope,
        );
        const reasons = refused(
            [
                command("pct-exec", "/opt/sglang/venv/bin/python3", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang/venv-0.5.23/bin/python3.11", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang/venv-x/bin/python3", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang/x/venv-0.5.23/bin/python3", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang2/venv-0.5.23/bin/python3", FIELD_MODEL, true),
                command("pct-exec", "/opt/sglang/venv-0.5.23/../../../tmp/venv-0.5.23/bin/python3", FIELD_MODEL, true),
            ],
            scope,
        );
        for (const r of reasons) assert.match(r, /^box-facts: python \S+ is not the one this key's line pins \(--python none\)/);
    });

    it("with --venv-root, runs such a python only through the read that checks the stack's staged marker on the box; a pinned python either way", () => {
        const scope = ["--vmid", "129", "--venv-root", "/opt/sglang", "--python", FIELD_PYTHON, "--model", FIELD_MODEL];
        const [reason] = refused([command("pct-exec", "/opt/sglang/venv-0.5.23/bin/python3", FIELD_MODEL)], scope);
        assert.match(
            reason!,
            /^box-facts: python \/opt\/sglang\/venv-0\.5\.23\/bin\/python3 is a venv's under --venv-root \/opt\/sglang, whose python runs only through the read that checks the stack's staged marker/,
        );
        allowed([command("pct-exec", FIELD_PYTHON, FIELD_MODEL), command("pct-exec", FIELD_PYTHON, FIELD_MODEL, true)], scope);
    });

    it("refuses a changed program, another interpreter for the check, another distribution", () => {
        const argv = boxFactsCommand(FIELD_PYTHON, FIELD_MODEL);
        const reasons = refused(
            [
                remoteCommand("pct-exec", 129, [...argv.slice(0, 3), `${BOX_FACTS_LAUNCHER}import os\n`, ...argv.slice(4)]),
                remoteCommand("pct-exec", 129, [...argv.slice(0, 3), BOX_FACTS_LAUNCHER.replace("trusted(python)\n", ""), ...argv.slice(4)]),
                remoteCommand("pct-exec", 129, [FIELD_PYTHON, "-I", "-c", BOX_FACTS_SCRIPT, FIELD_MODEL, "sglang"]),
                remoteCommand("pct-exec", 129, [...argv.slice(0, 6), "torch"]),
                remoteCommand("pct-exec", 129, ["/bin/sh", ...argv.slice(1)]),
            ],
            PCT,
        );
        for (const r of reasons.slice(0, 3)) assert.match(r, /a python program that is not one of this gate's reads/);
    });

    describe("the paths checked on the box before the interpreter runs", () => {
        let trusted: string;
        let writable: string;
        before(function () {
            // Root-owned directories outside the world-writable /tmp; only root can make them.
            if (process.getuid?.() !== 0) this.skip();
            trusted = fs.mkdtempSync("/run/sglang-serve-box-facts-");
            fs.chmodSync(trusted, 0o755);
            writable = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-box-facts-"));
        });
        after(() => {
            if (trusted) fs.rmSync(trusted, { recursive: true, force: true });
            if (writable) fs.rmSync(writable, { recursive: true, force: true });
        });

        /** A "python" that leaves a mark when it runs the facts (asked for its sys.path without site, -S, it lists none). */
        function fakePython(dir: string): { python: string; mark: string } {
            const bin = path.join(dir, "venv", "bin");
            fs.mkdirSync(bin, { recursive: true, mode: 0o755 });
            const mark = path.join(dir, "ran");
            const listing = `if [ "$2" = -S ]; then echo '{"dirs": [], "files": []}'; exit 0; fi\n`;
            fs.writeFileSync(path.join(bin, "python3"), `#!/bin/sh\n${listing}touch ${mark}\necho '{"sglangVersion": null, "model": "missing"}'\n`, {
                mode: 0o755,
            });
            return { python: path.join(bin, "python3"), mark };
        }

        async function viaGate(python: string, model: string) {
            return runGate(["--direct", "--python", python, "--model", model], shCommand(boxFactsCommand(python, model)));
        }

        it("runs the pinned interpreter when every directory on the way is root's alone, symlinks followed", async () => {
            const { python, mark } = fakePython(trusted);
            const model = path.join(trusted, "model");
            fs.mkdirSync(model, { mode: 0o755 });
            const r = await viaGate(python, model);
            assert.equal(r.code, 0, r.stderr);
            assert.deepEqual(JSON.parse(r.stdout), { sglangVersion: null, model: "missing" });
            assert.ok(fs.existsSync(mark));
            const real = spawnSync("python3", boxFactsCommand("/usr/bin/python3", model).slice(1), { encoding: "utf8" });
            assert.equal(real.status, 0, real.stderr);
            assert.equal(JSON.parse(real.stdout).model, "no-config");
        });

        it("refuses, naming the directory, a python reached through a writable directory; it never runs", async () => {
            const { python, mark } = fakePython(writable);
            const r = await viaGate(python, "/usr");
            assert.equal(r.code, 3);
            assert.match(r.stderr, /^box-facts: '\/tmp' is writable by its group or others \(mode 1777\): only root may own and write/);
            assert.ok(!fs.existsSync(mark), "the interpreter ran");
            // A root-owned directory that its group may write, and a symlink into the writable one.
            const { python: groupPython, mark: groupMark } = fakePython(path.join(trusted, "group"));
            fs.chmodSync(path.join(trusted, "group", "venv"), 0o775);
            const group = await viaGate(groupPython, "/usr");
            assert.match(group.stderr, /^box-facts: '\/run\/sglang-serve-box-facts-\w+\/group\/venv' is writable by its group or others \(mode 775\)/);
            assert.ok(!fs.existsSync(groupMark));
            const link = path.join(trusted, "link");
            fs.symlinkSync(path.join(writable, "venv"), link);
            const linked = await viaGate(path.join(link, "bin", "python3"), "/usr");
            assert.match(linked.stderr, /^box-facts: '\/tmp' is writable/);
            assert.ok(!fs.existsSync(mark));
        });

        /** A real venv (python3 -m venv) `dir/name`, whose site-packages holds a .pth that leaves a mark when site runs it. */
        function venvWithPth(dir: string, name = "venv"): { python: string; site: string; mark: string } {
            const venv = path.join(dir, name);
            const made = spawnSync("python3", ["-m", "venv", "--without-pip", venv], { encoding: "utf8" });
            assert.equal(made.status, 0, made.stderr);
            const lib = path.join(venv, "lib");
            const site = path.join(
                lib,
                fs.readdirSync(lib).find((d) => d.startsWith("python3"))!,
                "site-packages",
            );
            const mark = path.join(dir, "pth-ran");
            fs.writeFileSync(path.join(site, "planted.pth"), `import os; open(${JSON.stringify(mark)}, "w").close()\n`, { mode: 0o644 });
            return { python: path.join(venv, "bin", "python3"), site, mark };
        }

        it("refuses, naming the directory, a pinned venv whose site-packages others may write: the .pth planted there never runs", async () => {
            const dir = fs.mkdtempSync(path.join(trusted, "pth-"));
            fs.chmodSync(dir, 0o755);
            const model = path.join(dir, "model");
            fs.mkdirSync(model, { mode: 0o755 });
            const { python, site, mark } = venvWithPth(dir);
            fs.chmodSync(site, 0o757);
            const r = await viaGate(python, model);
            assert.equal(r.code, 3, r.stderr);
            assert.equal(r.stdout, "");
            assert.match(r.stderr, new RegExp(`^box-facts: '${site.replace(/[.]/g, "\\.")}' is writable by its group or others \\(mode 757\\)`));
            assert.ok(!fs.existsSync(mark), "the planted .pth ran");
            // The same venv with its site-packages root's alone runs, and site runs the .pth (root put it there).
            fs.chmodSync(site, 0o755);
            const ok = await viaGate(python, model);
            assert.equal(ok.code, 0, ok.stderr);
            assert.equal(JSON.parse(ok.stdout).model, "no-config");
            assert.ok(fs.existsSync(mark));
        });

        it("refuses a venv whose pyvenv.cfg or .pth file others may write, and a directory a .pth adds that others may write, naming each", async () => {
            const dir = fs.mkdtempSync(path.join(trusted, "cfg-"));
            fs.chmodSync(dir, 0o755);
            const { python, site, mark } = venvWithPth(dir);
            const cfg = path.join(path.dirname(path.dirname(python)), "pyvenv.cfg");
            fs.chmodSync(cfg, 0o664);
            const byCfg = await viaGate(python, "/usr");
            assert.equal(byCfg.code, 3, byCfg.stderr);
            assert.match(byCfg.stderr, new RegExp(`^box-facts: '${cfg.replace(/[.]/g, "\\.")}' is writable by its group or others \\(mode 664\\)`));
            fs.chmodSync(cfg, 0o644);
            fs.chmodSync(path.join(site, "planted.pth"), 0o646);
            const byPth = await viaGate(python, "/usr");
            assert.match(byPth.stderr, /^box-facts: '\S+\/site-packages\/planted\.pth' is writable by its group or others \(mode 646\)/);
            fs.chmodSync(path.join(site, "planted.pth"), 0o644);
            fs.writeFileSync(path.join(site, "adds.pth"), `${path.join(writable, "added")}\n`);
            fs.mkdirSync(path.join(writable, "added"), { recursive: true });
            const byAdded = await viaGate(python, "/usr");
            assert.match(byAdded.stderr, /^box-facts: '\/tmp' is writable by its group or others \(mode 1777\)/);
            assert.ok(!fs.existsSync(mark), "the planted .pth ran");
        });

        it("runs a --venv-root python only when the venv carries the stack's staged marker; else says unstaged, or staging, without running it", async () => {
            const root = fs.mkdtempSync(path.join(trusted, "releases-"));
            fs.chmodSync(root, 0o755);
            const { python, mark } = venvWithPth(root, "venv-0.6.0");
            const releaseVenv = path.dirname(path.dirname(python));
            const model = path.join(root, "model");
            fs.mkdirSync(model, { mode: 0o755 });
            const viaRoot = () => runGate(["--direct", "--venv-root", root, "--model", model], shCommand(boxFactsCommand(python, model, true)));
            const unstaged = await viaRoot();
            assert.equal(unstaged.code, 0, unstaged.stderr);
            assert.deepEqual([JSON.parse(unstaged.stdout).python, JSON.parse(unstaged.stdout).sglangVersion], ["unstaged", null]);
            fs.writeFileSync(path.join(releaseVenv, ".sglang-serve-staging"), "");
            assert.equal(JSON.parse((await viaRoot()).stdout).python, "staging");
            assert.ok(!fs.existsSync(mark), "the venv's python ran");
            fs.rmSync(path.join(releaseVenv, ".sglang-serve-staging"));
            fs.writeFileSync(path.join(releaseVenv, ".sglang-serve-venv"), '{"release":"0.6.0","stagedBy":"sglang-serve/test"}\n');
            const ran = await viaRoot();
            assert.equal(ran.code, 0, ran.stderr);
            assert.equal(JSON.parse(ran.stdout).python, undefined);
            assert.ok(fs.existsSync(mark));
        });

        it("refuses a model folder reached through a writable directory, and one owned by another user", async () => {
            const { python, mark } = fakePython(path.join(trusted, "ok"));
            const r = await viaGate(python, path.join(writable, "model"));
            assert.equal(r.code, 3);
            assert.match(r.stderr, /^box-facts: '\/tmp' is writable/);
            const owned = path.join(trusted, "owned");
            fs.mkdirSync(owned, { mode: 0o755 });
            fs.chownSync(owned, 1000, 1000);
            const other = await viaGate(python, path.join(owned, "model"));
            assert.match(other.stderr, /^box-facts: '\/run\/sglang-serve-box-facts-\w+\/owned' is owned by uid 1000, not root/);
            assert.ok(!fs.existsSync(mark));
        });
    });

    it("the gate's source holds none of the reads: they come from the stack's builders at install", () => {
        const source = fs.readFileSync(GATE_SOURCE, "utf8");
        for (const text of ["nvidia-smi", "pct config", "systemctl show", "sha256sum", "urllib", "importlib", "/etc/systemd/system", "/etc/sglang"]) {
            assert.ok(!source.includes(text), `the gate's source holds ${JSON.stringify(text)}`);
        }
        const installed = fs.readFileSync(GATE, "utf8");
        assert.ok(
            installed.includes(JSON.stringify(SERVER_INFO_SCRIPT).slice(1, 200).replace(/'/g, "\\u0027")),
            "the installed gate carries the server-info read",
        );
    });
});
