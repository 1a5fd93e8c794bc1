// What the staging e2e files (release-staging, weights-switch) measure: the
// running server answered /health 200 while something was staged beside it,
// until the rollout stopped it.
import * as assert from "node:assert/strict";
import type { HealthSample } from "../../bench/lib/health-watch";
import { labFileMtimeMs, simulatorEvents } from "../../lab/control";
import { onBox, UNIT } from "./lab-box";

/**
 * From the staging's start (`began`: a file in the container the staging
 * writes first) to its end (`staged`: the file it writes last), /health was
 * polled at least `minPolls` times; the rollout stopped the old server only
 * after the staging ended; and every poll until that stop answered 200.
 *
 * The stop is the old server's own record of the signal (the simulator's
 * `stopped` event: the first after the staging began), not the journal's
 * `Stopping` line: journald under a full run's load is one more thing to
 * trust, and a line missing from it would make a later stop look like this
 * one (most likely what failed release-staging once under load, 2026-12-06:
 * its failed polls looked like the restart's own window; that output did not
 * show the journal, so a failure now names it). A crash of the old server is
 * no `stopped` event, so its polls still fail.
 */
export async function assertServedWhileStaging(
    labDir: string,
    staging: { what: string; began: string; staged: string; minPolls: number },
    polls: readonly HealthSample[],
): Promise<void> {
    const began = await labFileMtimeMs("container", staging.began, labDir);
    const staged = await labFileMtimeMs("container", staging.staged, labDir);
    const events = simulatorEvents(labDir).filter((e) => e.epochMs >= began);
    const stop = events.find((e) => e.event === "stopped");
    const timeline = async () =>
        `staging ${began} to ${staged}; the servers' events since: ${events.map((e) => `${e.epochMs} ${e.event} (pid ${e.pid})`).join(", ")}; ` +
        `the journal's stops: ${(await onBox(labDir, "container", `journalctl -u ${UNIT} -o short-unix --no-pager | grep -E ' Stopping ' | cut -d' ' -f1`)).split("\n").join(", ")}`;
    assert.ok(stop !== undefined, `the old server was not stopped after the staging began: ${await timeline()}`);
    assert.ok(stop.epochMs > staged, `the old server was stopped before ${staging.what} was staged: ${await timeline()}`);
    const whileStaging = polls.filter((p) => p.t >= began && p.t <= staged);
    assert.ok(whileStaging.length >= staging.minPolls, `only ${whileStaging.length} /health polls while ${staging.what} was staged (${began} to ${staged})`);
    const failed = polls.filter((p) => p.t < stop.epochMs && !p.ok);
    if (failed.length > 0)
        assert.fail(
            `the old server did not answer /health 200 until the rollout stopped it at ${stop.epochMs}: failed polls at ${failed.map((p) => Math.round(p.t)).join(", ")}; ${await timeline()}`,
        );
}
