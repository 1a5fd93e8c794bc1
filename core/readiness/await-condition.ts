// What the one poll loop (remote/await/poll-until.ts) asks of a condition it
// waits for. The readiness machine (core/readiness/readiness.ts) and the healthy window
// (core/readiness/healthy-window.ts) are each wrapped as one: the loop polls (the unit,
// its journal, GET /health), paces the polls and says progress; only the
// condition knows what it waits for. The shape of pulumi-kubernetes' await
// logic: one loop, and conditions that judge what it sees.
//
// Pure: a condition holds its machine's state between polls, nothing else.

import type { FailureCause, Observation } from "./readiness";

export type Verdict<T> =
    | {
          kind: "waiting";
          /** The progress line for the operator. */
          progress: string;
          /** A new topic (a new startup phase) is said at once; the same one at most every progressEveryMs. */
          topic: string;
          /** The next poll starts this long after this one started. */
          nextPollMs: number;
      }
    /** Said once, then the loop ends with `value`. */
    | { kind: "met"; value: T; message: string }
    /** The loop ends; the caller says `message` (the readiness wait's failure path reads the journal first). */
    | { kind: "failed"; cause: FailureCause; message: string };

export interface AwaitCondition<T> {
    /**
     * Judges what a poll shows before GET /health answers (the unit and its
     * journal). A failure found here stands without waiting for /health, whose
     * probe of a wedged server can take its whole timeout. null: judge the whole poll.
     */
    judgeEarly(obs: Omit<Observation, "health">): Extract<Verdict<T>, { kind: "failed" }> | null;
    /** Judges one whole poll. */
    judge(obs: Observation): Verdict<T>;
    /** The operator's line for a failure found outside the condition (the poll itself failed). */
    failureMessage(cause: FailureCause, elapsedMs: number): string;
}
