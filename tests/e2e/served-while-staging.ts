// What the staging e2e files (release-staging, weights-switch) measure: the
// running server answered /health 200 while something was staged beside it,
// until the rollout stopped it.
import * as assert from "node:assert/strict";
import type { HealthSample } from "../../bench/lib/health-watch";
import { labFileMtimeMs } from "../../lab/control";
import { onBox, UNIT } from "./lab-box";

/**
 * From the staging's start (`began`: a file in the container the staging
 * writes first) to its end (`staged`: the file it writes last), /health was
 * polled at least `minPolls` times, and every poll until the rollout stopped
 * the old server (the journal's first `Stopping` after `staged`) answered 200.
 */
export async function assertServedWhileStaging(
    labDir: string,
    staging: { what: string; began: string; staged: string; minPolls: number },
    polls: readonly HealthSample[],
): Promise<void> {
    const began = await labFileMtimeMs("container", staging.began, labDir);
    const staged = await labFileMtimeMs("container", staging.staged, labDir);
    const stops = await onBox(labDir, "container", `journalctl -u ${UNIT} -o short-unix --no-pager | grep -E ' Stopping ' | cut -d' ' -f1`);
    const stopped = stops
        .split("\n")
        .map((t) => Number(t) * 1000)
        .find((t) => t > staged);
    assert.ok(stopped !== undefined, `no stop after the staging in the journal: ${stops}`);
    const whileStaging = polls.filter((p) => p.t >= began && p.t <= staged);
    assert.ok(whileStaging.length >= staging.minPolls, `only ${whileStaging.length} /health polls while ${staging.what} was staged (${began} to ${staged})`);
    assert.deepEqual(
        polls.filter((p) => p.t < stopped && !p.ok),
        [],
        "the old server answered /health 200 until the rollout stopped it",
    );
}
