import * as assert from "node:assert/strict";
import { DECLARED, describeFaultRows, failedUp } from "./fault-matrix";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.119.x). Starts that fail: a crash at start and a server that never becomes ready.
// The rows run in order and declare the same change (0.8): the never-ready row's up shows the crash row's change still pending.
const CHANGE = 0.8;

describeFaultRows("starts that fail", "faults-start", 119, (m) => {
    it("crash at start: retried, rolled back, the change still pending", async () => {
        await m.withChange(CHANGE, { crashAfterSeconds: 1 }, async () => {
            const r = await m.d.up();
            failedUp(r, "a crash at start");
            assert.match(r.output, /Scheduler hit an exception|RuntimeError/);
            // The journal tail in the error echoes SGLang's server_args, api_key included: failedUp checks it is masked.
            assert.match(r.output, /Last journal lines|last journal lines/);
            assert.match(r.output, /started \(attempt 2 of 2\)/);
            assert.match(r.output, /previous unit was put back and is ready again/);
            await m.expectServing(DECLARED);
            await m.expectStateTellsTheTruth();
            // The change still pending: the next row's up shows it (expectChangeStillPending).
        });
    });

    it("never ready: each attempt fails at its deadline, then the rollback", async () => {
        await m.withChange(
            CHANGE,
            { neverReady: true },
            async () => {
                const r = await m.d.up();
                // Before it changes anything, this up shows the crash row's change still pending.
                m.expectChangeStillPending(r, DECLARED, CHANGE);
                failedUp(r, "a server that never becomes ready");
                assert.match(r.output, /not ready within the startup budget of 30 s/);
                assert.match(r.output, /\(attempt 2 of 2; attempt 1 failed the same way\)/);
                assert.match(r.output, /previous unit was put back and is ready again/);
                await m.expectServing(DECLARED);
                await m.expectStateTellsTheTruth();
                await m.expectChangePending();
            },
            { startupTimeoutSeconds: 30 },
        );
    });
});
