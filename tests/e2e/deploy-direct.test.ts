import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "path";
import { labDown, labExec } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { healthStatus, mainPid, startLab, UNIT } from "./lab-box";

const API_KEY = "e2e-lab-api-key-0123456789abcdef";
const repo = path.join(__dirname, "..", "..");

/**
 * What `npm run render -- --stack lab` prints for the unit, run on the
 * deployment's own stack file (`--file`: the lab writes it in the
 * deployment's folder, beside its Pulumi.yaml, not in the work tree): the
 * text between the unit's `###` heading and the next heading.
 */
function renderedUnit(d: Deployment): string {
    const run = spawnSync(process.execPath, ["--require", "./ts-hook.cjs", "scripts/render.ts", "--file", path.join(d.dir, `Pulumi.${d.stack}.yaml`)], {
        cwd: repo,
        encoding: "utf8",
        timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const heading = run.stdout.indexOf(`### /etc/systemd/system/${UNIT} `);
    assert.notEqual(heading, -1, run.stdout);
    const start = run.stdout.indexOf("\n", heading) + 1;
    return run.stdout.slice(start, run.stdout.indexOf("\n### ", start));
}

describe("deploying to the lab with the real engine, ct129 topology (ssh straight into the container)", function () {
    this.timeout(600_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;

    before(async () => {
        ({ labDir, info } = await startLab("direct", 114));
        const config = labStackConfig(info, "direct");
        // A budget other than systemd's default of the unit (900 s): the unit written must carry it (issue 35).
        config["sglang-serve:readiness"] = { ...config["sglang-serve:readiness"], startupTimeoutSeconds: 120 };
        d = await Deployment.create("lab", config);
        d.giveApiKey(API_KEY);
    });
    after(async () => {
        d?.cleanup();
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("brings the server to ready, then a second up changes nothing", async () => {
        expectExit(await d.up(), 0, "up");
        assert.equal(await healthStatus(info), 200);
        const before = await mainPid(labDir);
        expectExit(await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]), 0, "second up");
        assert.equal(await mainPid(labDir), before);
    });

    it("writes, byte for byte, the unit `npm run render -- --stack lab` prints: readiness.startupTimeoutSeconds 120 is its TimeoutStartSec", async () => {
        const onBox = await labExec("container", `cat /etc/systemd/system/${UNIT}`, { labDir, timeoutMs: 30_000 });
        assert.equal(onBox.code, 0, onBox.stderr);
        assert.equal(onBox.stdout, renderedUnit(d));
        assert.match(onBox.stdout, /^TimeoutStartSec=120$/m);
    });
});
