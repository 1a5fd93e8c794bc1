import assert from "node:assert/strict";
import * as fs from "fs";
import { RemoteHost } from "../../remote/remote-host";
import { SshPool } from "../../remote/ssh-pool";
import { TestSshd } from "./sshd-fixture";

// Both topologies against a real sshd. For pct-exec, a fake `pct` on the
// session's PATH checks the argv shape and records the vmid, then runs the
// command as `pct exec` would (stdin forwarded).
describe("RemoteHost against a real sshd", function () {
    this.timeout(30_000);
    let sshd: TestSshd;
    let pool: SshPool;
    let commands: string[];

    before(async () => {
        sshd = await TestSshd.create();
        fs.writeFileSync(
            sshd.file("bin/pct"),
            [
                "#!/bin/sh",
                `[ "$1" = exec ] || { echo "fake pct: only exec" >&2; exit 2; }`,
                `echo "$2" >> ${sshd.file("pct-calls")}`,
                `[ "$3" = -- ] || { echo "fake pct: expected -- after the vmid" >&2; exit 2; }`,
                "shift 3",
                'exec "$@"',
                "",
            ].join("\n"),
            { mode: 0o755 },
        );
        await sshd.start();
    });
    after(async () => {
        await sshd?.destroy();
    });
    beforeEach(() => {
        commands = [];
        pool = new SshPool({ log: () => undefined, onCommand: (_h, c) => commands.push(c) });
        fs.rmSync(sshd.file("pct-calls"), { force: true });
    });
    afterEach(async () => {
        await pool.closeAll();
    });

    const direct = () => new RemoteHost({ pool, target: sshd.target(), topology: "direct" });
    const pct = () => new RemoteHost({ pool, target: sshd.target(), topology: "pct-exec", vmid: 129 });
    const awkward = ["a b", "it's", "$HOME", "`id`", "semi;colon", "new\nline", ""];

    for (const [name, host] of [
        ["direct", direct],
        ["pct-exec", pct],
    ] as const) {
        describe(name, () => {
            it("passes every argument through unchanged, whatever it contains", async () => {
                const r = await host().run(["printf", "[%s]", ...awkward]);
                assert.equal(r.code, 0, r.stderr);
                assert.equal(r.stdout, awkward.map((a) => `[${a}]`).join(""));
            });

            it("returns a non-zero exit and throws it from runChecked", async () => {
                assert.equal((await host().run(["sh", "-c", "exit 5"])).code, 5);
                await assert.rejects(host().runChecked(["sh", "-c", "echo nope >&2; exit 5"]), /exit code 5.*\nnope/s);
            });

            it("writes a file (content through stdin) and reads it back", async () => {
                const file = sshd.file(`${name} written.env`);
                const content = "KEY='v a l'\n$NOT_EXPANDED\n";
                await host().writeFile(file, content, 0o600);
                assert.equal(fs.readFileSync(file, "utf8"), content);
                assert.equal(fs.statSync(file).mode & 0o777, 0o600);
                assert.equal(await host().readFile(file), content);
                assert.ok(
                    commands.every((c) => !c.includes("v a l")),
                    commands.join("\n"),
                );
            });

            it("reads a missing file as null", async () => {
                assert.equal(await host().readFile(sshd.file("does-not-exist")), null);
            });
        });
    }

    it("wraps container commands in pct exec with the vmid", async () => {
        await pct().run(["true"]);
        assert.equal(fs.readFileSync(sshd.file("pct-calls"), "utf8"), "129\n");
        assert.match(commands[0]!, /^pct exec 129 -- /);
    });

    it("needs a vmid for pct-exec", () => {
        assert.throws(() => new RemoteHost({ pool, target: sshd.target(), topology: "pct-exec" }), /needs the container's vmid/);
    });

    it("describes itself for messages", () => {
        assert.equal(pct().describe(), `${sshd.target().user}@127.0.5.1:${sshd.port} (pct exec 129)`);
    });
});
