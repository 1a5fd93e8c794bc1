import * as assert from "node:assert/strict";
import type { ServingFigures } from "../../core/serving/serving-figures";
import { defaultAcceptLengthFloor, DraftShape, draftShapeOf, judgeServing, maxAcceptLength } from "../../core/serving/serving-quality";

const LIMITS = { acceptLengthDropLimit: 0.1, throughputDropLimit: 0.1 };
const MTP3: DraftShape = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1, numDraftTokens: 4 };
const figures = (acceptLength: number, buckets: Record<string, number>, throughput = 40): ServingFigures => ({
    algorithm: "NEXTN",
    acceptLength,
    throughput,
    buckets: Object.fromEntries(Object.entries(buckets).map(([b, v]) => [b, { acceptLength: v, throughput }])),
});
const reasonOf = (v: ReturnType<typeof judgeServing>) => (v.ok ? `ok: ${v.said}` : v.reason);

describe("the serving-quality verdict (core/serving/serving-quality.ts)", () => {
    it("reads the resolved draft settings from /server_info", () => {
        assert.deepEqual(draftShapeOf({ speculative_num_steps: 3, speculative_eagle_topk: 1, speculative_num_draft_tokens: 4 }, "NEXTN"), MTP3);
        assert.deepEqual(draftShapeOf({ speculative_num_steps: null }, "EAGLE3"), {
            algorithm: "EAGLE3",
            numSteps: null,
            eagleTopk: null,
            numDraftTokens: null,
        });
    });

    it("bounds the accept length by the chain with topk 1, by the tree's depth otherwise, and not for NGRAM", () => {
        assert.equal(maxAcceptLength(MTP3), 4);
        assert.equal(maxAcceptLength({ algorithm: "DFLASH", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 }), 16);
        assert.equal(maxAcceptLength({ algorithm: "EAGLE3", numSteps: 5, eagleTopk: 8, numDraftTokens: 32 }), 6);
        assert.equal(maxAcceptLength({ algorithm: "NGRAM", numSteps: 3, eagleTopk: 1, numDraftTokens: 8 }), undefined);
    });

    it("sets the default floor by algorithm and step count, none for NGRAM", () => {
        assert.equal(defaultAcceptLengthFloor(MTP3), 1.75);
        assert.equal(defaultAcceptLengthFloor({ ...MTP3, numSteps: 1, numDraftTokens: 2 }), 1.25);
        assert.equal(defaultAcceptLengthFloor({ algorithm: "DFLASH", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 }), 2.5);
        assert.equal(defaultAcceptLengthFloor({ algorithm: "NGRAM", numSteps: 3, eagleTopk: 1, numDraftTokens: 8 }), undefined);
    });

    it("keeps a config that drafts and serves at least as well, saying both figures", () => {
        const v = judgeServing(figures(3.1, { code: 3.5, prose: 2.9 }), { shape: MTP3, lastGood: figures(3.2, {}, 41), limits: LIMITS });
        assert.equal(
            reasonOf(v),
            "ok: serving figures avg accept length 3.10 (NEXTN), 40.0 tok/s (code 3.50 / 40.0 tok/s, prose 2.90 / 40.0 tok/s) against the last good config's " +
                "avg accept length 3.20 (NEXTN), 41.0 tok/s: within 10% (accept length) and 10% (throughput)",
        );
        assert.match(
            reasonOf(judgeServing(figures(3.1, { code: 3.5 }), { shape: MTP3, limits: LIMITS })),
            /no last good figures to hold them to \(they become the record\)$/,
        );
    });

    it("fails a bucket whose acceptance collapsed to about 1, even when the total clears the floor", () => {
        assert.match(
            reasonOf(judgeServing(figures(2.4, { code: 3.6, prose: 1.08 }), { shape: MTP3, limits: LIMITS })),
            /^speculative acceptance collapsed: avg accept length 1\.08 on prose/,
        );
    });

    it("fails acceptance at the maximum on every bucket, but not on some", () => {
        assert.match(reasonOf(judgeServing(figures(4, { code: 4, prose: 4 }), { shape: MTP3, limits: LIMITS })), /sits at its maximum 4\.00 on every bucket/);
        assert.equal(judgeServing(figures(3.5, { code: 4, prose: 3 }), { shape: MTP3, limits: LIMITS }).ok, true);
    });

    it("fails below the default floor and below a declared one, naming which", () => {
        assert.match(
            reasonOf(judgeServing(figures(1.6, { code: 1.6 }), { shape: MTP3, limits: LIMITS })),
            /below the floor 1\.75 \(the default for NEXTN with 3 steps and 4 draft tokens\)/,
        );
        assert.match(
            reasonOf(judgeServing(figures(2.9, { code: 2.9 }), { shape: MTP3, limits: { ...LIMITS, acceptLengthFloor: 3 } })),
            /below the floor 3\.00 \(readiness\.acceptLengthFloor\)/,
        );
        assert.equal(
            judgeServing(figures(1.2, { prose: 1.2 }), { shape: { ...MTP3, algorithm: "NGRAM" }, limits: LIMITS }).ok,
            true,
            "NGRAM: no floor, no collapse",
        );
    });

    it("fails a drop beyond the limits against the last good figures, acceptance first, and takes the configured limits", () => {
        const lastGood = figures(3.2, {}, 40);
        assert.match(
            reasonOf(judgeServing(figures(2.8, { code: 2.8 }), { shape: MTP3, lastGood, limits: LIMITS })),
            /^avg accept length 2\.80 \(NEXTN\) is 12\.5% below the last good config's 3\.20 \(NEXTN\)/,
        );
        assert.equal(judgeServing(figures(2.8, { code: 2.8 }), { shape: MTP3, lastGood, limits: { ...LIMITS, acceptLengthDropLimit: 0.2 } }).ok, true);
        assert.match(
            reasonOf(judgeServing(figures(3.2, { code: 3.2 }, 35), { shape: MTP3, lastGood, limits: LIMITS })),
            /^output throughput 35\.0 tok\/s is 12\.5% below the last good config's 40\.0 tok\/s/,
        );
        assert.equal(judgeServing(figures(3.2, { code: 3.2 }, 36), { shape: MTP3, lastGood, limits: LIMITS }).ok, true, "exactly at the limit");
    });

    it("names a config's own earlier figures, and when they were verified, when it is held to them (a return to an earlier config)", () => {
        const origin = { kind: "earlier" as const, verifiedAt: "2026-12-03T14:05:09.123Z" };
        const own = figures(3.2, {}, 40);
        assert.match(
            reasonOf(judgeServing(figures(2.8, { code: 2.8 }), { shape: MTP3, lastGood: own, origin, limits: LIMITS })),
            /^avg accept length 2\.80 \(NEXTN\) is 12\.5% below this config's own 3\.20 \(NEXTN\), verified 2026-12-03 14:05 UTC \(a return to an earlier config\), more than readiness\.acceptLengthDropLimit/,
        );
        assert.match(
            reasonOf(judgeServing(figures(3.2, { code: 3.2 }, 35), { shape: MTP3, lastGood: own, origin, limits: LIMITS })),
            /^output throughput 35\.0 tok\/s is 12\.5% below this config's own 40\.0 tok\/s, verified 2026-12-03 14:05 UTC \(a return to an earlier config\)/,
        );
        assert.match(
            reasonOf(judgeServing(figures(3.1, { code: 3.1 }), { shape: MTP3, lastGood: own, origin, limits: LIMITS })),
            /^ok: serving figures .* against this config's own avg accept length 3\.20 \(NEXTN\), 40\.0 tok\/s, verified 2026-12-03 14:05 UTC \(a return to an earlier config\): within 10%/,
        );
    });

    it("holds a server without speculation to the last good throughput alone", () => {
        const plain = { throughput: 25, buckets: { prose: { throughput: 25 } } };
        assert.match(
            reasonOf(judgeServing(plain, { lastGood: { algorithm: "NEXTN", acceptLength: 3.2, throughput: 40 }, limits: LIMITS })),
            /^output throughput 25\.0 tok\/s is 37\.5% below/,
        );
        assert.equal(judgeServing(plain, { lastGood: { algorithm: "NEXTN", acceptLength: 3.2 }, limits: LIMITS }).ok, true, "an old record without throughput");
    });
});
