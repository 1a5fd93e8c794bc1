/**
 * A bounded wait for something the stack cannot be told about, only ask:
 * `ok` every interval until it holds, a progress line (what, elapsed, the
 * last state) every 5 s, an error naming the same after the timeout. For
 * short waits outside the readiness machine (the gateway's liveness and its
 * workers); the readiness and healthy-window waits have their own loop
 * (poll-until.ts).
 */
export interface WaitFor {
    /** `[unit]`, the lines' prefix. */
    tag: string;
    /** What is waited for, in words: "the gateway to answer /liveness". */
    what: string;
    timeoutMs: number;
    ok: () => Promise<boolean>;
    say: (line: string) => void;
    /** The last state, in words, for the progress lines and the error. */
    state?: () => string;
    intervalMs?: number;
}

export async function waitFor(w: WaitFor): Promise<void> {
    const started = Date.now();
    let said = started;
    const state = () => (w.state ? w.state() : "");
    while (!(await w.ok())) {
        const elapsed = Date.now() - started;
        if (elapsed > w.timeoutMs) throw new Error(`${w.tag} waited ${Math.round(elapsed / 1000)} s for ${w.what}${state() ? `: ${state()}` : ""}`);
        if (Date.now() - said >= 5000) {
            w.say(`${w.tag} waiting for ${w.what} — ${Math.round(elapsed / 1000)} s${state() ? `: ${state()}` : ""}`);
            said = Date.now();
        }
        await new Promise<void>((r) => setTimeout(r, w.intervalMs ?? 500));
    }
}
