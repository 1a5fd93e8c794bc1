import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { labDown, simulatorEvents } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";
import { httpGetJson } from "../../remote/probe";
import { healthStatus, mainPid, managedLabConfig, onBox, service, serviceUrn, startLab, UNIT } from "./lab-box";

const API_KEY = "e2e-lab-api-key-0123456789abcdef";

async function liveServerInfo(info: LabInfo): Promise<Record<string, unknown>> {
    const r = await httpGetJson(`http://${info.container.address}:30000/server_info`, { timeoutMs: 10_000, bearer: API_KEY });
    assert.ok("status" in r && r.status === 200, `server_info: ${JSON.stringify(r).slice(0, 300)}`);
    return r.body as Record<string, unknown>;
}

/** The property lines of a diff (`up --diff`) that change something (`~`, `+`, `-` with `=>`), for "exactly that flag" checks. */
function changedLines(output: string): string[] {
    return output.split("\n").filter((l) => /=>/.test(l));
}

// A change that crashes at startup, and one that never becomes ready, are the
// fault matrix's rows (tests/e2e/faults-start.test.ts: rolled back, the change
// pending, the journal tail in the error without the key), not run here again.
describe("deploying to the lab with the real engine, kpro5 topology (pct exec through the host)", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;
    let config: StackConfigFile;

    before(async () => {
        ({ labDir, info } = await startLab("deploy", 113));
        config = await managedLabConfig(labDir, info);
        d = await Deployment.create("lab", config);
        d.giveApiKey(API_KEY);
    });
    after(async () => {
        d?.cleanup();
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("a fresh up brings the server to ready and exports endpoint, unit name and live args", async () => {
        const containerConfigBefore = await onBox(labDir, "host", "pct config 129");
        const r = await d.up();
        expectExit(r, 0, "up");
        const outputs = await d.outputs();
        assert.equal(outputs.endpoint, `http://${info.container.address}:30000`);
        assert.equal(outputs.unitName, UNIT);
        const live = outputs.liveServerArgs as { speculative?: { algorithm?: string }; tensorParallelSize?: number };
        assert.equal(live.speculative?.algorithm, "NEXTN");
        assert.equal(live.tensorParallelSize, 2);
        assert.equal(await healthStatus(info), 200);
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
        // Adopted, not recreated or restarted: the container's config is as it was.
        assert.equal(await onBox(labDir, "host", "pct status 129"), "status: running");
        assert.equal(await onBox(labDir, "host", "pct config 129"), containerConfigBefore);
    });

    it("keeps the API key out of the unit file and writes it to 0600 files: the environment file and SGLang's config file", async () => {
        const unit = await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`);
        assert.doesNotMatch(unit, new RegExp(API_KEY));
        assert.match(unit, /--config \/etc\/sglang\/qwen\.yaml/);
        assert.doesNotMatch(unit, /--api-key/);
        assert.equal(await onBox(labDir, "container", "stat -c %a /etc/sglang/qwen.env"), "600");
        assert.equal(await onBox(labDir, "container", "stat -c %a /etc/sglang/qwen.yaml"), "600");
        const state = fs.readFileSync(path.join(d.dir, ".state", "backend", ".pulumi", "stacks", "sglang-serve", "lab.json"), "utf8");
        const at = state.indexOf(API_KEY);
        assert.equal(at, -1, `the API key is in the state in plaintext: ...${state.slice(Math.max(0, at - 300), at + 60)}`);
        // Nor encrypted: the state holds no secret at all (issue 19).
        assert.doesNotMatch(state, /"ciphertext"|1b47061264138c4ac30d75fd1eb44270/);
    });

    it("keeps the API key off the server's command line and out of systemctl status, and a keyless request still gets 401", async () => {
        const pid = await mainPid(labDir);
        assert.match(pid, /^[1-9]\d*$/);
        // The server's command line as systemd started it: the lab's venv records it ("launched")
        // before the release's own argparse runs and the simulator takes the process over.
        const launched = simulatorEvents(labDir).filter((e) => e.event === "launched");
        const argv = String(launched[launched.length - 1]?.detail ?? "");
        assert.match(argv, /--config \/etc\/sglang\/qwen\.yaml/);
        assert.ok(!argv.includes(API_KEY) && !argv.includes("--api-key"), `the key is on the command line: ${argv}`);
        // Every process of the unit now, the main one and its children.
        const cmdlines = await onBox(
            labDir,
            "container",
            `cg=$(systemctl show -p ControlGroup --value ${UNIT}); for p in $(cat /sys/fs/cgroup$cg/cgroup.procs); do tr '\\0' ' ' < /proc/$p/cmdline; echo; done`,
        );
        assert.ok(cmdlines.trim() !== "", "no process in the unit");
        assert.ok(!cmdlines.includes(API_KEY), `the key is on a command line:\n${cmdlines}`);
        assert.ok(!(await onBox(labDir, "container", `tr '\\0' ' ' < /proc/${pid}/cmdline`)).includes(API_KEY));
        const status = await onBox(labDir, "container", `systemctl status --no-pager --full ${UNIT} || true`);
        assert.match(status, /Active: active \(running\)/);
        assert.ok(!status.includes(API_KEY), `the key is in systemctl status:\n${status}`);
        // SGLang read the key from the file: it authenticates (the release's own argparse and auth).
        const keyless = await httpGetJson(`http://${info.container.address}:30000/v1/models`, { timeoutMs: 10_000 });
        assert.ok("status" in keyless && keyless.status === 401, JSON.stringify(keyless).slice(0, 300));
        const keyed = await httpGetJson(`http://${info.container.address}:30000/v1/models`, { timeoutMs: 10_000, bearer: API_KEY });
        assert.ok("status" in keyed && keyed.status === 200, JSON.stringify(keyed).slice(0, 300));
    });

    it("`up --replace` of the server (Pulumi's way to redeploy a resource) stops and removes it first, then deploys the same config through the readiness wait and the serving-quality gate: it serves after", async () => {
        const before = await mainPid(labDir);
        const r = await d.run(["up", "--yes", "--skip-preview", "--replace", await serviceUrn(d)]);
        expectExit(r, 0, "up --replace of the server");
        const removed = r.output.indexOf(`[${UNIT}] stopped and removed`);
        const deployed = r.output.indexOf(`[${UNIT}] rollout: the unit is not on the box`);
        assert.ok(removed >= 0 && deployed > removed, `removed first, then deployed:\n${r.output}`);
        assert.match(r.output, /\[readiness\] serving figures avg accept length [\d.]+ \(NEXTN\)/);
        assert.notEqual(await mainPid(labDir), before);
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
        assert.equal(await healthStatus(info), 200);
    });

    // The replacement deployed the same config the fresh up did: the up after it is the second up.
    // With the stack's `refresh: always` it reads the box first, so its `--expect-no-changes` also
    // says what a `preview --refresh --expect-no-changes` after the replacement said: nothing to change.
    it("a second up (after the replacement) changes nothing and does not restart the server", async () => {
        const before = await mainPid(labDir);
        const r = await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]);
        expectExit(r, 0, "second up");
        assert.equal(await mainPid(labDir), before);
    });

    // The flag's and the restart's lines are checked on the up's own diff (`up --diff`, the same
    // change): this file is not about previews (tests/e2e/preview.test.ts is), so no preview first.
    it("one changed flag: the up's diff shows exactly that flag and a restart, and it restarts to ready", async () => {
        service(config).memFractionStatic = 0.85;
        d.writeConfig(config);
        const before = await mainPid(labDir);
        const up = await d.up();
        expectExit(up, 0, "up with the changed flag");
        const changed = changedLines(up.stdout);
        assert.ok(
            changed.some((l) => /--mem-fraction-static\s*:\s*"0\.88" => "0\.85"/.test(l)),
            changed.join("\n"),
        );
        assert.ok(
            // The restart says what the new server is held to: the figures the first up recorded (issue 21).
            changed.some((l) =>
                /restart\s*:\s*"no" => "yes: --mem-fraction-static changed; held to the last good avg accept length 1\.72 \(NEXTN\), 45\.2 tok\/s \(code 1\.80 \/ 51\.2 tok\/s, .*\): accept length at most 10% below, throughput at most 10% below"/.test(
                    l,
                ),
            ),
            changed.join("\n"),
        );
        const otherFlags = changed.filter((l) => /--[a-z]/.test(l) && !/mem-fraction-static/.test(l) && !/unitText/.test(l));
        assert.deepEqual(otherFlags, []);
        assert.notEqual(await mainPid(labDir), before);
        // One readiness report for the one rollout (the ReadinessCheck after it adds none).
        assert.equal(up.output.match(/\[readiness\] ready after/g)?.length, 1, up.output);
        assert.doesNotMatch(up.output, /provider host|use of closed network connection/);
        assert.equal((await liveServerInfo(info)).mem_fraction_static, 0.85);
        assert.match(await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`), /--mem-fraction-static 0\.85/);
        assert.equal(await healthStatus(info), 200);
    });
});
