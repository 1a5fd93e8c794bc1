import assert from "node:assert/strict";
import { diffFields } from "../../core/drift/diff";

describe("field diffs", () => {
    it("lists only fields that differ, declared order first", () => {
        assert.deepEqual(diffFields({ a: 1, b: [1, 2], c: { x: 1 } }, { a: 1, b: [1, 3], c: { x: 1 }, d: true }), [
            { field: "b", declared: [1, 2], actual: [1, 3] },
            { field: "d", declared: undefined, actual: true },
        ]);
    });

    it("masks secret values on both sides but still reports the change", () => {
        assert.deepEqual(diffFields({ apiKey: "new", port: 1 }, { apiKey: "old", port: 1 }, ["apiKey"]), [
            { field: "apiKey", declared: "[secret]", actual: "[secret]" },
        ]);
    });

    it("shows a secret being set or removed", () => {
        assert.deepEqual(diffFields({ apiKey: "k" }, {}, ["apiKey"]), [{ field: "apiKey", declared: "[secret]", actual: undefined }]);
    });

    it("masks fields nested under a secret key", () => {
        assert.deepEqual(diffFields({ "env.SECRET": "a" }, { "env.SECRET": "b" }, ["env"]), [
            { field: "env.SECRET", declared: "[secret]", actual: "[secret]" },
        ]);
    });

    it("treats an undefined field and a missing one as equal", () => {
        assert.deepEqual(diffFields({ a: undefined, b: { c: undefined } }, { b: {} }), []);
    });
});
