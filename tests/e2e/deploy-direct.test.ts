import * as assert from "node:assert/strict";
import { labDown } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { healthStatus, mainPid, startLab } from "./lab-box";

const API_KEY = "e2e-lab-api-key-0123456789abcdef";

describe("deploying to the lab with the real engine, ct129 topology (ssh straight into the container)", function () {
    this.timeout(600_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;

    before(async () => {
        ({ labDir, info } = await startLab("direct", 114));
        d = await Deployment.create("lab", labStackConfig(info, "direct"));
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
});
