import * as assert from "node:assert/strict";
import { expectExit } from "../../lab/deployment";
import { acceptedLogins, describeFaultRows, killSshSessions } from "./fault-matrix";
import { mainPid } from "./lab-box";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.125.x). Interrupted rollouts: the SSH connection cut, SIGINT, a second up while one runs.
// The rows run in order, each change landing: each row starts from the config the one before left serving.
describeFaultRows("interrupted rollouts", "faults-interrupted", 125, (m) => {
    it("the SSH connection cut in the middle of a rollout: the pool reconnects and the rollout completes", async () => {
        await m.withChange(0.84, { startupSeconds: 8 }, async () => {
            const up = m.d.startUp();
            // The new server is started and the provider is waiting on it: the rollout is in flight. (A startup phase
            // such as "loading weights" may pass between two polls on a loaded machine, so the test does not wait for one.)
            await up.waitFor(/started \(attempt 1 of 2\); waiting for GET/);
            const acceptedBefore = acceptedLogins(m.info);
            const killed = killSshSessions(m.labDir);
            assert.ok(killed.length > 0, "no sshd session process to kill");
            const r = await up.done;
            expectExit(r, 0, `up with its SSH connection cut (killed sshd ${killed.join(", ")})`);
            // The rollout went on over a new connection (nothing else logs in to the host meanwhile).
            assert.ok(acceptedLogins(m.info) > acceptedBefore, "the provider did not log in again after the cut");
            await m.expectServing(0.84);
            m.landed(0.84);
            await m.expectStateTellsTheTruth();
        });
    });

    it("SIGINT during up: the engine waits for the rollout in flight, which finishes; the state records it", async () => {
        await m.withChange(0.79, { startupSeconds: 8 }, async () => {
            const up = m.d.startUp();
            await up.waitFor(/started \(attempt 1 of 2\); waiting for GET/);
            up.signalGroup("SIGINT");
            const r = await up.done;
            assert.notEqual(r.code, 0, `an interrupted up exits non-zero:\n${r.output.slice(-3000)}`);
            assert.match(r.output, /update canceled|canceled/);
            // The rollout in flight was not cut off: the new config serves, and the service's record says so.
            await m.expectServing(0.79);
            m.landed(0.79);
            assert.equal(await m.recordedFlag("--mem-fraction-static"), "0.79");
            // The next up finishes what the interrupted one skipped (the readiness check), without a restart.
            const pid = await mainPid(m.labDir);
            expectExit(await m.d.up(), 0, "up after the interrupted one");
            assert.equal(await mainPid(m.labDir), pid);
            expectExit(await m.d.preview("--expect-no-changes"), 0, "preview after the interrupted up and the next");
        });
    });

    it("a second up while one runs is refused by the stack's lock; the first one completes", async () => {
        await m.withChange(0.78, { startupSeconds: 6 }, async () => {
            const first = m.d.startUp();
            await first.waitFor(/rollout: changed: --mem-fraction-static/);
            const second = await m.d.up();
            assert.notEqual(second.code, 0, "the second up should be refused");
            assert.match(second.output, /the stack is currently locked/);
            expectExit(await first.done, 0, "the first up");
            await m.expectServing(0.78);
            m.landed(0.78);
            await m.expectStateTellsTheTruth();
        });
    });
});
