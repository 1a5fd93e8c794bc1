import * as assert from "node:assert/strict";
import { RunReads } from "../../providers/run-reads";

describe("what an engine run reads once (providers/run-reads.ts)", () => {
    it("asks the box once per key and gives every later ask that answer, in flight or done", async () => {
        const reads = new RunReads();
        let asked = 0;
        const read = async () => ++asked;
        const [a, b] = await Promise.all([reads.once("k", read), reads.once("k", read)]);
        assert.deepEqual([a, b, await reads.once("k", read), await reads.once("other", read)], [1, 1, 1, 2]);
    });

    it("keeps no failed read and no answer `keep` refuses: the next ask reads again", async () => {
        const reads = new RunReads();
        await assert.rejects(
            reads.once("k", async () => Promise.reject(new Error("ssh: connection reset"))),
            /connection reset/,
        );
        assert.equal(await reads.once("k", async () => "read"), "read");
        const keep = (answer: { error?: string }) => answer.error === undefined;
        assert.deepEqual(await reads.once("e", async () => ({ error: "python3 exited 1" }), { keep }), { error: "python3 exited 1" });
        assert.deepEqual(await reads.once("e", async () => ({}), { keep }), {});
    });

    it("reads again when asked for a fresh read, and keeps that", async () => {
        const reads = new RunReads();
        assert.equal(await reads.once("k", async () => "missing"), "missing");
        assert.equal(await reads.once("k", async () => "staged", { fresh: true }), "staged");
        assert.equal(await reads.once("k", async () => "not asked"), "staged");
    });
});
