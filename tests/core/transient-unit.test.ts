import assert from "node:assert/strict";
import { transientUnitRuns } from "../../core/unit/transient-unit";

describe("a transient unit's state (core/unit/transient-unit.ts)", () => {
    it("runs while systemctl is-active says active or activating, and has ended for every other answer, a collected unit's included", () => {
        for (const state of ["active", "activating"]) assert.equal(transientUnitRuns(state), true, state);
        for (const state of ["inactive", "failed", "deactivating", ""]) assert.equal(transientUnitRuns(state), false, state);
    });
});
