/**
 * The last good figures per served config (issue 37), and which figures a
 * rollout's new config is held to. The state keeps the figures of the last
 * few configs a rollout verified serving, each under its key
 * (core/serving/served-config-key.ts), newest first; `servingFigures` stays the
 * current last good (the newest config's). The gate (core/serving/serving-quality.ts)
 * holds:
 * - a config verified before to its own last figures: a revert of a drafter
 *   switch is held to what the old drafter served, not to the better one's,
 *   and the same config serving worse than it did is still refused;
 * - a new config to the current last good.
 * A state written before the history holds only `servingFigures`: every
 * config is new to it, held to them as before, until a rollout starts the history.
 */
import { describeFigures, type ServingFigures } from "./serving-figures";

/** One config a rollout verified serving, and what it measured then. */
export interface VerifiedConfig {
    /** core/serving/served-config-key.ts servedConfigKey */
    config: string;
    /** When the rollout verified it (ISO 8601, UTC). */
    verifiedAt: string;
    figures: ServingFigures;
}

/** How many verified configs the state keeps: enough for a revert or two of each recent change, and a state that stays small. */
export const SERVING_HISTORY_SIZE = 8;

/**
 * The history with `verified` as its newest entry: an earlier entry of the
 * same config is replaced (its last figures are what count), and the oldest
 * beyond SERVING_HISTORY_SIZE are dropped.
 */
export function withVerified(history: readonly VerifiedConfig[] | undefined, verified: VerifiedConfig): VerifiedConfig[] {
    return [verified, ...(history ?? []).filter((e) => e.config !== verified.config)].slice(0, SERVING_HISTORY_SIZE);
}

/**
 * Whose figures a change is held to: the last good config's (the config is
 * new, or it is that config), or its own from an earlier rollout (a return to
 * an earlier config).
 */
export type FiguresOrigin = { kind: "last-good" } | { kind: "earlier"; verifiedAt: string };

export interface HeldFigures {
    figures: ServingFigures;
    origin: FiguresOrigin;
}

/**
 * The figures the config `key` is held to: its own last figures when the
 * history has it, else the current last good (`lastGood`, the record's
 * servingFigures); undefined when there are none.
 */
export function figuresHeldTo(key: string, history: readonly VerifiedConfig[] | undefined, lastGood: ServingFigures | undefined): HeldFigures | undefined {
    const at = (history ?? []).findIndex((e) => e.config === key);
    const own = at >= 0 ? history![at]! : undefined;
    // The newest entry is the last good config itself: servingFigures, the record of the last good, are its figures.
    if (own && at === 0 && lastGood !== undefined) return { figures: lastGood, origin: { kind: "last-good" } };
    if (own) return { figures: own.figures, origin: { kind: "earlier", verifiedAt: own.verifiedAt } };
    return lastGood ? { figures: lastGood, origin: { kind: "last-good" } } : undefined;
}

/** "2026-12-03 14:05 UTC": when a config was verified, as messages show it (the record's own string when it is not a date). */
export function shownVerifiedAt(iso: string): string {
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
    return m ? `${m[1]} ${m[2]} UTC` : iso;
}

/**
 * The figures named as the gate holds them, `shown` being how they are
 * written: "the last good config's 1.72 (NEXTN)", or "this config's own
 * 1.72 (NEXTN), verified 2026-12-03 14:05 UTC (a return to an earlier config)".
 */
export function heldFiguresPhrase(origin: FiguresOrigin | undefined, shown: string): string {
    if (origin === undefined || origin.kind === "last-good") return `the last good config's ${shown}`;
    return `this config's own ${shown}, verified ${shownVerifiedAt(origin.verifiedAt)} (a return to an earlier config)`;
}

/**
 * What the preview's restart line says a change is held to, before the
 * limits: "the last good avg accept length 1.72 (NEXTN)", or "its own earlier
 * avg accept length 1.72 (NEXTN), verified 2026-12-03 14:05 UTC (a return to an
 * earlier config)".
 */
export function heldToShown(held: HeldFigures): string {
    const figures = describeFigures(held.figures);
    const { origin } = held;
    switch (origin.kind) {
        case "last-good":
            return `the last good ${figures}`;
        case "earlier":
            return `its own earlier ${figures}, verified ${shownVerifiedAt(origin.verifiedAt)} (a return to an earlier config)`;
        default: {
            const never: never = origin;
            throw new Error(`unhandled origin ${JSON.stringify(never)}`);
        }
    }
}
