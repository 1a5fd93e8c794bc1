import * as assert from "node:assert/strict";
import { execFileSync, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { labDown, sshArgv } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { labPaths } from "../../lab/lab-info";
import { httpGetJson } from "../../remote/probe";
import { Deployment, EngineResult, expectExit } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { mainPid, onBox, startLab, UNIT } from "./lab-box";
import { remoteCommand, shCommand } from "../../core/shell";
import { containerReadScript } from "../../core/box/host-reads";
import { parseServerInfoReadOutput, serverInfoReadArgv } from "../../core/sglang/server-info-read";
import { unitPaths } from "../../core/unit/unit-read";

/** The container read the stack sends (providers/lxc-container.ts), as the read-only key sends it. */
const CONTAINER_READ = shCommand(["sh", "-c", containerReadScript(129, "sglang-serve-0123456789abcdef")]);

// Issue 13 item 5 on the lab with the real engine: the stack deployed with
// the deploy key; the read-only gate installed on the Proxmox host for a
// second key with the documented command (install script piped into ssh);
// then previews and drift checks with that key alone, and everything that
// changes the box refused. Its own lab on 127.0.122.x. One deployment, its
// tests in order: the refused up comes before the clean drift, which then
// shows that it left the state as the box has it (issue 36: fewer engine runs).

const API_KEY = "e2e-readkey-api-key-0123456789abcdef";

/** `cmd` with `input` on stdin, as a shell pipe would run it. */
function run(argv: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
        const child = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d));
        child.stderr.on("data", (d: Buffer) => (stderr += d));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
        child.stdin.end(input ?? "");
    });
}

async function memFraction(info: LabInfo): Promise<unknown> {
    const r = await httpGetJson(`http://${info.container.address}:30000/server_info`, { timeoutMs: 10_000, bearer: API_KEY });
    assert.ok("status" in r && r.status === 200, JSON.stringify(r).slice(0, 300));
    return (r.body as { mem_fraction_static?: unknown }).mem_fraction_static;
}

function drift(d: Deployment): Promise<EngineResult> {
    return d.npmScript("drift", ["--stack", d.stack, "--json"]);
}

