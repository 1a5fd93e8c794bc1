/**
 * The figures a rollout measured on a server it verified serving, recorded in
 * the state, and the rule that keeps a change only if it serves at least as
 * well as the last good config: its speculative accept length may not fall
 * more than `readiness.acceptLengthDropLimit` below the recorded one (issue 21).
 */

/** What a verified rollout measured: SGLang's own `/server_info` internal_states[].avg_spec_accept_length (the lowest over DP ranks). */
export interface ServingFigures {
    /** The speculative algorithm the server ran (as declared). */
    algorithm: string;
    acceptLength: number;
}

/** readiness.acceptLengthDropLimit's default (also for states written before it existed): 10%. */
export const DEFAULT_ACCEPT_LENGTH_DROP_LIMIT = 0.1;

export type AcceptLengthVerdict = { ok: true; said: string } | { ok: false; reason: string };

const shown = (v: number) => v.toFixed(2);
const percent = (v: number) => `${Math.round(v * 1000) / 10}%`;

/**
 * `measured` (the new config's accept length) against the last good config's
 * figures: a fall of more than `dropLimit` (a share, 0.1 = 10%) fails.
 */
export function judgeAcceptLength(measured: ServingFigures, lastGood: ServingFigures, dropLimit: number): AcceptLengthVerdict {
    const floor = lastGood.acceptLength * (1 - dropLimit);
    const drop = 1 - measured.acceptLength / lastGood.acceptLength;
    const against = `the last good config's ${shown(lastGood.acceptLength)} (${lastGood.algorithm})`;
    if (measured.acceptLength < floor) {
        return {
            ok: false,
            reason:
                `avg accept length ${shown(measured.acceptLength)} (${measured.algorithm}) is ${percent(drop)} below ${against}, ` +
                `more than readiness.acceptLengthDropLimit (${percent(dropLimit)}): the change serves worse and is not kept ` +
                `(raise readiness.acceptLengthDropLimit to accept it anyway)`,
        };
    }
    return {
        ok: true,
        said: `avg accept length ${shown(measured.acceptLength)} (${measured.algorithm}) against ${against}: within ${percent(dropLimit)}`,
    };
}

/**
 * The running server's accept length (as the refresh reads it from
 * /server_info) against the recorded figures: undefined when either is
 * unknown or the live figure is within `dropLimit`, else what differs, naming
 * both. The refresh records it (ServiceOutputs.acceptLengthDrift), so a fall
 * is drift for the drift check, and the preview's restart says why.
 */
export function acceptLengthDrift(live: number | null, recorded: ServingFigures | undefined, dropLimit: number): string | undefined {
    if (live === null || recorded === undefined) return undefined;
    if (live >= recorded.acceptLength * (1 - dropLimit)) return undefined;
    return (
        `the running server's avg accept length ${shown(live)} is ${percent(1 - live / recorded.acceptLength)} below ` +
        `the recorded ${shown(recorded.acceptLength)} (${recorded.algorithm}), more than readiness.acceptLengthDropLimit (${percent(dropLimit)})`
    );
}
