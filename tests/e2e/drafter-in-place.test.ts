import * as assert from "node:assert/strict";
import { Deployment, expectExit } from "../../lab/deployment";
import { DFLASH_BLOCK } from "../core/fixtures";
import { labStackConfig } from "../../lab/stack";
import { mainPid, onBox, service, useLab } from "./lab-box";

const API_KEY = "e2e-drafter-in-place-api-key-0123456789";
const DRAFTER = "/models/Qwen3.6-27B-DFlash";

// Issue 21's drafter republished in place (the same folder, other files) on the
// lab box: drift, and a pin to the digest the server loaded refuses it until the
// new digest is declared. Split from tests/e2e/drafter-switch.test.ts (issue 36)
// so neither file runs much over 5 min under a full run's load; the one engine
// run it adds is its deploy. A lab of its own (127.0.139.x).
describe("a drafter changed in place on the lab box: drift, refused while pinned to the old digest", function () {
    // About 1.5 min alone (2026-12-06: five engine runs, two server starts); allow for a full run's load on 2 cores.
    this.timeout(1_500_000);
    const lab = useLab("drafter-in-place", 139);

    it("the DFLASH drafter's folder changed in place is drift naming both digests; pinned to the digest the server loaded, up refuses it before anything stops, naming both; the new digest declared, up rolls it out again and the next preview is clean, the record shown beside it", async () => {
        const { labDir, info } = lab;
        const config = labStackConfig(info, "pct-exec");
        const dflash = { ...DFLASH_BLOCK, draftModelPath: DRAFTER };
        service(config).speculative = dflash;
        const d = await Deployment.create("lab", config);
        const pin = (digest: string) => {
            service(config).speculative = { ...dflash, draftModelDigest: digest };
            d.writeConfig(config);
        };
        try {
            d.giveApiKey(API_KEY);
            expectExit(await d.up(), 0, "up of the field config with the lab's DFlash drafter");

            // The drafter republished in place under the same folder: drift (exit 7), the digest the server loaded and the box's.
            await onBox(labDir, "container", `touch -d '2030-01-01 00:00' ${DRAFTER}/model.safetensors.index.json`);
            const report = await d.npmScript("drift", ["--stack", "lab", "--json"]);
            expectExit(report, 7, "npm run drift after the drafter changed in place");
            const changes = (JSON.parse(report.stdout) as { changes: { field: string; declared: unknown; actual: unknown }[] }).changes;
            const digests = changes.find((c) => c.field === "drafterDigestOnBox");
            assert.ok(digests, JSON.stringify(changes));
            const [loaded, now] = [digests.declared, digests.actual];
            assert.ok(typeof loaded === "string" && /^[0-9a-f]{32}$/.test(loaded), JSON.stringify(digests));
            assert.ok(typeof now === "string" && /^[0-9a-f]{32}$/.test(now) && now !== loaded, JSON.stringify(digests));

            // Pinned to the digest the server loaded: up refuses the changed folder before anything stops, naming both digests.
            pin(loaded);
            const pid = await mainPid(labDir);
            const refused = await d.up();
            assert.notEqual(refused.code, 0, refused.output);
            const changed = new RegExp(
                `draftModelDigest is ${loaded}, but the drafter folder /models/Qwen3\\.6-27B-DFlash on the box has digest ([0-9a-f]{32})`,
            ).exec(refused.output);
            assert.ok(changed, refused.output);
            assert.equal(changed[1], now, "the box's digest, as the drift named it");
            assert.equal(await mainPid(labDir), pid, "the server was not touched");

            // The new digest declared: up loads the drafter again through the checks.
            pin(changed[1]!);
            const again = await d.up();
            expectExit(again, 0, "up after the drafter changed in place, its new digest declared");
            assert.match(again.output, /rollout: the drafter folder \/models\/Qwen3\.6-27B-DFlash changed in place since the server loaded it/);
            // No drift once the server loaded the drafter as it is, and nothing to change (the pinned DFLASH config after a verified
            // rollout): the refresh carries the record, shown beside.
            const clean = await d.run(["preview", "--refresh", "--expect-no-changes"]);
            expectExit(clean, 0, "no drift once the server loaded the drafter as it is");
            assert.match(clean.output, /\[sglang-qwen\.service\] last good serving figures: avg accept length 3\.54 \(DFLASH\), 85\.9 tok\/s \(code 4\.92 /);
        } finally {
            d.cleanup();
        }
    });
});
