import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { faultsForThisStart, readFaults } from "../../lab/sglang/faults";

// The `firstStarts` fault knob (issue 13's flaky start that passes on retry):
// only the first N starts get the faults, counted per setFaults.

describe("lab fault knob firstStarts", () => {
    let dir: string;
    let file: string;
    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-faults-"));
        file = path.join(dir, "faults.json");
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const write = (faults: object, mtimeSeconds: number): void => {
        fs.writeFileSync(file, JSON.stringify(faults));
        fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
    };

    it("gives the faults to the first N starts only, then behaves", () => {
        write({ dieAfterReadySeconds: 2, firstStarts: 2 }, 1_000);
        const starts = [1, 2, 3].map(() => faultsForThisStart(file, readFaults(file)));
        assert.deepEqual(starts, [{ dieAfterReadySeconds: 2, firstStarts: 2 }, { dieAfterReadySeconds: 2, firstStarts: 2 }, {}]);
    });

    it("counts again from zero after the faults are set again", () => {
        write({ crashAfterSeconds: 1, firstStarts: 1 }, 1_000);
        assert.equal(faultsForThisStart(file, readFaults(file)).crashAfterSeconds, 1);
        assert.deepEqual(faultsForThisStart(file, readFaults(file)), {});
        write({ crashAfterSeconds: 1, firstStarts: 1 }, 2_000);
        assert.equal(faultsForThisStart(file, readFaults(file)).crashAfterSeconds, 1);
    });

    it("leaves faults without firstStarts as they are, on every start", () => {
        write({ neverReady: true }, 1_000);
        for (let i = 0; i < 3; i++) assert.deepEqual(faultsForThisStart(file, readFaults(file)), { neverReady: true });
        assert.equal(fs.existsSync(`${file}.starts`), false);
    });
});
