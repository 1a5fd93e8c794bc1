import * as assert from "node:assert/strict";
import { clearFaults, setFaults } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { mainPid, NEXTN_LAB_FIGURES, serverInfoOnBox, service, servingFiguresInState, useLab } from "./lab-box";

const API_KEY = "e2e-quality-api-key-0123456789abcd";

// Issue 21's serving-quality gate on the lab box, beyond the drafter switch
// (drafter-switch.test.ts): a change that decodes slower, and one whose
// acceptance sits at the maximum (a repetition loop), are not kept; the
// previous server serves again, the record stays. A lab of its own (127.0.130.x).
describe("the serving-quality gate on the lab box: throughput and a repetition loop", function () {
    this.timeout(900_000);
    const lab = useLab("quality", 130);

    it("fails a change that decodes 20% slower naming both throughputs, and one pinned at the maximum accept length on every bucket; NEXTN serves on, its figures stay", async () => {
        const { labDir, info } = lab;
        const config = labStackConfig(info, "pct-exec");
        const d = await Deployment.create("lab", config);
        try {
            d.giveApiKey(API_KEY);
            expectExit(await d.up(), 0, "up of the field config (NEXTN, one step)");
            assert.deepEqual(await servingFiguresInState(d), NEXTN_LAB_FIGURES);

            // The lab's faults for the new config only (its --max-running-requests), not for the rollback to NEXTN as it was.
            const attempt = async (faults: Parameters<typeof setFaults>[0], maxRunningRequests: number) => {
                setFaults({ ...faults, whenArgs: ["--max-running-requests", String(maxRunningRequests)] }, labDir);
                service(config).maxRunningRequests = maxRunningRequests;
                d.writeConfig(config);
                const r = await d.up();
                assert.notEqual(r.code, 0, r.output);
                assert.match(r.output, /previous unit was put back and is ready again/);
                assert.deepEqual(await servingFiguresInState(d), NEXTN_LAB_FIGURES, "the last good figures stay");
                assert.equal((await serverInfoOnBox(labDir, info, API_KEY)).max_running_requests, 48, "NEXTN as it was serves again");
                return r.output;
            };

            // Decode 20% slower with the same acceptance (prefill as before): the total falls 18.7%.
            assert.match(
                await attempt({ throughputFactor: 0.8 }, 32),
                /output throughput 36\.7 tok\/s is 18\.7% below the last good config's 45\.2 tok\/s, more than readiness\.throughputDropLimit \(10%\)/,
            );
            // Every draft token accepted: 2 tokens a step, the most one draft token allows, on every bucket.
            assert.match(await attempt({ acceptPinnedAtMax: true }, 40), /speculative acceptance sits at its maximum 2\.00 on every bucket .* repetition loop/);

            clearFaults(labDir);
            delete service(config).maxRunningRequests;
            d.writeConfig(config);
            const pid = await mainPid(labDir);
            // The failed rollouts' record is new: this up verifies the server that serves, and restarts nothing.
            const back = await d.up();
            expectExit(back, 0, "up with the config that serves");
            assert.doesNotMatch(back.output, /rollout:/);
            assert.equal(await mainPid(labDir), pid);
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "the box as declared");
        } finally {
            clearFaults(labDir);
            d.cleanup();
        }
    });
});
