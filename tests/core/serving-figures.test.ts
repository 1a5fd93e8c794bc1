import * as assert from "node:assert/strict";
import { acceptLengthDrift, judgeAcceptLength } from "../../core/serving-figures";

const NEXTN = { algorithm: "NEXTN", acceptLength: 1.7 };

describe("the last good config's figures (core/serving-figures.ts)", () => {
    describe("a rollout's new config against them (judgeAcceptLength)", () => {
        it("keeps a config within the drop limit, and refuses one below it naming both figures and the way out", () => {
            assert.equal(judgeAcceptLength({ algorithm: "DFLASH", acceptLength: 1.6 }, NEXTN, 0.1).ok, true);
            const worse = judgeAcceptLength({ algorithm: "DFLASH", acceptLength: 1.3 }, NEXTN, 0.1);
            assert.ok(!worse.ok);
            assert.equal(
                worse.reason,
                "avg accept length 1.30 (DFLASH) is 23.5% below the last good config's 1.70 (NEXTN), more than readiness.acceptLengthDropLimit (10%): " +
                    "the change serves worse and is not kept (raise readiness.acceptLengthDropLimit to accept it anyway)",
            );
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
