import * as assert from "node:assert/strict";
import { expectExit } from "../../lab/deployment";
import { DECLARED, describeFaultRows, failedUp } from "./fault-matrix";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.118.x). Deaths after ready: the healthy window and the start attempts.
// The rows run in order and declare the same change (0.85): the two deaths are rolled back, each next row's up shows
// the change still pending (expectChangeStillPending), and the flaky start's change lands last.
const CHANGE = 0.85;

describeFaultRows("deaths after ready (the healthy window)", "faults-window", 118, (m) => {
    it("death inside the healthy window: a changed flag whose server dies 3 s after ready fails up and leaves the previous config running", async () => {
        await m.withChange(CHANGE, { dieAfterReadySeconds: 3 }, async () => {
            const r = await m.d.up();
            failedUp(r, "a server that dies 3 s after ready");
            // The window sees the death (the checks after ready take well under 3 s; on a box so loaded that
            // they do not, the chat check sees it instead: the rollout fails either way, which is the point).
            assert.match(r.output, /did not stay healthy for 6 s \(readiness\.minHealthySeconds\)|test chat completion failed/);
            // A death after ready can pass on retry: a second attempt, then the rollback.
            assert.match(r.output, /attempt 1 of 2 of the new config failed .*that can pass on retry/);
            assert.match(r.output, /\(attempt 2 of 2; attempt 1/);
            assert.match(r.output, /the previous unit was put back and is ready again/);
            await m.expectServing(DECLARED);
            await m.expectStateTellsTheTruth();
            // The change still pending: the next row's up shows it.
        });
    });

    it("scheduler death with HTTP up: the fatal line fails the window although the process lives", async () => {
        await m.withChange(CHANGE, { schedulerDeathAfterReadySeconds: 2 }, async () => {
            const r = await m.d.up();
            // Before it changes anything, this up shows the change the window death left still pending.
            m.expectChangeStillPending(r, DECLARED, CHANGE);
            failedUp(r, "a scheduler that dies after ready");
            assert.match(r.output, /fatal log line \(scheduler died\)|Scheduler hit an exception/);
            assert.match(r.output, /previous unit was put back and is ready again/);
            await m.expectServing(DECLARED);
            await m.expectStateTellsTheTruth();
            // The change still pending: the next row's up shows it.
        });
    });

    it("a flaky start that dies after ready once passes on the second attempt", async () => {
        await m.withChange(CHANGE, { dieAfterReadySeconds: 2, firstStarts: 1 }, async () => {
            const r = await m.d.up();
            // Before it changes anything, this up shows the change the scheduler death left still pending.
            m.expectChangeStillPending(r, DECLARED, CHANGE);
            expectExit(r, 0, "up with a start that fails once");
            assert.match(r.output, /attempt 1 of 2 of the new config failed \(/);
            assert.match(r.output, /started \(attempt 2 of 2\)/);
            await m.expectServing(CHANGE);
            m.landed(CHANGE);
            await m.expectStateTellsTheTruth();
        });
    });
});
