import * as assert from "node:assert/strict";
import { clearFaults, labDown, setFaults } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, EngineResult, expectExit } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";
import { httpGetJson } from "../../remote/probe";
import { waitFor } from "../lab/lab-fixture";
import { healthStatus, mainPid, managedLabConfig, onBox, startLab, UNIT } from "./lab-box";

const API_KEY = "e2e-drift-api-key-0123456789abcdef";

async function liveServerInfo(info: LabInfo): Promise<Record<string, unknown>> {
    const r = await httpGetJson(`http://${info.container.address}:30000/server_info`, { timeoutMs: 10_000, bearer: API_KEY });
    assert.ok("status" in r && r.status === 200, `server_info: ${JSON.stringify(r).slice(0, 300)}`);
    return r.body as Record<string, unknown>;
}

async function driftCheck(d: Deployment): Promise<EngineResult> {
    return d.run(["refresh", "--preview-only", "--expect-no-changes", "--diff"]);
}

/** One resource's part of a `--diff` display (`~ pulumi-nodejs:dynamic/sglang-serve:GpuHost: (update)` up to the next resource's line). */
function diffBlock(output: string, type: string): string {
    const start = output.indexOf(`sglang-serve:${type}: (`);
    assert.notEqual(start, -1, `no ${type} in the diff:\n${output}`);
    const rest = output.slice(start);
    const next = rest.slice(1).search(/\n {4,}[~+-] pulumi-nodejs:/);
    return next === -1 ? rest : rest.slice(0, next + 1);
}

