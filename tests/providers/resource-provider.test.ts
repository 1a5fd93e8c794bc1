import * as assert from "node:assert/strict";
import { keepingProviderModule, ResourceInitFailed } from "../../providers/resource-provider";

describe("providers/resource-provider: a create or update that half-succeeded", () => {
    const inputs = { unitName: "sglang-qwen.service", __provider: "exports.handler = ..." };

    it("records the provider module the inputs carry with the failure's properties", async () => {
        const failing = () => Promise.reject(new ResourceInitFailed("rollout failed", "id-1", { activeState: "active" }, ["rollout failed"]));
        await assert.rejects(keepingProviderModule(inputs, failing), (e: ResourceInitFailed) => {
            assert.equal(e.id, "id-1");
            assert.deepEqual(e.properties, { activeState: "active", __provider: "exports.handler = ..." });
            assert.deepEqual(e.reasons, ["rollout failed"]);
            assert.equal(e.message, "rollout failed");
            return true;
        });
    });

    it("passes other errors and results through unchanged", async () => {
        const plain = new Error("ssh: connection refused");
        await assert.rejects(
            keepingProviderModule(inputs, () => Promise.reject(plain)),
            (e: unknown) => e === plain && !("properties" in plain),
        );
        assert.deepEqual(await keepingProviderModule(inputs, () => Promise.resolve({ outs: 1 })), { outs: 1 });
    });
});
