import * as assert from "node:assert/strict";
import { expectExit } from "../../lab/deployment";
import { describeFaultRows, failedUp } from "./fault-matrix";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.118.x). Deaths after ready: the healthy window and the start attempts.
// The rows run in order: the flaky start's change lands, and the scheduler death is rolled back to it.
describeFaultRows("deaths after ready (the healthy window)", "faults-window", 118, (m) => {
    it("death inside the healthy window: a changed flag whose server dies 3 s after ready fails up and leaves the previous config running", async () => {
        await m.withChange(0.85, { dieAfterReadySeconds: 3 }, async () => {
            const r = await m.d.up();
            failedUp(r, "a server that dies 3 s after ready");
            // The window sees the death (the checks after ready take well under 3 s; on a box so loaded that
            // they do not, the chat check sees it instead: the rollout fails either way, which is the point).
            assert.match(r.output, /did not stay healthy for 6 s \(readiness\.minHealthySeconds\)|test chat completion failed/);
            // A death after ready can pass on retry: a second attempt, then the rollback.
            assert.match(r.output, /attempt 1 of 2 of the new config failed .*that can pass on retry/);
            assert.match(r.output, /\(attempt 2 of 2; attempt 1/);
            assert.match(r.output, /the previous unit was put back and is ready again/);
            await m.expectServing(m.serving);
            await m.expectStateTellsTheTruth();
            await m.expectChangePending();
        });
    });

    it("a flaky start that dies after ready once passes on the second attempt", async () => {
        await m.withChange(0.86, { dieAfterReadySeconds: 2, firstStarts: 1 }, async () => {
            const r = await m.d.up();
            expectExit(r, 0, "up with a start that fails once");
            assert.match(r.output, /attempt 1 of 2 of the new config failed \(/);
            assert.match(r.output, /started \(attempt 2 of 2\)/);
            await m.expectServing(0.86);
            m.landed(0.86);
            await m.expectStateTellsTheTruth();
        });
    });

    it("scheduler death with HTTP up: the fatal line fails the window although the process lives", async () => {
        await m.withChange(0.82, { schedulerDeathAfterReadySeconds: 2 }, async () => {
            const r = await m.d.up();
            failedUp(r, "a scheduler that dies after ready");
            assert.match(r.output, /fatal log line \(scheduler died\)|Scheduler hit an exception/);
            assert.match(r.output, /previous unit was put back and is ready again/);
            await m.expectServing(m.serving);
            await m.expectStateTellsTheTruth();
            await m.expectChangePending();
        });
    });
});