// Each kind of drift on a deployed lab stack (kpro5 topology): `refresh
// --preview-only --expect-no-changes` exits 7 naming what differs, `npm run
// drift` reports it, and `up` puts the box back. A lab of its own
// (127.0.128.x), apart from tests/e2e/deploy.test.ts, so the two run side by side.
// The tests share one deployment in order, each starting from the box the one
// before put back; drifts that cannot mask each other (on different
// resources) are planted in one round (docs/testing.md "Engine runs").
describe("drift on the lab with the real engine, kpro5 topology: reported, then repaired by up", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;
    let config: StackConfigFile;

    before(async () => {
        ({ labDir, info } = await startLab("drift", 128));
        config = await managedLabConfig(labDir, info);
        config["sglang-serve:service"].memFractionStatic = 0.85;
        d = await Deployment.create("lab", config);
        d.giveApiKey(API_KEY);
        expectExit(await d.up(), 0, "up of the declared config");
    });
    after(async () => {
        d?.cleanup();
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    // The clean check before the edit is `npm run drift`'s alone: the refresh the before()'s up was
    // followed by would say the same of the same state. The JSON form is checked here (clean) and on the
    // accept-length drift (a row whose text outgrows a table cell); the table form on this edit.
    it("drift: a hand-edited unit is reported naming the flag, and up repairs it", async () => {
        const clean = await d.npmScript("drift", ["--stack", "lab", "--json"]);
        expectExit(clean, 0, "npm run drift before the edit");
        assert.equal((JSON.parse(clean.stdout) as { drift: boolean }).drift, false);

        await onBox(labDir, "container", `sed -i 's/--mem-fraction-static 0.85/--mem-fraction-static 0.9/' /etc/systemd/system/${UNIT}`);
        const drift = await driftCheck(d);
        expectExit(drift, 7, "refresh after a hand edit");
        assert.match(drift.stdout, /--mem-fraction-static/);
        // The row, declared then actual (that the JSON carries them as the unit's strings, "0.85" and "0.9",
        // is tests/core/drift-report.test.ts's, on the events the engine emitted for this edit).
        const table = await d.npmScript("drift", ["--stack", "lab"]);
        expectExit(table, 7, "npm run drift (table) after a hand edit");
        assert.match(table.stdout, /^qwen-unit\s+flags\.--mem-fraction-static\s+0\.85\s+0\.9$/m, table.stdout);
        expectExit(await d.up(), 0, "up repairs the edit");
        expectExit(await driftCheck(d), 0, "no drift after up");
    });

    it("drift: a unit changed and reloaded but the process not restarted (file and live args differ)", async () => {
        await onBox(
            labDir,
            "container",
            `sed -i 's/--mem-fraction-static 0.85/--mem-fraction-static 0.9/' /etc/systemd/system/${UNIT} && systemctl daemon-reload`,
        );
        const drift = await driftCheck(d);
        expectExit(drift, 7, "refresh");
        assert.match(drift.stdout, /liveMatchesUnit/);
        expectExit(await d.up(), 0, "up");
        assert.equal((await liveServerInfo(info)).mem_fraction_static, 0.85);
        expectExit(await driftCheck(d), 0, "no drift after up");
    });

    // Three drifts on three resources (the service, the container, the GPU host) in one round: each is
    // reported by one refresh. The GPU comes back before the up (no up can bring a GPU back): one up starts
    // the service again and sets the container back, and the clean refresh after it says no drift is left,
    // the GPU's with it.
    it("drift: a stopped service, a container setting changed with pct set and a GPU gone from the host are reported; up starts the service again and sets the container back, and with the GPU back no drift is left", async () => {
        const declared = config["sglang-serve:container"].cores as number;
        await onBox(labDir, "container", `systemctl stop ${UNIT}`);
        await onBox(labDir, "host", `pct set 129 -cores ${declared + 4}`);
        await onBox(labDir, "host", "mv /dev/nvidia1 /dev/nvidia1.gone");
        try {
            const drift = await driftCheck(d);
            expectExit(drift, 7, "refresh");
            assert.match(drift.stdout, /activeState\s*:\s*"active" => "inactive"/);
            assert.match(drift.stdout, /cores\s*:\s*\d+ => \d+/);
            // The GpuHost's own gpus (the container's part of the diff lists its GPUs too, changed or not).
            assert.match(diffBlock(drift.stdout, "GpuHost"), /~ gpus\s*:/);
        } finally {
            await onBox(labDir, "host", "mv /dev/nvidia1.gone /dev/nvidia1");
        }
        expectExit(await d.up(), 0, "up");
        assert.equal(await healthStatus(info), 200);
        assert.match(await onBox(labDir, "host", "pct config 129"), new RegExp(`^cores: ${declared}$`, "m"));
        expectExit(await driftCheck(d), 0, "no drift after up, the GPU back");
    });

    it("drift: the running server's accept length fell more than the drop limit below the recorded figure: reported naming both, and up restarts it through the checks", async () => {
        // The declared server, restarted by hand with a drafter whose acceptance collapses to 1.1 once it serves.
        setFaults({ acceptLengthAfterReady: { seconds: 1, acceptLength: 1.1 } }, labDir);
        try {
            await onBox(labDir, "container", `systemctl restart ${UNIT}`);
            await waitFor("the restarted server to report the collapsed accept length", async () => {
                const served = (await liveServerInfo(info)) as { internal_states?: Array<{ avg_spec_accept_length?: number }> };
                return served.internal_states?.[0]?.avg_spec_accept_length === 1.1 ? true : undefined;
            });
            const drift = await driftCheck(d);
            expectExit(drift, 7, "refresh with the accept length collapsed");
            assert.match(drift.stdout, /acceptLengthDrift/);
            const report = await d.npmScript("drift", ["--stack", "lab", "--json"]);
            expectExit(report, 7, "npm run drift");
            const changes = (JSON.parse(report.stdout) as { changes: { field: string; actual: unknown }[] }).changes;
            const accept = changes.find((c) => c.field === "acceptLengthDrift");
            assert.ok(accept, JSON.stringify(changes));
            assert.match(
                String(accept.actual),
                /^the running server's avg accept length 1\.10 is 36% below the recorded 1\.72 \(NEXTN\), more than readiness\.acceptLengthDropLimit \(10%\)$/,
            );
            // A preview after drift exits 7 under --expect-no-changes (the check the hand-edit test made
            // before), and says why the up will restart the server.
            const preview = await d.preview("--refresh", "--expect-no-changes");
            expectExit(preview, 7, "preview --refresh with the accept length collapsed");
            assert.match(preview.output, /restart\s*:\s*"no" => "yes: the running server's avg accept length 1\.10 /);
        } finally {
            clearFaults(labDir);
        }
        const before = await mainPid(labDir);
        expectExit(await d.up(), 0, "up: a fresh server, measured against the record");
        assert.notEqual(await mainPid(labDir), before, "the server was restarted");
        expectExit(await driftCheck(d), 0, "no drift after up");
    });
});
