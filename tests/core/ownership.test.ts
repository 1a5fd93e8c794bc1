import assert from "node:assert/strict";
import { decideDelete, decideWrite, formatOwner, namesOwner, parseOwner } from "../../core/unit/ownership";

const KPRO5 = { project: "sglang-serve", stack: "kpro5" };
const CT129 = { project: "sglang-serve", stack: "ct129" };
const OTHER_PROJECT = { project: "llm-lab", stack: "ct129" };
const where = "root@10.1.2.5:22 (pct exec 129)";
const unit = "sglang-qwen.service";

describe("ownership: changing a unit", () => {
    it("lets a stack change its own unit", () => {
        assert.deepEqual(decideWrite({ live: KPRO5, self: KPRO5, unit, where }), { kind: "ours" });
    });

    it("lets a stack adopt a unit that records no owner (hand-written, or written before owners)", () => {
        assert.deepEqual(decideWrite({ live: undefined, self: KPRO5, unit, where }), { kind: "unowned" });
    });

    it("refuses another stack's unit, naming the owner and service.takeOverFrom", () => {
        const decision = decideWrite({ live: CT129, self: KPRO5, unit, where });
        assert.equal(decision.kind, "refuse");
        if (decision.kind !== "refuse") return;
        assert.match(decision.message, /^sglang-qwen\.service on root@10\.1\.2\.5:22 \(pct exec 129\) belongs to stack ct129 of project sglang-serve/);
        assert.match(decision.message, /stack sglang-serve\/kpro5 does not change or delete it/);
        assert.match(decision.message, /set sglang-serve:service\.takeOverFrom: ct129 and run up again/);
    });

    it("takes over the unit of the stack service.takeOverFrom names", () => {
        assert.deepEqual(decideWrite({ live: CT129, self: KPRO5, takeOverFrom: "ct129", unit, where }), { kind: "take-over", from: CT129 });
        assert.deepEqual(decideWrite({ live: CT129, self: KPRO5, takeOverFrom: "sglang-serve/ct129", unit, where }), { kind: "take-over", from: CT129 });
    });

    it("refuses when service.takeOverFrom names another stack than the owner, saying so", () => {
        const decision = decideWrite({ live: CT129, self: KPRO5, takeOverFrom: "old-box", unit, where });
        assert.equal(decision.kind, "refuse");
        assert.match(decision.kind === "refuse" ? decision.message : "", /takeOverFrom is "old-box", which is not its owner/);
    });

    it("names a stack of another project with its project", () => {
        const decision = decideWrite({ live: OTHER_PROJECT, self: KPRO5, takeOverFrom: "ct129", unit, where });
        assert.equal(decision.kind, "refuse");
        assert.match(decision.kind === "refuse" ? decision.message : "", /takeOverFrom: llm-lab\/ct129 /);
        assert.equal(namesOwner("llm-lab/ct129", OTHER_PROJECT, KPRO5), true);
    });
});

describe("ownership: deleting a unit", () => {
    it("deletes its own unit or one that records no owner", () => {
        assert.deepEqual(decideDelete({ live: CT129, self: CT129, unit, where }), { kind: "delete" });
        assert.deepEqual(decideDelete({ live: undefined, self: CT129, unit, where }), { kind: "delete" });
    });

    it("leaves a unit another stack owns, naming it", () => {
        const decision = decideDelete({ live: KPRO5, self: CT129, unit, where });
        assert.equal(decision.kind, "leave");
        assert.match(decision.kind === "leave" ? decision.message : "", /not stopped or deleted: .* belongs to stack kpro5 of project sglang-serve/);
    });

    it("leaves an owned unit when the state predates owners (that stack never wrote one)", () => {
        assert.equal(decideDelete({ live: KPRO5, self: undefined, unit, where }).kind, "leave");
        assert.equal(decideDelete({ live: undefined, self: undefined, unit, where }).kind, "delete");
    });
});

describe("ownership: names", () => {
    it("formats and parses <project>/<stack>", () => {
        assert.equal(formatOwner(KPRO5), "sglang-serve/kpro5");
        assert.deepEqual(parseOwner("sglang-serve/kpro5"), KPRO5);
        assert.equal(parseOwner("kpro5"), undefined);
        assert.equal(parseOwner("a/b/c"), undefined);
    });
});
