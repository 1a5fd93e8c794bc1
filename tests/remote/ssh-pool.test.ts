import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { fingerprintOfKeyBlob } from "../../core/secrets/host-key";
import { SshError } from "../../remote/ssh-error";
import { parsePinnedHostKey } from "../../remote/ssh-host-key";
import { SshPool } from "../../remote/ssh-pool";
import { startAgent, TestAgent } from "./ssh-agent-fixture";
import { opensshFingerprint, TestSshd } from "./sshd-fixture";

// Against a real sshd on 127.0.5.1 (see sshd-fixture.ts). MaxSessions 4 so
// the channel bound (3 here) is observable.
describe("SshPool against a real sshd", function () {
    this.timeout(30_000);
    let sshd: TestSshd;
    let pool: SshPool;
    let logs: string[];
    let commands: string[];

    before(async () => {
        sshd = await TestSshd.create(["MaxSessions 4"]);
        await sshd.start();
    });
    after(async () => {
        await sshd?.destroy();
    });
    beforeEach(() => {
        logs = [];
        commands = [];
        pool = new SshPool({
            maxChannelsPerConnection: 3,
            retryBackoffMs: 20,
            log: (m) => logs.push(m),
            onCommand: (_host, c) => commands.push(c),
        });
    });
    afterEach(async () => {
        await pool.closeAll();
    });

    const sshError = (kind: SshError["kind"], pattern?: RegExp) => (e: unknown) => {
        assert.ok(e instanceof SshError, String(e));
        assert.equal(e.kind, kind, e.message);
        if (pattern) assert.match(e.message, pattern);
        return true;
    };

    it("returns exit code, stdout and stderr, and does not throw on a non-zero exit", async () => {
        const r = await pool.exec(sshd.target(), "echo out; echo err >&2; exit 3");
        assert.deepEqual(r, { code: 3, stdout: "out\n", stderr: "err\n" });
    });

    it("feeds stdin to the command", async () => {
        const r = await pool.exec(sshd.target(), "cat", { stdin: "line one\nline two\n" });
        assert.equal(r.stdout, "line one\nline two\n");
    });

    it("gives commands that read stdin an end of file when no stdin is given", async () => {
        const r = await pool.exec(sshd.target(), "wc -c", { timeoutMs: 10_000 });
        assert.equal(r.stdout.trim(), "0");
    });

    it("reuses one connection for many commands", async () => {
        for (let i = 0; i < 15; i++) {
            const r = await pool.exec(sshd.target(), `echo ${i}`);
            assert.equal(r.stdout, `${i}\n`);
        }
        const s = pool.stats()[`${sshd.target().user}@127.0.5.1:${sshd.port}`]!;
        assert.equal(s.connectionsOpened, 1);
        assert.equal(s.commandsRun, 15);
    });

    it("shares one connection between concurrent commands and keeps channels within the bound", async () => {
        // sshd allows 4 sessions per connection here and the pool 3 (sshd frees a
        // session slot a moment after the channel closed): without the bound, some of
        // these 12 would be refused.
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => pool.exec(sshd.target(), `sleep 0.2; echo ${i}`)));
        assert.deepEqual(
            results.map((r) => r.stdout.trim()),
            Array.from({ length: 12 }, (_, i) => String(i)),
        );
        const s = Object.values(pool.stats())[0]!;
        assert.equal(s.connectionsOpened, 1);
        assert.equal(s.maxConcurrentChannels, 3);
    });

    it("runs commands with the fixture's PATH and empty HOME, so no dotfile of the machine runs", async () => {
        const r = await pool.exec(sshd.target(), 'echo "$HOME"; echo "$PATH"; ls -A "$HOME" | wc -l');
        assert.deepEqual(r.stdout.trim().split("\n"), [
            sshd.file("home"),
            `${sshd.file("bin")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
            "0",
        ]);
    });

    it("resets its stats", async () => {
        await pool.exec(sshd.target(), "true");
        pool.resetStats();
        assert.deepEqual(pool.stats(), {});
    });

    it("refuses a host whose key is not the pinned one, naming both fingerprints, without retrying", async () => {
        const offered = opensshFingerprint(sshd.file("host_key.pub"));
        const expected = opensshFingerprint(sshd.file("other_host_key.pub"));
        await assert.rejects(
            pool.exec(sshd.target({ hostKey: sshd.otherHostKey }), "true"),
            sshError(
                "host-key",
                new RegExp(`127\\.0\\.5\\.1:${sshd.port}.*${offered.replace(/[+/]/g, "\\$&")}.*pinned key is ssh-ed25519 ${expected.replace(/[+/]/g, "\\$&")}`),
            ),
        );
        assert.equal(Object.values(pool.stats())[0]!.connectionsOpened, 1);
        assert.deepEqual(logs, []);
    });

    it("refuses to connect without a pinned key", async () => {
        await assert.rejects(pool.exec(sshd.target({ hostKey: "" }), "true"), sshError("config", /no pinned host key for .*127\.0\.5\.1/));
        assert.deepEqual(pool.stats(), {});
    });

    it("reports an authentication failure without retrying and without the key", async () => {
        const wrongKey = fs.readFileSync(sshd.file("other_client_key"), "utf8");
        await assert.rejects(pool.exec(sshd.target({ privateKey: wrongKey }), "true"), (e: unknown) => {
            sshError("auth", /authentication as \w+ to .*127\.0\.5\.1.* failed/)(e);
            const body = wrongKey.split("\n")[1]!;
            assert.ok(!(e as Error).message.includes(body));
            return true;
        });
        assert.equal(Object.values(pool.stats())[0]!.connectionsOpened, 1);
        assert.deepEqual(logs, []);
    });

    it("uses a passphrase-protected key, and a wrong passphrase is an error that does not show it", async () => {
        const key = fs.readFileSync(sshd.file("protected_client_key"), "utf8");
        const ok = await pool.exec(sshd.target({ privateKey: key, passphrase: "correct horse battery staple" }), "echo ok");
        assert.equal(ok.stdout, "ok\n");
        await pool.closeAll();
        await assert.rejects(pool.exec(sshd.target({ privateKey: key, passphrase: "wrong passphrase here" }), "true"), (e: unknown) => {
            assert.ok(e instanceof SshError);
            assert.ok(!e.message.includes("wrong passphrase here"));
            return true;
        });
    });

    describe("with ssh-agent", () => {
        let agentDir: string;
        let agent: TestAgent | undefined;
        beforeEach(() => {
            agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-agent-"));
        });
        afterEach(() => {
            agent?.stop();
            agent = undefined;
            fs.rmSync(agentDir, { recursive: true, force: true });
        });

        it("logs in with a key the agent holds; the target carries only the socket path", async () => {
            agent = startAgent(path.join(agentDir, "agent.sock"), sshd.file("client_key"));
            const r = await pool.exec(sshd.target({ privateKey: undefined, agent: agent.sock }), "echo via-agent");
            assert.equal(r.stdout, "via-agent\n");
        });

        it("says the server refused every key of the agent, naming the socket", async () => {
            agent = startAgent(path.join(agentDir, "agent.sock"), sshd.file("other_client_key"));
            await assert.rejects(
                pool.exec(sshd.target({ privateKey: undefined, agent: agent.sock }), "true"),
                sshError("auth", /refused every key of the ssh-agent at .*agent\.sock/),
            );
        });

        it("says when the agent's socket cannot be used", async () => {
            const sock = `${sshd.file("no-such-agent")}.sock`;
            await assert.rejects(
                pool.exec(sshd.target({ privateKey: undefined, agent: sock }), "true"),
                sshError("auth", /ssh-agent at .*no-such-agent\.sock \(SSH_AUTH_SOCK\) cannot be used/),
            );
        });

        it("refuses a target with neither a key nor an agent", async () => {
            await assert.rejects(pool.exec(sshd.target({ privateKey: undefined }), "true"), sshError("config", /no private key and no ssh-agent/));
        });
    });

    it("reconnects when the connection drops while a command runs, with a visible message", async () => {
        await pool.exec(sshd.target(), "true");
        const running = pool.exec(sshd.target(), "sleep 1; echo finished");
        await sshd.waitForCommand("sleep");
        assert.ok(sshd.killSessions() > 0);
        const r = await running;
        assert.equal(r.stdout, "finished\n");
        assert.equal(logs.length, 1, logs.join("\n"));
        assert.match(logs[0]!, new RegExp(`^ssh: connection to \\w+@127\\.0\\.5\\.1:${sshd.port} \\(test-sshd\\) dropped \\(.+\\); reconnecting \\(1/3\\)$`));
        const s = Object.values(pool.stats())[0]!;
        assert.equal(s.connectionsOpened, 2);
        assert.equal(s.reconnects, 1);
    });

    it("reconnects when an idle pooled connection was dropped", async () => {
        await pool.exec(sshd.target(), "true");
        sshd.killSessions();
        const r = await pool.exec(sshd.target(), "echo again");
        assert.equal(r.stdout, "again\n");
        assert.equal(Object.values(pool.stats())[0]!.connectionsOpened, 2);
    });

    it("gives up after three reconnects and names the host when the server stays away", async () => {
        await pool.exec(sshd.target(), "true");
        await sshd.stop();
        try {
            await assert.rejects(
                pool.exec(sshd.target(), "echo never"),
                sshError("connection", new RegExp(`127\\.0\\.5\\.1:${sshd.port}.*gave up after 3 reconnect attempt\\(s\\).*echo never`)),
            );
            assert.equal(logs.length, 3, logs.join("\n"));
            assert.match(logs[2]!, /\(3\/3\)$/);
            assert.equal(Object.values(pool.stats())[0]!.reconnects, 3);
        } finally {
            await sshd.start();
        }
    });

    it("does not re-run a command that asked not to be retried", async () => {
        await pool.exec(sshd.target(), "true");
        const running = pool.exec(sshd.target(), "sleep 1", { retry: false });
        await sshd.waitForCommand("sleep");
        sshd.killSessions();
        await assert.rejects(running, sshError("connection", /gave up after 0 reconnect/));
    });

    it("kills a command that runs past its timeout and keeps the connection usable", async () => {
        await assert.rejects(pool.exec(sshd.target(), "sleep 20", { timeoutMs: 300 }), sshError("timeout", /timed out after 300 ms: sleep 20/));
        const r = await pool.exec(sshd.target(), "echo alive");
        assert.equal(r.stdout, "alive\n");
    });

    it("execChecked throws with the command, the exit code and stderr's tail, never stdin", async () => {
        const secret = "s3cret-api-key-0123456789";
        await assert.rejects(pool.execChecked(sshd.target(), "cat >/dev/null; echo boom >&2; exit 7", { stdin: `KEY=${secret}\n` }), (e: unknown) => {
            sshError("command", /exit code 7: cat >\/dev\/null; echo boom >&2; exit 7\nboom/)(e);
            assert.ok(!(e as Error).message.includes(secret));
            return true;
        });
    });

    it("writes a file with its mode and content, the content only on stdin", async () => {
        const file = sshd.file("it's a file.env");
        const content = "SGLANG_API_KEY=k3y-$HOME-`id`-'quoted'\nSECOND=line\n";
        await pool.writeFile(sshd.target(), file, content, 0o640);
        assert.equal(fs.readFileSync(file, "utf8"), content);
        assert.equal(fs.statSync(file).mode & 0o7777, 0o640);
        assert.equal(commands.length, 1);
        assert.ok(!commands[0]!.includes("k3y"), commands[0]);
        // Overwrite in place (atomic rename) with a narrower mode.
        await pool.writeFile(sshd.target(), file, "x=1\n", 0o600);
        assert.equal(fs.readFileSync(file, "utf8"), "x=1\n");
        assert.equal(fs.statSync(file).mode & 0o7777, 0o600);
        assert.deepEqual(
            fs.readdirSync(sshd.dir).filter((f) => f.includes(".tmp.")),
            [],
        );
    });

    it("fails a write into a missing directory", async () => {
        await assert.rejects(pool.writeFile(sshd.target(), sshd.file("missing-dir/file"), "x", 0o600), sshError("command", /exit code 1/));
    });

    it("refuses to write onto a directory and leaves no temporary file", async () => {
        fs.mkdirSync(sshd.file("a-dir"));
        await assert.rejects(pool.writeFile(sshd.target(), sshd.file("a-dir"), "x", 0o600), sshError("command", /a-dir is a directory/));
        assert.deepEqual(fs.readdirSync(sshd.file("a-dir")), []);
        assert.deepEqual(
            fs.readdirSync(sshd.dir).filter((f) => f.includes(".tmp.")),
            [],
        );
    });
});

describe("SshPool against an sshd that allows fewer sessions than the pool's bound", function () {
    this.timeout(30_000);
    const started: TestSshd[] = [];
    let pool: SshPool;
    let commands: string[];

    const sshdWith = async (maxSessions: number): Promise<TestSshd> => {
        const d = await TestSshd.create([`MaxSessions ${maxSessions}`]);
        started.push(d);
        await d.start();
        return d;
    };
    beforeEach(() => {
        commands = [];
        pool = new SshPool({ maxChannelsPerConnection: 4, retryBackoffMs: 20, log: () => undefined, onCommand: (_host, c) => commands.push(c) });
    });
    afterEach(async () => {
        await pool.closeAll();
    });
    after(async () => {
        await Promise.all(started.map((d) => d.destroy()));
    });

    // What a loaded box does to the pool: sshd still counts a session whose
    // channel the pool saw close, so it refuses one the pool's bound allows.
    // Here MaxSessions 2 against a bound of 4 makes that refusal certain.
    it("opens a channel the server refused while others were open again once one of them closed: every command runs once", async () => {
        const sshd = await sshdWith(2);
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.exec(sshd.target(), `sleep 0.3; echo ${i}`)));
        assert.deepEqual(
            results.map((r) => r.stdout.trim()),
            Array.from({ length: 8 }, (_, i) => String(i)),
        );
        const s = Object.values(pool.stats())[0]!;
        assert.equal(s.connectionsOpened, 1);
        assert.ok(commands.length > 8, `no channel was refused (${commands.length} opened), so this test shows nothing`);
    });

    it("fails with the server's refusal when no other channel is open, opening it once", async () => {
        const sshd = await sshdWith(0);
        await assert.rejects(pool.exec(sshd.target(), "true"), (e: unknown) => {
            assert.ok(e instanceof SshError, String(e));
            assert.equal(e.kind, "channel", e.message);
            assert.match(e.message, /the server refused a session channel/);
            return true;
        });
        assert.equal(commands.length, 1);
    });
});

describe("pinned host keys", () => {
    it("computes the fingerprint OpenSSH prints", async () => {
        const d = await TestSshd.create();
        try {
            const pinned = parsePinnedHostKey(d.hostKey, "test");
            assert.equal(fingerprintOfKeyBlob(pinned.blob), opensshFingerprint(d.file("host_key.pub")));
        } finally {
            await d.destroy();
        }
    });

    it("rejects a pin whose type does not match its data", () => {
        const [, b64] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl".split(" ");
        assert.throws(
            () => parsePinnedHostKey(`ecdsa-sha2-nistp256 ${b64}`, "h"),
            /the pinned host key for h says ecdsa-sha2-nistp256 but the key blob holds ssh-ed25519/,
        );
    });

    it("rejects a known_hosts line with the host name in front", () => {
        assert.throws(
            () => parsePinnedHostKey("10.1.2.5 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", "h"),
            /the pinned host key for h must be "<type> <base64>"/,
        );
    });
});
