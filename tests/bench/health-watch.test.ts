import * as assert from "node:assert/strict";
import { longestGap } from "../../bench/lib/health-watch";

// The downtime figure's arithmetic (bench/phases/downtime.ts): from the old
// server's last 200 to the new one's first, as a client polling /health saw it.
describe("the bench's /health watch: the downtime a client sees", () => {
    const at = (pattern: string) => [...pattern].map((c, i) => ({ t: i * 100, ok: c === "+" }));

    it("runs from the last 200 before the outage to the first after it", () => {
        assert.deepEqual(longestGap(at("+++----++")), { lastOk: 200, firstOk: 700 });
    });

    it("takes the longest outage when there are several", () => {
        assert.deepEqual(longestGap(at("+-+---+--+")), { lastOk: 200, firstOk: 600 });
    });

    it("sees no downtime without a 200 on both sides of the failures", () => {
        assert.equal(longestGap(at("+++++")), undefined);
        assert.equal(longestGap(at("---++")), undefined, "the watch started while the server was down");
        assert.equal(longestGap(at("++---")), undefined, "the server never came back");
    });
});
