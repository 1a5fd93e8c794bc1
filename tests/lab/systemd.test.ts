import assert from "node:assert/strict";
import { escapeSpecifiers, quoteWord, renderExecStart } from "../../core/unit/systemd-unit";
import { exec, installUnit, journalOnce, LAB_WAIT_MS, lab, ok, runUntilOutput, waitFor } from "./lab-fixture";

const sleeper = (name: string, extra = "") => `[Unit]
Description=lab test ${name}

[Service]
ExecStart=/bin/sleep 300
${extra}
[Install]
WantedBy=multi-user.target
`;

async function prop(unit: string, p: string): Promise<string> {
    return (await ok("container", `systemctl show -p ${p} --value ${unit}`)).trim();
}

describe("the real systemd 252, systemctl and journalctl in container 129", function () {
    before(async function () {
        this.timeout(120_000);
        await lab();
    });

    it("starts a unit only after it is known, and answers is-active like systemd", async () => {
        await installUnit("t-basic.service", sleeper("basic"));
        await ok("container", "systemctl daemon-reload && systemctl start t-basic");
        const active = await exec("container", "systemctl is-active t-basic");
        assert.deepEqual([active.code, active.stdout], [0, "active\n"]);
        await ok("container", "systemctl stop t-basic");
        const inactive = await exec("container", "systemctl is-active t-basic");
        assert.deepEqual([inactive.code, inactive.stdout], [3, "inactive\n"]);
    });

    it("answers through pct exec on the host as it does in the container", async () => {
        await ok("container", "systemctl start t-basic");
        const r = await exec("host", "pct exec 129 -- systemctl is-active t-basic");
        assert.deepEqual([r.code, r.stdout], [0, "active\n"]);
        await ok("host", "pct exec 129 -- systemctl stop t-basic");
        const s = await exec("host", "pct exec 129 -- systemctl is-active t-basic");
        assert.deepEqual([s.code, s.stdout], [3, "inactive\n"]);
    });

    it("reports unknown units with systemd's messages and exit codes", async () => {
        const status = await exec("container", "systemctl status nope");
        assert.deepEqual([status.code, status.stderr], [4, "Unit nope.service could not be found.\n"]);
        const start = await exec("container", "systemctl start nope");
        assert.deepEqual([start.code, start.stderr], [5, "Failed to start nope.service: Unit nope.service not found.\n"]);
        const active = await exec("container", "systemctl is-active nope");
        assert.deepEqual([active.code, active.stdout], [3, "inactive\n"]);
        assert.equal(await ok("container", "systemctl show -p LoadState,ActiveState nope"), "LoadState=not-found\nActiveState=inactive\n");
    });

    it("keeps the loaded definition of a changed unit until daemon-reload, with systemd's warning", async () => {
        await installUnit("t-reload.service", sleeper("reload", "Environment=VERSION=one"));
        await ok("container", "systemctl daemon-reload && systemctl start t-reload");
        await installUnit("t-reload.service", sleeper("reload", "Environment=VERSION=two"));
        const restart = await exec("container", "systemctl restart t-reload");
        assert.equal(restart.code, 0);
        assert.equal(
            restart.stderr,
            "Warning: The unit file, source configuration file or drop-ins of t-reload.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n",
        );
        assert.equal(await prop("t-reload", "Environment"), "VERSION=one");
        assert.equal(await prop("t-reload", "NeedDaemonReload"), "yes");
        await ok("container", "systemctl daemon-reload");
        assert.equal(await prop("t-reload", "Environment"), "VERSION=two");
        assert.equal(await prop("t-reload", "NeedDaemonReload"), "no");
        await ok("container", "systemctl stop t-reload");
    });

    it("expands ${VAR} and $VAR from Environment= and EnvironmentFile= in ExecStart", async () => {
        await ok("container", "cat > /etc/sglang/t-env.env", '# comment\nB="two words"\nC=from-file\n');
        await installUnit(
            "t-env.service",
            `[Service]\nType=oneshot\nEnvironment="A=one" "C=from-unit"\nEnvironmentFile=/etc/sglang/t-env.env\nEnvironmentFile=-/etc/sglang/missing.env\nExecStart=/usr/bin/printf "[%%s]" \${A} $B \${B} \${C} "x\\ty"\n`,
        );
        await ok("container", "systemctl daemon-reload && systemctl start t-env");
        const out = await ok("container", "journalctl -u t-env -o cat --no-pager | grep '^\\['");
        assert.equal(out, "[one][two][words][two words][from-file][x\ty]\n");
    });

    it("restarts on failure, counts NRestarts, and gives up at the start limit (Result stays exit-code)", async function () {
        this.timeout(2 * LAB_WAIT_MS);
        await installUnit(
            "t-crash.service",
            `[Unit]\nStartLimitBurst=3\nStartLimitIntervalSec=30\n[Service]\nExecStart=/bin/sh -c 'echo crashing; exit 3'\nRestart=on-failure\nRestartSec=200ms\n`,
        );
        await ok("container", "systemctl daemon-reload && systemctl start t-crash");
        await waitFor("t-crash to fail at the start limit", async () => ((await prop("t-crash", "ActiveState")) === "failed" ? true : undefined));
        // systemd 252: a crash loop that hits the start limit keeps the last run's result.
        assert.equal(await prop("t-crash", "Result"), "exit-code");
        assert.equal(await prop("t-crash", "NRestarts"), "3");
        const journal = await ok("container", "journalctl -u t-crash -o cat --no-pager");
        assert.match(journal, /^t-crash\.service: Main process exited, code=exited, status=3\/NOTIMPLEMENTED$/m);
        assert.match(journal, /^t-crash\.service: Scheduled restart job, restart counter is at 3\.$/m);
        assert.match(journal, /^t-crash\.service: Start request repeated too quickly\.\nt-crash\.service: Failed with result 'exit-code'\.$/m);
        const again = await exec("container", "systemctl start t-crash");
        assert.equal(again.code, 1);
        assert.match(again.stderr, /^Job for t-crash\.service failed because the control process exited with error code\.\n/);
        await ok("container", "systemctl reset-failed t-crash");
        assert.equal(await prop("t-crash", "ActiveState"), "inactive");
    });

    it("kills a unit that ignores SIGTERM after TimeoutStopSec", async function () {
        this.timeout(30_000);
        await installUnit("t-stubborn.service", `[Service]\nExecStart=/bin/sh -c 'trap "" TERM; while :; do sleep 0.2; done'\nTimeoutStopSec=1\n`);
        await ok("container", "systemctl daemon-reload && systemctl start t-stubborn");
        await ok("container", "systemctl stop t-stubborn");
        assert.equal(await prop("t-stubborn", "ActiveState"), "failed");
        assert.equal(await prop("t-stubborn", "Result"), "timeout");
        assert.match(await ok("container", "journalctl -u t-stubborn -o cat"), /State 'stop-sigterm' timed out\. Killing\./);
    });

    it("tracks MainPID and ExecMainStartTimestamp, and keeps units running after the ssh session ends", async () => {
        await installUnit("t-pid.service", sleeper("pid"));
        await ok("container", "systemctl daemon-reload; systemctl start t-pid");
        const show = await ok("container", "systemctl show -p ActiveState,SubState,MainPID,NRestarts,ExecMainStartTimestamp t-pid");
        const m = /^MainPID=(\d+)\nNRestarts=0\nExecMainStartTimestamp=\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\nActiveState=active\nSubState=running\n$/.exec(
            show,
        );
        assert.ok(m, `unexpected show output:\n${show}`);
        assert.equal((await ok("container", `cat /proc/${m[1]}/cmdline | tr '\\0' ' '`)).trim(), "/bin/sleep 300");
        assert.equal((await ok("container", "systemctl is-active t-pid")).trim(), "active", "still running in a later session");
        await ok("container", "systemctl stop t-pid");
        assert.equal(await prop("t-pid", "MainPID"), "0");
    });

    it("enables and disables with [Install] symlinks", async () => {
        await installUnit("t-enable.service", sleeper("enable"));
        const before = await exec("container", "systemctl is-enabled t-enable");
        assert.deepEqual([before.code, before.stdout], [1, "disabled\n"]);
        const en = await exec("container", "systemctl enable t-enable");
        assert.equal(en.stderr, "Created symlink /etc/systemd/system/multi-user.target.wants/t-enable.service → /etc/systemd/system/t-enable.service.\n");
        assert.equal(await ok("container", "systemctl is-enabled t-enable"), "enabled\n");
        const dis = await exec("container", "systemctl disable t-enable");
        assert.equal(dis.stderr, 'Removed "/etc/systemd/system/multi-user.target.wants/t-enable.service".\n');
        const cat = await ok("container", "systemctl cat t-enable");
        assert.match(cat, /^# \/etc\/systemd\/system\/t-enable\.service\n\[Unit\]/);
    });

    it("reads the journal by unit with -n, -o cat, --show-cursor and --after-cursor", async () => {
        /** t-log's journal lines once `count` of them are the echoes. */
        const journalWithEchoes = async (count: number): Promise<string[]> => {
            const echoes = (text: string) => text.split("\n").filter((l) => l.startsWith("line-")).length;
            return (await journalOnce("t-log", `${count} echoes`, (text) => echoes(text) >= count)).trimEnd().split("\n");
        };
        await installUnit("t-log.service", `[Service]\nType=oneshot\nExecStart=/bin/sh -c 'for i in 1 2 3 4; do echo line-$i; done'\n`);
        await ok("container", "systemctl daemon-reload && systemctl start t-log");
        // journald takes the unit's stdout stream asynchronously and systemd's own lines over another socket: under load
        // the echoes land a moment after "Finished", and in either order with it.
        const whole = await journalWithEchoes(4);
        assert.deepEqual(
            whole.filter((l) => l.startsWith("line-")),
            ["line-1", "line-2", "line-3", "line-4"],
        );
        assert.ok(whole.includes("t-log.service: Deactivated successfully.") && whole.includes("Finished t-log.service."), whole.join("\n"));
        const lines = await ok("container", "journalctl -u t-log -o cat -n 3 --no-pager --show-cursor");
        const [l1, l2, l3, cursorLine] = lines.trimEnd().split("\n");
        assert.deepEqual([l1, l2, l3], whole.slice(-3));
        const cursor = /^-- cursor: (s=.*)$/.exec(cursorLine ?? "")?.[1];
        assert.ok(cursor, `no cursor in: ${lines}`);
        // Nothing after the cursor: no output at all (no "-- No entries --"); with --show-cursor the same cursor again.
        assert.equal(await ok("container", `journalctl -u t-log -o cat --after-cursor='${cursor}'`), "");
        assert.equal(await ok("container", `journalctl -u t-log -q -o cat --show-cursor --after-cursor='${cursor}'`), `-- cursor: ${cursor}\n`);
        await ok("container", "systemctl start t-log");
        await journalWithEchoes(8);
        const after = await ok("container", `journalctl -u t-log -o cat --after-cursor='${cursor}'`);
        assert.equal(after.split("\n").filter((l) => l.startsWith("line-")).length, 4);
        const short = await ok("container", "journalctl -u t-log -n 1 -g '^Finished' --no-pager");
        assert.match(short, /^\w{3} \d\d \d\d:\d\d:\d\d llm-two systemd\[1\]: Finished t-log\.service\.\n$/);
        const iso = await ok("container", "journalctl -u t-log -n 1 -g '^Finished' -o short-iso");
        assert.match(iso, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000 llm-two systemd\[1\]: Finished t-log\.service\.\n$/);
        assert.equal(await ok("container", "journalctl -u t-log --since '1 hour ago' -g line-2 -o cat"), "line-2\nline-2\n");
        assert.equal(await ok("container", "journalctl -u t-log --since tomorrow"), "-- No entries --\n");
    });

    it("exits 1 without a word for -q --show-cursor --since when nothing matches (the readiness wait's first poll)", async () => {
        const r = await exec("container", "journalctl -u t-never-ran --no-pager -q -o cat --show-cursor --since=@$(date +%s)");
        assert.deepEqual([r.code, r.stdout, r.stderr], [1, "", ""]);
    });

    it("hands the program exactly the argv the stack renders into ExecStart and the values it writes into Environment= (hostile values)", async () => {
        // What core/unit/systemd-unit.ts writes for extraArgs and service.environment, read back by the real systemd.
        const hostile = [
            "--json-model-override-args",
            '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}',
            "--cuda-graph-bs",
            "1",
            "2",
            "4",
            "8",
            "--x=50% %n %% $HOME $$ ${SGLANG_API_KEY}",
            "${SGLANG_API_KEY}",
            ";",
            "\\;",
            "a;b",
            "a\\b \\n",
            'it\'s "quoted"',
            "tab\there",
            "字 😀",
            "-1",
            "",
        ];
        const script = "import json, os, sys; open('/run/t-argv.json', 'w').write(json.dumps([sys.argv[1:], os.environ['X'], os.environ['Y']]))";
        // SGLANG_API_KEY is set in the unit's environment: a ${SGLANG_API_KEY} word must still reach the program literally.
        const argv = ["/usr/bin/python3", "-c", script, "--x", "${SGLANG_API_KEY}", ...hostile];
        const environment = { X: 'two words, "quoted", 50%, $HOME ${Y} \\ it\'s', Y: "%%;$$" };
        const env = Object.entries(environment).map(([name, value]) => `Environment=${quoteWord(escapeSpecifiers(`${name}=${value}`))}`);
        await installUnit(
            "t-argv.service",
            ["[Service]", "Type=oneshot", "Environment=SGLANG_API_KEY=the-key", ...env, `ExecStart=${renderExecStart(argv)}`, ""].join("\n"),
        );
        await ok("container", "rm -f /run/t-argv.json && systemctl daemon-reload && systemctl start t-argv");
        const [args, x, y] = JSON.parse(await ok("container", "cat /run/t-argv.json")) as [string[], string, string];
        assert.deepEqual(args, ["--x", "${SGLANG_API_KEY}", ...hostile]);
        assert.deepEqual([x, y], [environment.X, environment.Y]);
    });

    it("follows the journal with -f", async () => {
        await installUnit("t-follow.service", `[Service]\nExecStart=/bin/sh -c 'sleep 1.5; echo followed-line; sleep 300'\n`);
        await ok("container", "systemctl daemon-reload && systemctl start t-follow");
        const out = await runUntilOutput("journalctl -u t-follow -f -o cat", "^followed-line$");
        assert.match(out.stdout, /^followed-line$/m);
        await ok("container", "systemctl stop t-follow");
    });
});
