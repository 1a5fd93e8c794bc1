/**
 * The serving-quality gate's verdict (issue 21): a new config's figures over
 * the prompt set (core/serving/serving-figures.ts) are kept only if speculation works
 * and the server serves at least as well as the last good config on the same
 * box. The first of these fails it:
 * - the accept length collapsed to about 1 on a bucket (the drafter's guesses
 *   are all rejected),
 * - it sits at the maximum on every bucket (a repetition loop accepts everything),
 * - it falls more than readiness.acceptLengthDropLimit below the last good
 *   config's (named first: the comparison says more than the floor),
 * - the output throughput falls more than readiness.throughputDropLimit below
 *   the last good config's,
 * where "the last good config's" are the config's own last figures when it
 * was verified before (core/serving/serving-history.ts: a revert), and the current
 * last good otherwise;
 * - the accept length is below the floor (readiness.acceptLengthFloor, else a
 *   default per algorithm and step count).
 */
import { describeFigures, percent, shownLength, shownThroughput, type ServingFigures } from "./serving-figures";
import { heldFiguresPhrase, type FiguresOrigin } from "./serving-history";

/** The speculative settings the server resolved (/server_info), which bound its accept length. */
export interface DraftShape {
    algorithm: string;
    numSteps: number | null;
    eagleTopk: number | null;
    numDraftTokens: number | null;
}

const intOrNull = (v: unknown) => (typeof v === "number" && Number.isInteger(v) ? v : null);

/** The draft settings from /server_info's body (dataclasses.asdict(server_args): what the release resolved, not what was declared). */
export function draftShapeOf(serverInfo: Record<string, unknown>, algorithm: string): DraftShape {
    return {
        algorithm,
        numSteps: intOrNull(serverInfo.speculative_num_steps),
        eagleTopk: intOrNull(serverInfo.speculative_eagle_topk),
        numDraftTokens: intOrNull(serverInfo.speculative_num_draft_tokens),
    };
}

export interface QualityLimits {
    /** readiness.acceptLengthFloor: replaces the default floor. */
    acceptLengthFloor?: number;
    acceptLengthDropLimit: number;
    throughputDropLimit: number;
}

export type ServingVerdict = { ok: true; said: string } | { ok: false; reason: string };

/** At or below this a bucket's accept length has collapsed: about one token per verify step, as without a drafter. */
export const COLLAPSED_AT_OR_BELOW = 1.1;

/** Algorithms with a drafter that proposes tokens a step at a time (chain or tree), which the floor and the bounds apply to. NGRAM's acceptance is the text's own repetition. */
const DRAFTING = new Set(["EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE", "DFLASH"]);

/**
 * The most tokens one verify step can accept: the whole chain of draft tokens
 * with topk 1 (DFLASH's block), the tree's depth plus the bonus token
 * otherwise. Undefined where the release does not say.
 */
export function maxAcceptLength(shape: DraftShape): number | undefined {
    if (!DRAFTING.has(shape.algorithm)) return undefined;
    if (shape.eagleTopk === 1 && shape.numDraftTokens !== null) return shape.numDraftTokens;
    return shape.numSteps !== null ? shape.numSteps + 1 : undefined;
}

/**
 * The floor when readiness.acceptLengthFloor is unset: a quarter of a token
 * per draft step above 1 (1.75 for three steps; SGLang's own CI holds Qwen3.5
 * with three MTP steps above 3.3, so a working drafter clears it widely), a
 * tenth per block token for DFLASH's one-pass block. A coarse guard: the
 * comparison with the last good config is the real one.
 */
export function defaultAcceptLengthFloor(shape: DraftShape): number | undefined {
    if (!DRAFTING.has(shape.algorithm)) return undefined;
    if (shape.algorithm === "DFLASH" && shape.numDraftTokens !== null) return 1 + 0.1 * (shape.numDraftTokens - 1);
    return shape.numSteps !== null ? 1 + 0.25 * shape.numSteps : undefined;
}

function bucketLengths(f: ServingFigures): [string, number][] {
    return Object.entries(f.buckets ?? {}).flatMap(([bucket, b]) => (b.acceptLength !== undefined ? [[bucket, b.acceptLength] as [string, number]] : []));
}

