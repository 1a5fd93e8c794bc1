// The one poll loop of the readiness wait: it drives the readiness machine and
// then the healthy window (each an AwaitCondition, core/readiness/await-condition.ts)
// and knows nothing about what either waits for. Each poll: observe (the
// unit, its new journal lines, GET /health), let the condition judge what came
// first, then the whole poll; say progress; sleep until the next poll is due.

import type { AwaitCondition } from "../../core/readiness/await-condition";
import type { FailureCause, HealthObservation, UnitStatus } from "../../core/readiness/readiness";

/**
 * One poll as it arrives: the unit and its journal lines first, /health when
 * it answers (both probes start together; a crash in the journal must not wait
 * for a /health probe that can take its whole timeout).
 */
export interface Poll {
    unit: UnitStatus;
    newJournalLines: string[];
    health: Promise<HealthObservation>;
}

/** One poll, or why the box could not be polled. */
export type Observe = () => Promise<Poll | { failed: FailureCause }>;

export interface PollUntilOptions {
    now: () => number;
    sleep: (ms: number) => Promise<void>;
    /** The readiness wait's time zero: observations carry the milliseconds since it. */
    startedAtMs: number;
    say: (message: string) => void;
    /** Progress at most this often while the topic stays the same. */
    progressEveryMs: number;
}

export type AwaitResult<T> = { kind: "met"; value: T } | { kind: "failed"; cause: FailureCause; message: string };

/** Polls until `condition` is met or failed. A failure's message is returned, not said: the caller's failure path says it. */
export async function pollUntil<T>(condition: AwaitCondition<T>, observe: Observe, o: PollUntilOptions): Promise<AwaitResult<T>> {
    const elapsed = (): number => o.now() - o.startedAtMs;
    let lastTopic: string | null = null;
    let lastProgressAt = -Infinity;
    for (;;) {
        const pollStart = o.now();
        const poll = await observe();
        if ("failed" in poll) return { kind: "failed", cause: poll.failed, message: condition.failureMessage(poll.failed, elapsed()) };
        const early = condition.judgeEarly({ elapsedMs: elapsed(), unit: poll.unit, newJournalLines: poll.newJournalLines });
        if (early) return { kind: "failed", cause: early.cause, message: early.message };
        const health = await poll.health;
        const verdict = condition.judge({ elapsedMs: elapsed(), unit: poll.unit, newJournalLines: poll.newJournalLines, health });
        switch (verdict.kind) {
            case "failed":
                return { kind: "failed", cause: verdict.cause, message: verdict.message };
            case "met":
                o.say(verdict.message);
                return { kind: "met", value: verdict.value };
            case "waiting":
                if (verdict.topic !== lastTopic || o.now() - lastProgressAt >= o.progressEveryMs) {
                    o.say(verdict.progress);
                    lastTopic = verdict.topic;
                    lastProgressAt = o.now();
                }
                await o.sleep(Math.max(0, verdict.nextPollMs - (o.now() - pollStart)));
                break;
            default: {
                const never: never = verdict;
                throw new Error(`unhandled verdict ${JSON.stringify(never)}`);
            }
        }
    }
}
