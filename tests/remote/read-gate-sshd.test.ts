import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Client } from "ssh2";
import type { Connection } from "../../core/connection";
import { gpuHostProvider } from "../../providers/gpu-host";
import { lxcContainerProvider } from "../../providers/lxc-container";
import { ProviderRun } from "../../providers/provider-run";
import { readinessCheckProvider } from "../../providers/readiness-check";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import { RemoteHost } from "../../remote/remote-host";
import { SshPool } from "../../remote/ssh-pool";
import { runReadGate } from "../../scripts/read-gate";
import { boxFactsCommand } from "../../core/box/box-facts";
import { remoteCommand } from "../../core/shell";
import { checkBatch, FIELD_MODEL, FIELD_PYTHON, PINS, readerCommands } from "./read-gate-fixture";
import { TestSshd } from "./sshd-fixture";

// The gate as sshd runs it: a real OpenSSH server (sshd-fixture.ts) whose
// authorized_keys holds the deploy key as is and two read-only keys behind
// the gate, installed with the install script the operator pipes into the
// box. The box's pct, nvidia-smi, pveversion and systemctl are fakes that
// log their calls; `pct exec <vmid> --` runs its command here.

const UNITS = ["sglang-qwen.service", "sglang-other.service"];

function fakes(calls: string): Record<string, string> {
    const log = `echo "$(basename "$0") $*" >> ${calls}`;
    return {
        pct: `#!/bin/sh
${log}
case "$1" in
  config) printf 'arch: amd64\\ncores: 32\\nhostname: llm-two\\nmemory: 131072\\nostype: debian\\nswap: 0\\n' ;;
  status) echo "status: running" ;;
  exec) shift 2; [ "$1" = "--" ] && shift; exec "$@" ;;
  *) echo "fake pct: $1 not faked" >&2; exit 2 ;;
esac
`,
        "nvidia-smi": `#!/bin/sh
${log}
echo "0, NVIDIA RTX A6000, 49140, 570.133.20, GPU-00000000-0000-0000-0000-000000000000, 8.6"
echo "1, NVIDIA RTX A6000, 49140, 570.133.20, GPU-11111111-1111-1111-1111-111111111111, 8.6"
`,
        pveversion: `#!/bin/sh
${log}
echo "pve-manager/8.3.2/3e76eec21c4a14a7 (running kernel: 6.8.12-4-pve)"
`,
        systemctl: `#!/bin/sh
${log}
if [ "$1" = show ]; then
  for u in "$@"; do case "$u" in *.service) printf 'Id=%s\\nActiveState=inactive\\nUnitFileState=disabled\\n\\n' "$u" ;; esac; done
fi
`,
    };
}

function readKeyLine(pubFile: string): string {
    return fs.readFileSync(pubFile, "utf8").trim();
}

function keygen(file: string): void {
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", path.basename(file), "-f", file], { stdio: "ignore" });
}

/** The install script as `npm run read-gate -- install-script` prints it, run on "the box" (this machine). */
function install(sshd: TestSshd, publicKey: string, scope: string[]): string {
    const gen = runReadGate([
        "install-script",
        "--public-key",
        publicKey,
        ...scope,
        "--gate-path",
        sshd.file("gate/sglang-serve-read-gate"),
        "--authorized-keys",
        sshd.file("authorized_keys"),
    ]);
    assert.equal(gen.code, 0, gen.stderr);
    const r = spawnSync("sh", [], { input: gen.stdout, encoding: "utf8" });
    assert.equal(r.status, 0, `install script failed: ${r.stderr}`);
    return r.stdout;
}