/** The first reason the measured figures fail, or undefined. */
function failure(
    measured: ServingFigures,
    shape: DraftShape | undefined,
    lastGood: ServingFigures | undefined,
    origin: FiguresOrigin | undefined,
    limits: QualityLimits,
): string | undefined {
    const measuredAs = describeFigures(measured);
    const length = measured.acceptLength;
    // The bounds apply to a drafting algorithm's measured accept length.
    const drafted = shape && length !== undefined && DRAFTING.has(shape.algorithm) ? { shape, length } : undefined;
    if (drafted) {
        const perBucket = bucketLengths(measured);
        const collapsed =
            perBucket.find(([, v]) => v <= COLLAPSED_AT_OR_BELOW) ?? (drafted.length <= COLLAPSED_AT_OR_BELOW ? ["all prompts", drafted.length] : undefined);
        if (collapsed) {
            return (
                `speculative acceptance collapsed: avg accept length ${shownLength(collapsed[1])} on ${collapsed[0]} (about one token per step, as with no drafter; ${measuredAs}): ` +
                `the drafter does not match the model (wrong drafter, quantization or algorithm); the change is not kept`
            );
        }
        const max = maxAcceptLength(drafted.shape);
        const all = perBucket.length ? perBucket.map(([, v]) => v) : [drafted.length];
        if (max !== undefined && max > 1 && all.every((v) => v >= max - 0.01)) {
            return (
                `speculative acceptance sits at its maximum ${shownLength(max)} on every bucket (${measuredAs}): every draft token accepted is a repetition loop ` +
                `(the model repeats itself, the drafter guesses it); the change is not kept`
            );
        }
    }
    if (lastGood?.acceptLength !== undefined && length !== undefined && length < lastGood.acceptLength * (1 - limits.acceptLengthDropLimit)) {
        return (
            `avg accept length ${shownLength(length)} (${measured.algorithm}) is ${percent(1 - length / lastGood.acceptLength)} below ` +
            `${heldFiguresPhrase(origin, `${shownLength(lastGood.acceptLength)} (${lastGood.algorithm})`)}, more than readiness.acceptLengthDropLimit (${percent(limits.acceptLengthDropLimit)}): ` +
            `the change serves worse and is not kept (raise readiness.acceptLengthDropLimit to accept it anyway)`
        );
    }
    const tput = measured.throughput;
    if (lastGood?.throughput !== undefined && tput !== undefined && tput < lastGood.throughput * (1 - limits.throughputDropLimit)) {
        return (
            `output throughput ${shownThroughput(tput)} is ${percent(1 - tput / lastGood.throughput)} below ` +
            `${heldFiguresPhrase(origin, shownThroughput(lastGood.throughput))}, more than readiness.throughputDropLimit (${percent(limits.throughputDropLimit)}) (${measuredAs}): ` +
            `the change serves slower and is not kept (raise readiness.throughputDropLimit to accept it anyway)`
        );
    }
    if (drafted) {
        const { shape: s, length: l } = drafted;
        const floor = limits.acceptLengthFloor ?? defaultAcceptLengthFloor(s);
        if (floor !== undefined && l < floor) {
            return (
                `avg accept length ${shownLength(l)} (${s.algorithm}) is below the floor ${shownLength(floor)}` +
                `${limits.acceptLengthFloor !== undefined ? " (readiness.acceptLengthFloor)" : ` (the default for ${s.algorithm} with ${s.numSteps ?? "?"} steps and ${s.numDraftTokens ?? "?"} draft tokens)`}` +
                ` (${measuredAs}): the change is not kept (set readiness.acceptLengthFloor lower to accept it anyway)`
            );
        }
    }
    return undefined;
}

/**
 * The measured figures against the bounds and the figures the config is held
 * to: `lastGood`, whose `origin` says whose they are (absent: the last good
 * config's).
 */
export function judgeServing(
    measured: ServingFigures,
    against: { shape?: DraftShape; lastGood?: ServingFigures; origin?: FiguresOrigin; limits: QualityLimits },
): ServingVerdict {
    const reason = failure(measured, against.shape, against.lastGood, against.origin, against.limits);
    if (reason !== undefined) return { ok: false, reason };
    const { lastGood, origin, limits } = against;
    return {
        ok: true,
        said:
            `serving figures ${describeFigures(measured)}` +
            (lastGood
                ? ` against ${heldFiguresPhrase(origin, describeFigures({ ...lastGood, buckets: undefined }))}: within ` +
                  `${percent(limits.acceptLengthDropLimit)} (accept length) and ${percent(limits.throughputDropLimit)} (throughput)`
                : ": no last good figures to hold them to (they become the record)"),
    };
}
