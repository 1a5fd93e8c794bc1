import * as assert from "node:assert/strict";
import type { ServingFigures } from "../../core/serving/serving-figures";
import {
    figuresHeldTo,
    heldFiguresPhrase,
    heldToShown,
    SERVING_HISTORY_SIZE,
    shownVerifiedAt,
    VerifiedConfig,
    withVerified,
} from "../../core/serving/serving-history";

const NEXTN: ServingFigures = { algorithm: "NEXTN", acceptLength: 1.72, throughput: 45.2 };
const DFLASH: ServingFigures = { algorithm: "DFLASH", acceptLength: 3.54, throughput: 85.9 };
const verified = (config: string, figures: ServingFigures, verifiedAt = "2026-12-03T14:05:09.123Z"): VerifiedConfig => ({ config, verifiedAt, figures });

describe("the last good figures per served config (core/serving/serving-history.ts)", () => {
    it("keeps the newest verified config first, and a config verified again only once, with its latest figures", () => {
        let history = withVerified(undefined, verified("nextn", NEXTN));
        history = withVerified(history, verified("dflash", DFLASH));
        assert.deepEqual(
            history.map((e) => e.config),
            ["dflash", "nextn"],
        );
        const better = { ...NEXTN, acceptLength: 1.8 };
        history = withVerified(history, verified("nextn", better, "2026-12-04T09:00:00.000Z"));
        assert.deepEqual(history, [verified("nextn", better, "2026-12-04T09:00:00.000Z"), verified("dflash", DFLASH)]);
    });

    it(`keeps at most ${SERVING_HISTORY_SIZE} configs, dropping the oldest`, () => {
        let history: VerifiedConfig[] | undefined;
        for (let i = 0; i < SERVING_HISTORY_SIZE + 3; i++) history = withVerified(history, verified(`c${i}`, NEXTN));
        assert.equal(history!.length, SERVING_HISTORY_SIZE);
        assert.equal(history![0]!.config, `c${SERVING_HISTORY_SIZE + 2}`);
        assert.equal(history!.at(-1)!.config, "c3", "c0, c1 and c2 dropped");
    });

    it("holds a config verified before to its own last figures, naming when: a return to an earlier config", () => {
        const history = [verified("dflash", DFLASH), verified("nextn", NEXTN)];
        assert.deepEqual(figuresHeldTo("nextn", history, DFLASH), { figures: NEXTN, origin: { kind: "earlier", verifiedAt: "2026-12-03T14:05:09.123Z" } });
    });

    it("holds a new config, and the last good config itself, to the current last good", () => {
        const history = [verified("dflash", DFLASH), verified("nextn", NEXTN)];
        assert.deepEqual(figuresHeldTo("eagle3", history, DFLASH), { figures: DFLASH, origin: { kind: "last-good" } });
        const recorded = { ...DFLASH, acceptLength: 3.6 };
        assert.deepEqual(
            figuresHeldTo("dflash", history, recorded),
            { figures: recorded, origin: { kind: "last-good" } },
            "servingFigures: the last good's record",
        );
    });

    it("holds every config of a state written before the history to its servingFigures, and none when there are none", () => {
        assert.deepEqual(figuresHeldTo("nextn", undefined, DFLASH), { figures: DFLASH, origin: { kind: "last-good" } });
        assert.equal(figuresHeldTo("nextn", undefined, undefined), undefined);
    });

    it("holds a config verified before to its own figures when the record has no current last good", () => {
        const held = figuresHeldTo("nextn", [verified("nextn", NEXTN)], undefined);
        assert.deepEqual(held, { figures: NEXTN, origin: { kind: "earlier", verifiedAt: "2026-12-03T14:05:09.123Z" } });
    });

    it("names the figures as the gate and the preview hold them", () => {
        assert.equal(heldFiguresPhrase({ kind: "last-good" }, "1.72 (NEXTN)"), "the last good config's 1.72 (NEXTN)");
        assert.equal(heldFiguresPhrase(undefined, "1.72 (NEXTN)"), "the last good config's 1.72 (NEXTN)");
        assert.equal(
            heldFiguresPhrase({ kind: "earlier", verifiedAt: "2026-12-03T14:05:09.123Z" }, "1.72 (NEXTN)"),
            "this config's own 1.72 (NEXTN), verified 2026-12-03 14:05 UTC (a return to an earlier config)",
        );
        assert.equal(heldToShown({ figures: NEXTN, origin: { kind: "last-good" } }), "the last good avg accept length 1.72 (NEXTN), 45.2 tok/s");
        assert.equal(
            heldToShown({ figures: NEXTN, origin: { kind: "earlier", verifiedAt: "2026-12-03T14:05:09.123Z" } }),
            "its own earlier avg accept length 1.72 (NEXTN), 45.2 tok/s, verified 2026-12-03 14:05 UTC (a return to an earlier config)",
        );
        assert.equal(shownVerifiedAt("yesterday"), "yesterday", "a record that is not a date, as it is");
    });
});
