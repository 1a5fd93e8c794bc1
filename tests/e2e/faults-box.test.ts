import * as assert from "node:assert/strict";
import { setFaults } from "../../lab/control";
import { expectExit } from "../../lab/deployment";
import { DECLARED, describeFaultRows, failedUp } from "./fault-matrix";
import { onBox, UNIT } from "./lab-box";

// The fault matrix (tests/e2e/fault-matrix.ts), on a lab of its own (127.0.123.x). The box: the container stopped, GPU memory slow to free.
// The rows run in order: the container row leaves the declared config serving; the slow-GPU row comes last, as its
// server (started with the slow release set) is one no other row should start from.
describeFaultRows("the box: GPU memory and the container", "faults-box", 123, (m) => {
    it("the container stopped (pct stop 129) before up: up's diff shows it, up starts it and the server serves again", async () => {
        await onBox(m.labDir, "host", "pct stop 129");
        assert.equal(await onBox(m.labDir, "host", "pct status 129"), "status: stopped");
        const r = await m.d.up();
        expectExit(r, 0, "up with the container stopped");
        // What the preview shows with the container stopped (it exits 7): the up reads the box and diffs it against
        // the program before it changes anything, as a preview does; its diff shows the stopped container and the
        // service in it as changes.
        assert.match(r.output, /~ pulumi-nodejs:dynamic\/sglang-serve:LxcContainer: \(update\)/);
        assert.match(r.output, /~ pulumi-nodejs:dynamic\/sglang-serve:SglangService: \(update\)/);
        assert.match(r.output, /container 129 is stopped; starting it \(pct start 129\)/);
        assert.equal(await onBox(m.labDir, "host", "pct status 129"), "status: running");
        await m.expectServing(DECLARED);
        expectExit(await m.d.preview("--expect-no-changes"), 0, "preview after up started the container");
        await m.expectStateTellsTheTruth();
    });

    it("GPU memory slow to free: past gpuReleaseTimeoutSeconds nothing changes and the previous server is started again; within it, up waits", async () => {
        // The running server frees its memory slowly from its next start on: restart it with the fault set.
        setFaults({ gpuReleaseDelaySeconds: 12 }, m.labDir);
        await onBox(m.labDir, "container", `systemctl restart ${UNIT}`);
        for (let i = 0; i < 60 && (await m.health()) !== 200; i++) await new Promise((r) => setTimeout(r, 500));
        await m.withChange(
            0.83,
            { gpuReleaseDelaySeconds: 12, whenArgs: [] },
            async () => {
                const r = await m.d.up();
                failedUp(r, "GPU memory not released in time");
                assert.match(r.output, /GPU memory was not released within 4 s after stopping the server/);
                assert.match(r.output, /nothing was changed and the previous server was started again and is ready/);
                await m.expectServing(DECLARED);
                await m.expectStateTellsTheTruth();

                // The same change with the default budget: up waits for the memory, then rolls out. Before it changes
                // anything, its diff shows the change the refused up left still pending.
                delete m.readiness().gpuReleaseTimeoutSeconds;
                m.d.writeConfig(m.config);
                const slow = await m.d.up();
                m.expectChangeStillPending(slow, DECLARED, 0.83);
                expectExit(slow, 0, "up waiting for slow GPU memory");
                assert.match(slow.output, /\[gpu\] waiting for GPU memory to be released/);
                await m.expectServing(0.83);
                m.landed(0.83);
            },
            { gpuReleaseTimeoutSeconds: 4 },
        );
    });
});