describe("the read-only key on the lab (pct-exec): previews and drift checks through the gate, nothing else", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;
    let config: StackConfigFile;
    let keyDir: string;
    let readKey: string;

    /** ssh to the lab host as root with the read-only key, as CI's runner would. */
    function asReader(command: string) {
        const argv = sshArgv(info, "host", command);
        argv[argv.indexOf("-i") + 1] = readKey;
        return run(argv);
    }

    before(async () => {
        ({ labDir, info } = await startLab("readkey", 122));
        config = labStackConfig(info, "pct-exec");
        // Managed cores: a `pct set` by hand is drift the read-only key must see.
        const cores = /^cores: (\d+)$/m.exec(await onBox(labDir, "host", "pct config 129"));
        assert.ok(cores, "the lab container has a cores setting");
        config["sglang-serve:container"].cores = Number(cores[1]);
        d = await Deployment.create("lab", config);
        d.giveApiKey(API_KEY);
        expectExit(await d.up(), 0, "up with the deploy key");
        keyDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-readkey-"));
        readKey = path.join(keyDir, "sglang-serve-read-lab");
        execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "sglang-serve-read-lab", "-f", readKey], { stdio: "ignore" });
    });
    after(async () => {
        d?.cleanup();
        if (keyDir) fs.rmSync(keyDir, { recursive: true, force: true });
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("installs the gate on the host with the documented command: npm run -s read-gate -- install-script ... | ssh root@<host> sh", async () => {
        // The lab's sshd reads its own authorized_keys file, not ~/.ssh/authorized_keys.
        const service = config["sglang-serve:service"];
        const script = await d.npmScript("read-gate", [
            "install-script",
            "--vmid",
            "129",
            "--python",
            String(service.python),
            "--model",
            String((service.model as { path: string }).path),
            "--public-key",
            `${readKey}.pub`,
            "--authorized-keys",
            labPaths(labDir).authorizedKeys,
        ]);
        expectExit(script, 0, "read-gate install-script");
        const r = await run(sshArgv(info, "host", "sh"), script.stdout);
        assert.equal(r.code, 0, r.stderr);
        assert.match(
            r.stdout,
            /sglang-serve-read-gate 6 installed at \/usr\/local\/sbin\/sglang-serve-read-gate; key SHA256:\S+ in .* may run only the read commands/,
        );
        const line = fs
            .readFileSync(labPaths(labDir).authorizedKeys, "utf8")
            .split("\n")
            .find((l) => l.endsWith(" sglang-serve-read"));
        assert.match(
            line ?? "",
            /^command="\/usr\/local\/sbin\/sglang-serve-read-gate --vmid 129 --python \/opt\/sglang\/venv\/bin\/python3 --model \/models\/Qwen3\.6-27B",restrict ssh-ed25519 /,
        );

        // From now on the stack has only the read-only key, as the preview and drift jobs do.
        config["sglang-serve:host"] = { ...config["sglang-serve:host"], sshPrivateKeyPath: readKey };
        d.writeConfig(config);
    });

    it("pulumi preview --refresh with the read-only key passes and shows nothing to change", async () => {
        const r = await d.run(["preview", "--refresh", "--diff", "--expect-no-changes"]);
        expectExit(r, 0, "preview --refresh with the read-only key");
        assert.doesNotMatch(r.output, /refused/);
    });

    it("pulumi up with the read-only key changes nothing: its first write is refused and the server keeps running", async () => {
        const before = await mainPid(labDir);
        config["sglang-serve:service"].memFractionStatic = 0.85;
        d.writeConfig(config);
        // The up a deploy runs, with the deploy's API key (given since before()), but the read-only key: its reads that
        // compare the secret file are refused (issue 34 finding 8), as is any write.
        try {
            const r = await d.up();
            assert.notEqual(r.code, 0, "up with the read-only key must fail");
            assert.match(r.output, /sglang-serve-read-gate: refused/);
            assert.equal(await mainPid(labDir), before);
            assert.equal(await memFraction(info), 0.88);
            assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
        } finally {
            // From here on the runs hold no API key, as the read-only key's jobs do (their workflows give them none).
            delete d.engineEnv.SGLANG_SERVE_API_KEY;
            config["sglang-serve:service"].memFractionStatic = 0.88;
            d.writeConfig(config);
        }
        // That the refused up left the state as the box has it: the next test's drift, clean.
    });

    it("npm run drift with the read-only key and no API key in the job's environment is clean, after the refused up too", async () => {
        // /server_info is read on the box with its own key: the refresh needs none (liveArgs would show as drift). With the
        // API key in the environment the same refresh ran in the preview above (clean); a drift with it read nothing else.
        assert.equal(d.engineEnv.SGLANG_SERVE_API_KEY, undefined, "no API key since the refused up");
        const noKey = await drift(d);
        expectExit(noKey, 0, "npm run drift with the read-only key and no API key (after the refused up)");
        assert.equal((JSON.parse(noKey.stdout) as { drift: boolean }).drift, false);
    });

    it("the read-only key cannot run systemctl stop on the box, in the container or on the host, nor a read with '; id' appended", async () => {
        const before = await mainPid(labDir);
        for (const command of [
            `pct exec 129 -- systemctl stop ${UNIT}`,
            `systemctl stop ${UNIT}`,
            `pct exec 129 -- sh -c 'systemctl stop ${UNIT}'`,
            "pct stop 129",
            `${CONTAINER_READ}; id`,
        ]) {
            const r = await asReader(command);
            assert.equal(r.code, 1, `${command}: ${r.stdout}${r.stderr}`);
            assert.match(r.stderr, /^sglang-serve-read-gate: refused .*need the deploy key/s);
        }
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
        assert.equal(await mainPid(labDir), before);
        assert.equal(await onBox(labDir, "host", "pct status 129"), "status: running");
        // The gate lets a read through the same key: it is the gate, not a dead key.
        const read = await asReader(CONTAINER_READ);
        assert.equal(read.code, 0, read.stderr);
        assert.match(read.stdout, /status: running/);
    });

    it("npm run drift with the read-only key sees a change made on the box (exit 7, naming the field), and a process holding the server's port while the unit is stopped does not receive the API key: not from the read, not during that refresh", async () => {
        const port = Number(config["sglang-serve:service"].port ?? 30000);
        const cores = Number(config["sglang-serve:container"].cores);
        await onBox(labDir, "container", `systemctl stop ${UNIT}`);
        // Another process on the box takes the port, and logs every request with its Authorization header.
        const thief = [
            "import http.server",
            "class H(http.server.BaseHTTPRequestHandler):",
            "    def do_GET(self):",
            "        open('/root/thief.log', 'a').write('%s %s\\n' % (self.path, self.headers.get('Authorization')))",
            "        self.send_response(200)",
            "        self.end_headers()",
            `http.server.HTTPServer((${JSON.stringify(info.container.address)}, ${port}), H).serve_forever()`,
        ].join("\n");
        // The thief binds where the server listens, the container's address: the lab's containers share one network
        // namespace, where the wildcard address is not free while other labs' servers listen on the port.
        const listeningRow = ` ${procNetTcpAddress(info.container.address)}:${port.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;
        await onBox(labDir, "container", `: > /root/thief.log && systemd-run --unit sglang-serve-thief python3 -c ${shCommand([thief])}`);
        try {
            await onBox(labDir, "container", `for i in $(seq 150); do grep -q '${listeningRow}' /proc/net/tcp && exit 0; sleep 0.2; done; exit 1`);
            const paths = unitPaths(UNIT);
            const read = await asReader(
                remoteCommand("pct-exec", 129, serverInfoReadArgv({ unitPath: paths.unit, environmentFilePath: paths.environmentFile, timeoutSeconds: 10 })),
            );
            assert.equal(read.code, 0, read.stderr);
            const result = parseServerInfoReadOutput(read.stdout);
            assert.ok("error" in result, read.stdout);
            assert.match(
                result.error!,
                new RegExp(`port ${port} is held by pid \\d+ \\(python3\\), not by ${UNIT.replace(".", "\\.")} \\(MainPID 0\\); the API key was not sent`),
            );
            // Two things done on the box for one drift round: the unit stopped and its port taken (the server), and a
            // `pct set` of its cores (the container). Different resources: the one cannot hide the other.
            await onBox(labDir, "host", `pct set 129 --cores ${cores + 1}`);
            const refresh = await drift(d);
            expectExit(refresh, 7, "npm run drift after pct set, the unit stopped and its port taken");
            const report = JSON.parse(refresh.stdout) as { changes: { field: string; declared: unknown; actual: unknown }[] };
            assert.ok(
                report.changes.some((c) => c.field === "settings.cores" && c.actual === cores + 1),
                refresh.stdout,
            );
            // The runner's GET /health goes out without a key, as it always does; nothing else reached the port.
            const asked = (await onBox(labDir, "container", "cat /root/thief.log")).split("\n").filter(Boolean);
            assert.ok(
                asked.every((l) => l === "/health None"),
                `the process that holds the port was asked: ${asked.join("; ")}`,
            );
        } finally {
            await onBox(labDir, "container", "systemctl stop sglang-serve-thief; rm -f /root/thief.log");
            await onBox(labDir, "container", `systemctl start ${UNIT}`);
            await onBox(labDir, "host", `pct set 129 --cores ${cores}`);
        }
    });
});

/** An IPv4 address as /proc/net/tcp prints it: the 32-bit value in the kernel's (little-endian) byte order, in hex. */
function procNetTcpAddress(ip: string): string {
    return ip
        .split(".")
        .reverse()
        .map((b) => Number(b).toString(16).toUpperCase().padStart(2, "0"))
        .join("");
}
