import * as assert from "node:assert/strict";
import { expectExit } from "../../lab/deployment";
import { acceptedLogins, describeFaultRows, killSshSessions } from "./fault-matrix";
import { mainPid } from "./lab-box";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.125.x). Interrupted rollouts: the SSH connection cut, a second up while one runs, SIGINT.
// The rows run in order, each change landing: each row starts from the config the one before left serving. The
// SSH cut and the second up share one rollout: the lock refuses the second up before it runs anything (no login,
// no SSH), so neither can hide the other.
describeFaultRows("interrupted rollouts", "faults-interrupted", 125, (m) => {
    it("the SSH connection cut in the middle of a rollout: the pool reconnects and the rollout completes; a second up meanwhile is refused by the stack's lock", async () => {
        await m.withChange(0.84, { startupSeconds: 8 }, async () => {
            const up = m.d.startUp();
            // A second up while the first rolls out: refused by the stack's lock (it runs alongside the cut below).
            await up.waitFor(/rollout: changed: --mem-fraction-static/);
            const second = m.d.up();
            // The new server is started and the provider is waiting on it: the rollout is in flight. (A startup phase
            // such as "loading weights" may pass between two polls on a loaded machine, so the test does not wait for one.)
            await up.waitFor(/started \(attempt 1 of 2\); waiting for GET/);
            const acceptedBefore = acceptedLogins(m.info);
            const killed = killSshSessions(m.labDir);
            assert.ok(killed.length > 0, "no sshd session process to kill");
            const refused = await second;
            assert.notEqual(refused.code, 0, "the second up should be refused");
            assert.match(refused.output, /the stack is currently locked/);
            const r = await up.done;
            expectExit(r, 0, `up with its SSH connection cut (killed sshd ${killed.join(", ")})`);
            // The rollout went on over a new connection (nothing else logs in to the host meanwhile: the refused up never connects).
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
});
