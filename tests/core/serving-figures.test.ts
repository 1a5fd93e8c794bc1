import * as assert from "node:assert/strict";
import {
    acceptLengthDrift,
    describeFigures,
    figuresOf,
    figuresOfPasses,
    SERVING_MEASURED_PASSES,
    SERVING_WARMUP_PASSES,
} from "../../core/serving/serving-figures";

const NEXTN = { algorithm: "NEXTN", acceptLength: 1.7 };

describe("the last good config's figures (core/serving/serving-figures.ts)", () => {
    describe("the prompt set's figures (figuresOf)", () => {
        const m = (bucket: string, completionTokens: number, e2eLatencySeconds: number, verifyCount?: number) => ({
            bucket,
            completionTokens,
            e2eLatencySeconds,
            ...(verifyCount !== undefined ? { verifyCount } : {}),
        });

        it("sums tokens over verify steps and over SGLang's latency, per bucket and in total", () => {
            const f = figuresOf([m("code", 120, 2, 30), m("code", 80, 2, 20), m("prose", 100, 4, 50)], "NEXTN", null);
            assert.deepEqual(f, {
                algorithm: "NEXTN",
                acceptLength: 3,
                throughput: 37.5,
                buckets: { code: { acceptLength: 4, throughput: 50 }, prose: { acceptLength: 2, throughput: 25 } },
            });
            assert.equal(describeFigures(f), "avg accept length 3.00 (NEXTN), 37.5 tok/s (code 4.00 / 50.0 tok/s, prose 2.00 / 25.0 tok/s)");
        });

        it("takes the measured passes' median throughput, in total and per bucket, and the accept length over all of them (figuresOfPasses, issue 37)", () => {
            const pass = (codeSeconds: number, proseSeconds: number) => [m("code", 100, codeSeconds, 25), m("prose", 100, proseSeconds, 50)];
            // Totals per pass: 200 tokens over 4, 5 and 8 s (50, 40, 25 tok/s): the median is 40.
            const f = figuresOfPasses([pass(2, 2), pass(2, 3), pass(6, 2)], "NEXTN", null);
            assert.deepEqual(f, {
                algorithm: "NEXTN",
                acceptLength: 2.667,
                throughput: 40,
                buckets: { code: { acceptLength: 4, throughput: 50 }, prose: { acceptLength: 2, throughput: 50 } },
            });
            assert.equal(SERVING_WARMUP_PASSES, 1);
            assert.equal(SERVING_MEASURED_PASSES, 3);
            // One pass is figuresOf's figures.
            assert.deepEqual(figuresOfPasses([pass(2, 3)], "NEXTN", null), figuresOf(pass(2, 3), "NEXTN", null));
            // Two: the mean of the two.
            assert.equal(figuresOfPasses([pass(2, 2), pass(2, 3)], undefined, null).throughput, 45);
        });

        it("takes /server_info's figure when a request reported no verify steps, and has no accept length without speculation", () => {
            const partial = figuresOf([m("code", 100, 2, 25), m("prose", 100, 2)], "EAGLE3", 2.2);
            assert.equal(partial.acceptLength, 2.2);
            assert.deepEqual(partial.buckets, { code: { acceptLength: 4, throughput: 50 }, prose: { throughput: 50 } });
            const plain = figuresOf([m("prose", 90, 3)], undefined, null);
            assert.deepEqual(plain, { throughput: 30, buckets: { prose: { throughput: 30 } } });
            assert.equal(describeFigures(plain), "30.0 tok/s (prose 30.0 tok/s)");
        });
    });

    describe("the running server against them, at a refresh (acceptLengthDrift)", () => {
        it("is drift naming both figures when the live figure fell more than the limit", () => {
            assert.equal(
                acceptLengthDrift(1.2, NEXTN, 0.1),
                "the running server's avg accept length 1.20 is 29.4% below the recorded 1.70 (NEXTN), more than readiness.acceptLengthDropLimit (10%)",
            );
        });

        it("is no drift within the limit, at the limit, above the record, or when either figure is unknown", () => {
            assert.equal(acceptLengthDrift(1.6, NEXTN, 0.1), undefined);
            assert.equal(acceptLengthDrift(1.7 * 0.9, NEXTN, 0.1), undefined);
            assert.equal(acceptLengthDrift(3.1, NEXTN, 0.1), undefined);
            assert.equal(acceptLengthDrift(null, NEXTN, 0.1), undefined, "no avg_spec_accept_length reported yet");
            assert.equal(acceptLengthDrift(1.2, undefined, 0.1), undefined, "nothing recorded (no verified rollout with speculation)");
        });

        it("takes the configured limit", () => {
            assert.equal(acceptLengthDrift(1.2, NEXTN, 0.5), undefined);
            assert.match(acceptLengthDrift(1.6, NEXTN, 0.05)!, /5\.9% below the recorded 1\.70 \(NEXTN\), more than readiness\.acceptLengthDropLimit \(5%\)$/);
        });
    });
});
