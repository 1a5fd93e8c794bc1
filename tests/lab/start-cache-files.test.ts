import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pruneStartCache, pthText, startCacheEnabled, systemSitePthText } from "../../lab/sglang/venvs";

// The start cache's files on the lab's side (lab/sglang/venvs.ts): what the
// venvs' .pth hands the boot, and how lab up bounds the records.

describe("the lab's start cache files", function () {
    let dir: string;
    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "start-cache-files-"));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("hands the boot the start cache in every .pth, and leaves it out where the lab comes up with SGLANG_LAB_START_CACHE=off", () => {
        assert.match(
            pthText("0.5.11", true),
            /^import sglang_lab_venv; sglang_lab_venv\.boot\("\/var\/lib\/sglang-lab", "\/var\/cache\/sglang-lab\/starts"\)$/m,
        );
        assert.match(systemSitePthText(true), /sglang_lab_venv\.boot\("\/var\/lib\/sglang-lab", "\/var\/cache\/sglang-lab\/starts"\)$/m);
        assert.match(pthText("0.5.11", false), /^import sglang_lab_venv; sglang_lab_venv\.boot\("\/var\/lib\/sglang-lab"\)$/m);
        assert.equal(startCacheEnabled({ SGLANG_LAB_START_CACHE: "off" }), false);
        assert.equal(startCacheEnabled({}), true);
    });

    it("keeps the most recently used records and removes the rest, and a temporary file only once it is old", () => {
        const now = Date.now() / 1000;
        for (let i = 0; i < 5; i++) {
            const f = path.join(dir, `key${i}.json`);
            fs.writeFileSync(f, "{}");
            fs.utimesSync(f, now - 100 * i, now - 100 * i);
        }
        const fresh = path.join(dir, "key9.json.tmp.123");
        const stale = path.join(dir, "key8.json.tmp.456");
        fs.writeFileSync(fresh, "");
        fs.writeFileSync(stale, "");
        fs.utimesSync(stale, now - 7200, now - 7200);
        pruneStartCache(dir, 3);
        assert.deepEqual(fs.readdirSync(dir).sort(), ["key0.json", "key1.json", "key2.json", "key9.json.tmp.123"]);
    });
});