describe("read-only gate behind a real sshd (forced command + restrict)", function () {
    this.timeout(60_000);
    let sshd: TestSshd;
    let calls: string;
    let pool: SshPool;
    let commands: string[];
    let connection: Connection;
    let gpuHost: ReturnType<typeof gpuHostProvider>;
    let lxcContainer: ReturnType<typeof lxcContainerProvider>;
    let sglangService: ReturnType<typeof sglangServiceProvider>;
    let readinessCheck: ReturnType<typeof readinessCheckProvider>;

    /** The providers of one run over this test's pool (which records the commands), with the key given. */
    const runWithKey = (sshPrivateKey: string): void => {
        const run = new ProviderRun({ pool, config: { sshPrivateKey } });
        gpuHost = gpuHostProvider(run);
        lxcContainer = lxcContainerProvider(run);
        sglangService = sglangServiceProvider(run);
        readinessCheck = readinessCheckProvider(run);
    };

    before(async () => {
        sshd = await TestSshd.create();
        calls = sshd.file("calls");
        for (const [name, text] of Object.entries(fakes(calls))) fs.writeFileSync(sshd.file(`bin/${name}`), text, { mode: 0o755 });
        keygen(sshd.file("read_pct"));
        keygen(sshd.file("read_direct"));
        install(sshd, sshd.file("read_pct.pub"), ["--vmid", "129", ...PINS]);
        install(sshd, sshd.file("read_direct.pub"), ["--direct", ...PINS]);
        // A gate of another version that knows none of this stack's reads.
        keygen(sshd.file("read_old"));
        fs.writeFileSync(
            sshd.file("old-gate"),
            `#!/bin/sh\necho "sglang-serve-read-gate: refused \\"$(printf %.20s "$SSH_ORIGINAL_COMMAND")...\\": not one of sglang-serve's read commands (gate version 0)" >&2\nexit 1\n`,
            { mode: 0o755 },
        );
        fs.appendFileSync(sshd.file("authorized_keys"), `command="${sshd.file("old-gate")}",restrict ${readKeyLine(sshd.file("read_old.pub"))}\n`);
        await sshd.start();
        connection = { address: sshd.address, port: sshd.port, user: sshd.target().user, hostKey: sshd.hostKey, topology: "pct-exec" };
    });
    after(async () => {
        await sshd?.destroy();
    });
    beforeEach(() => {
        fs.writeFileSync(calls, "");
        commands = [];
        pool = new SshPool({ log: () => undefined, onCommand: (_h, c) => commands.push(c) });
    });
    afterEach(async () => {
        await pool.closeAll();
    });

    const loggedCalls = () => fs.readFileSync(calls, "utf8").trim().split("\n").filter(Boolean);
    const readKey = (name: string) => fs.readFileSync(sshd.file(name), "utf8");
    const readiness = { startupTimeoutSeconds: 60, pollIntervalSeconds: 1, probeTimeoutSeconds: 5, gpuReleaseTimeoutSeconds: 10, chatCheck: true };

    it("the install script puts exactly one gated line per key, keeps the other lines, and installs again the same", () => {
        const before = fs.readFileSync(sshd.file("authorized_keys"), "utf8");
        const lines = before.trim().split("\n");
        assert.equal(lines.length, 5, before);
        assert.equal(lines.filter((l) => l.startsWith("ssh-ed25519 ")).length, 2, "the deploy keys stay as they were");
        const gated = lines.filter((l) => l.startsWith("command=") && l.endsWith(" sglang-serve-read"));
        assert.deepEqual(
            gated.map((l) => l.replace(/ ssh-ed25519 \S+ /, " KEY ")),
            [
                `command="${sshd.file("gate/sglang-serve-read-gate")} --vmid 129 ${PINS.join(" ")}",restrict KEY sglang-serve-read`,
                `command="${sshd.file("gate/sglang-serve-read-gate")} --direct ${PINS.join(" ")}",restrict KEY sglang-serve-read`,
            ],
        );
        assert.equal(fs.statSync(sshd.file("authorized_keys")).mode & 0o777, 0o600);
        assert.equal(fs.statSync(sshd.file("gate/sglang-serve-read-gate")).mode & 0o777, 0o755);
        const out = install(sshd, sshd.file("read_pct.pub"), ["--vmid", "129", ...PINS]);
        assert.match(out, /sglang-serve-read-gate 6 installed at .*; key SHA256:\S+ in .*authorized_keys may run only the read commands/);
        assert.equal(
            fs
                .readFileSync(sshd.file("authorized_keys"), "utf8")
                .split("\n")
                .filter((l) => l.includes(readKey("read_pct.pub").split(" ")[1]!)).length,
            1,
        );
    });

    it("a pct-exec refresh's reads all pass the gate and run: GpuHost, LxcContainer, two SglangServices in one command, ReadinessCheck", async () => {
        runWithKey(readKey("read_pct"));
        const host = await gpuHost.read!("host", {
            providerVersion: "t",
            connection,
            expectedGpus: { count: 2 },
            gpus: [],
            driverVersion: "",
            deviceMajors: null,
            proxmoxVersion: "",
        } as never);
        assert.equal((host.props as { gpus: unknown[] }).gpus.length, 2);
        assert.equal((host.props as { proxmoxVersion: string }).proxmoxVersion, "8.3.2");
        const ct = await lxcContainer.read!("ct129", {
            providerVersion: "t",
            connection,
            container: { vmid: 129, hostname: "llm-two", adopt: true, allowDelete: false, gpus: [] },
            deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
            vmid: 129,
            pendingRestart: [],
        } as never);
        assert.equal((ct.props as { status: string }).status, "running");
        const inCt = { ...connection, vmid: 129 };
        const services = await Promise.all(
            UNITS.map((unitName) => sglangService.read!(unitName, { providerVersion: "t", connection: inCt, unitName, readiness } as never)),
        );
        // The units are not on this "box": gone, as the provider reports it.
        assert.deepEqual(
            services.map((s) => s.id),
            ["", ""],
        );
        const check = await readinessCheck.read!("ready", {
            providerVersion: "t",
            connection: inCt,
            unitName: UNITS[0],
            endpoint: `http://${sshd.address}:9`,
            readiness,
        } as never);
        assert.equal((check.props as { ready: boolean }).ready, false);
        assert.equal((check.props as { liveServerArgs: unknown }).liveServerArgs, null);

        const verdicts = checkBatch(commands, ["--vmid", "129", ...PINS]);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? `${v.shape} ${v.detail}`.trim() : `refused: ${v.reason}`)),
            ["gpu-facts", "container-read vmid 129", "unit-read vmid 129, name qwen other", "server-info vmid 129, name qwen, timeout 5"],
        );
        const ran = loggedCalls();
        assert.ok(ran.includes("nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid,compute_cap --format=csv,noheader,nounits"), ran.join("\n"));
        assert.ok(ran.includes("pct config 129 --current") && ran.includes("pct status 129"), ran.join("\n"));
        assert.ok(ran.includes(`systemctl show -p Id -p ActiveState -p UnitFileState ${UNITS.join(" ")}`), ran.join("\n"));
        assert.ok(
            ran.some((c) => c.startsWith("pct exec 129 -- python3 -I -c ")),
            ran.join("\n"),
        );
    });

    it("a direct refresh's reads all pass the --direct gate and run: GpuHost, SglangService, ReadinessCheck", async () => {
        runWithKey(readKey("read_direct"));
        const direct: Connection = { ...connection, topology: "direct" };
        const host = await gpuHost.read!("host", { providerVersion: "t", connection: direct, expectedGpus: { count: 2 } } as never);
        assert.equal((host.props as { gpus: unknown[] }).gpus.length, 2);
        const service = await sglangService.read!(UNITS[0]!, { providerVersion: "t", connection: direct, unitName: UNITS[0], readiness } as never);
        assert.equal(service.id, "");
        const check = await readinessCheck.read!("ready", {
            providerVersion: "t",
            connection: direct,
            unitName: UNITS[0],
            endpoint: `http://${sshd.address}:9`,
            readiness,
        } as never);
        assert.equal((check.props as { liveServerArgs: unknown }).liveServerArgs, null);
        const verdicts = checkBatch(commands, ["--direct", ...PINS]);
        assert.deepEqual(
            verdicts.map((v) => (v.allowed ? v.shape : `refused: ${v.reason}`)),
            ["gpu-facts", "unit-read", "server-info"],
        );
        assert.ok(loggedCalls().includes(`systemctl show -p Id -p ActiveState -p UnitFileState ${UNITS[0]}`));
    });

    it("the read-only key cannot run systemctl stop, rm, or a reader's command with '; id' appended; nothing of it runs", async () => {
        const target = { ...sshd.target(), privateKey: readKey("read_pct") };
        const c = readerCommands({ kind: "pct-exec", vmid: 129 }, [UNITS[0]!]);
        for (const command of [
            "systemctl stop sglang-qwen.service",
            "pct exec 129 -- systemctl stop sglang-qwen.service",
            "pct exec 129 -- rm -f /etc/systemd/system/sglang-qwen.service",
            `${c.unitRead}; systemctl stop sglang-qwen.service`,
            `${c.gpuFacts}; id`,
            `pct exec 129 -- sh -c 'systemctl stop sglang-qwen.service'`,
        ]) {
            const r = await pool.exec(target, command);
            assert.equal(r.code, 1, `${command}: ${r.stdout}${r.stderr}`);
            assert.match(r.stderr, /^sglang-serve-read-gate: refused .*need the deploy key/s);
            assert.equal(r.stdout, "");
        }
        assert.deepEqual(loggedCalls(), [], "the box ran something for a refused command");
        // The same command with the deploy key runs (the gate is per key).
        const deploy = await pool.exec(sshd.target(), "pct status 129");
        assert.equal(deploy.code, 0);
        assert.deepEqual(loggedCalls(), ["pct status 129"]);
    });

    it("the box-facts read runs only with the interpreter and model folder pinned at install: /tmp/x/bin/python3 is refused, nothing runs", async () => {
        const target = { ...sshd.target(), privateKey: readKey("read_pct") };
        const pinned = await pool.exec(target, remoteCommand("pct-exec", 129, boxFactsCommand(FIELD_PYTHON, FIELD_MODEL)));
        // Allowed and run (through the fake pct): this box has no such interpreter, which the read itself reports.
        assert.equal(pinned.code, 0, pinned.stderr);
        assert.equal(JSON.parse(pinned.stdout).python, "missing");
        assert.equal(loggedCalls()[0], `pct exec 129 -- python3 -I -c ${boxFactsCommand(FIELD_PYTHON, FIELD_MODEL)[3]!.split("\n")[0]}`);
        fs.writeFileSync(calls, "");
        for (const [python, model] of [
            ["/tmp/x/bin/python3", FIELD_MODEL],
            [FIELD_PYTHON, "/etc"],
        ]) {
            const r = await pool.exec(target, remoteCommand("pct-exec", 129, boxFactsCommand(python!, model!)));
            assert.equal(r.code, 1, r.stderr);
            assert.match(r.stderr, /^sglang-serve-read-gate: refused .*box-facts: (python|model) \S+ is not the one this key's line pins/);
        }
        assert.deepEqual(loggedCalls(), []);
    });

    it("a gate that refuses a read fails the refresh with the gate's message (GpuHost: not a driver hint)", async () => {
        runWithKey(readKey("read_old"));
        await assert.rejects(gpuHost.read!("host", { providerVersion: "t", connection, expectedGpus: { count: 2 } } as never), (e: Error) => {
            assert.match(e.message, /^root@127\.0\.5\.1:\d+: sglang-serve-read-gate: refused "sh -c 'echo '\\''sgla\.\.\.": .*\(gate version 0\)$/);
            assert.doesNotMatch(e.message, /NVIDIA driver/);
            return true;
        });
        await assert.rejects(
            readinessCheck.read!("ready", {
                providerVersion: "t",
                connection: { ...connection, vmid: 129 },
                unitName: UNITS[0],
                endpoint: `http://${sshd.address}:9`,
                readiness,
            } as never),
            /cannot read \/server_info of sglang-qwen\.service on .*\(pct exec 129\) \(exit 1\): sglang-serve-read-gate: refused/,
        );
        assert.deepEqual(loggedCalls(), []);
    });

    it("the read-only key's RemoteHost errors name the gate and the fix when the stack sends a write", async () => {
        const remote = new RemoteHost({ pool, target: { ...sshd.target(), privateKey: readKey("read_pct") }, topology: "pct-exec", vmid: 129 });
        await assert.rejects(remote.runChecked(["systemctl", "stop", UNITS[0]!]), (e: Error) => {
            assert.match(e.message, /exit code 1/);
            assert.match(e.message, /sglang-serve-read-gate: refused "pct exec 129 -- systemctl stop sglang-qwen.service"/);
            return true;
        });
    });

    it("the read-only key gets no shell, no sftp and no port forwarding", async () => {
        const client = new Client();
        // The test sshd's own host key, pinned as the stack pins one (host.hostKey): the blob offered must be it.
        const pinnedHostKey = Buffer.from(sshd.hostKey.split(" ")[1]!, "base64");
        await new Promise<void>((resolve, reject) => {
            client.once("ready", () => resolve());
            client.once("error", reject);
            client.connect({
                host: sshd.address,
                port: sshd.port,
                username: sshd.target().user,
                privateKey: readKey("read_pct"),
                hostVerifier: (key: Buffer) => key.equals(pinnedHostKey),
            });
        });
        try {
            const shell = await new Promise<{ code: number; stderr: string }>((resolve, reject) => {
                client.shell(false, (err, ch) => {
                    if (err) return reject(err);
                    let stderr = "";
                    let code = -1;
                    ch.stderr.on("data", (d: Buffer) => (stderr += d));
                    ch.on("data", () => undefined);
                    // The exit status can arrive before the last of stderr (sshd sends it when the command ends, while its
                    // stderr may still be draining under load): the answer is whole once the channel closes.
                    ch.on("exit", (status: number) => (code = status));
                    ch.on("close", () => resolve({ code, stderr }));
                    ch.end();
                });
            });
            assert.equal(shell.code, 1);
            assert.match(shell.stderr, /no command \(an interactive login\)/);
            await assert.rejects(
                new Promise((resolve, reject) =>
                    client.sftp((err, sftp) => (err ? reject(err) : sftp.readdir("/", (e, list) => (e ? reject(e) : resolve(list))))),
                ),
            );
            await assert.rejects(
                new Promise((resolve, reject) => client.forwardOut("127.0.0.1", 0, sshd.address, sshd.port, (err, ch) => (err ? reject(err) : resolve(ch)))),
                /prohibited|open failed|rejected/i,
            );
        } finally {
            client.end();
        }
        assert.deepEqual(loggedCalls(), []);
    });
});
