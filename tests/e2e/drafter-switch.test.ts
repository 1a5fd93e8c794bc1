import * as assert from "node:assert/strict";
import { clearFaults, labDown, setFaults } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { onBox, serverInfoOnBox, startLab } from "./lab-box";

const API_KEY = "e2e-drafter-api-key-0123456789abcd";

/** Recorded serving figures: [accept length, throughput] in total and for code, prose and long context, in that order. */
function recorded(algorithm: string, ...[total, code, prose, long]: [number, number][]) {
    const figures = ([acceptLength, throughput]: [number, number]) => ({ acceptLength, throughput });
    return { algorithm, ...figures(total!), buckets: { code: figures(code!), prose: figures(prose!), "long-context": figures(long!) } };
}

/**
 * What the serving-quality gate measures on the lab box over the shipped prompt set (lab/sglang/speculation.ts):
 * the checkpoint's MTP head with one step, and the lab's DFlash drafter with a 16-token block.
 */
const NEXTN_FIGURES = recorded("NEXTN", [1.72, 45.17], [1.803, 51.17], [1.707, 48.44], [1.6, 32.98]);
const DFLASH_FIGURES = recorded("DFLASH", [3.536, 85.86], [4.923, 136.97], [3.282, 94.4], [2.51, 44.55]);

function service(config: StackConfigFile): Record<string, unknown> {
    return config["sglang-serve:service"]!;
}

/** The service's servingFigures output in the state (`pulumi stack export`): the last good config's figures. */
async function servingFigures(d: Deployment): Promise<unknown> {
    const r = await d.run(["stack", "export"]);
    expectExit(r, 0, "stack export");
    const resources = (JSON.parse(r.stdout) as { deployment: { resources?: Array<{ type: string; outputs?: { servingFigures?: unknown } }> } }).deployment
        .resources;
    return resources?.find((x) => x.type === "pulumi-nodejs:dynamic/sglang-serve:SglangService")?.outputs?.servingFigures;
}

// Issue 21's drafter switch on the lab box (its drafters say how well they draft,
// lab/sglang/simulator.ts): kept only when it serves at least as well as the last
// good config. A lab of its own (127.0.127.x), beside tests/e2e/sglang-box.test.ts.
describe("switching the drafter on the lab box: NEXTN to DFLASH, held to the last good figures", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;

    before(async () => {
        ({ labDir, info } = await startLab("drafter", 127));
    });
    after(async () => {
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("NEXTN to DFLASH (issue 21): a drafter accepting over 10% less than NEXTN's recorded figure fails the up naming both, NEXTN serves again and the change stays pending; the good drafter (steps 1, topk 1, draft tokens 16) is kept, its figures recorded, a later preview shows no drift, a change decoding 20% slower is not kept, and the drafter changed in place is drift that up rolls out again", async () => {
        const config = labStackConfig(info, "pct-exec");
        const d = await Deployment.create("lab", config);
        const dflash = (draftModelPath: string) => ({ algorithm: "DFLASH", draftModelPath, numSteps: 1, eagleTopk: 1, numDraftTokens: 16 });
        try {
            d.giveApiKey(API_KEY);
            expectExit(await d.up(), 0, "up of the field config (NEXTN, one step)");
            assert.deepEqual(await servingFigures(d), NEXTN_FIGURES);

            // The lab's drafter stand-in says how well it drafts (lab/sglang/speculation.ts): this one accepts 3 of 10 draft tokens.
            await onBox(
                labDir,
                "container",
                `rm -rf /models/weak-drafter && cp -r /models/Qwen3.6-27B-DFlash /models/weak-drafter && echo '{"acceptRate": 0.3}' > /models/weak-drafter/sglang-lab.json`,
            );
            service(config).speculative = dflash("/models/weak-drafter");
            d.writeConfig(config);
            const weak = await d.up();
            assert.notEqual(weak.code, 0, weak.output);
            assert.match(
                weak.output,
                /avg accept length 1\.42 \(DFLASH\) is 17\.3% below the last good config's 1\.72 \(NEXTN\), more than readiness\.acceptLengthDropLimit \(10%\)/,
            );
            assert.match(weak.output, /previous unit was put back and is ready again/);
            assert.equal((await serverInfoOnBox(labDir, info, API_KEY)).speculative_algorithm, "EAGLE", "NEXTN (shown as EAGLE) serves again");
            assert.deepEqual(await servingFigures(d), NEXTN_FIGURES, "the last good figures stay");
            assert.notEqual((await d.run(["preview", "--refresh", "--expect-no-changes"])).code, 0, "the change stays pending");

            service(config).speculative = dflash("/models/Qwen3.6-27B-DFlash");
            d.writeConfig(config);
            const preview = await d.preview();
            expectExit(preview, 0, "preview of the DFLASH config");
            assert.match(
                preview.output,
                /held to the last good avg accept length 1\.72 \(NEXTN\), 45\.2 tok\/s \(code 1\.80 \/ 51\.2 tok\/s, long-context 1\.60 \/ 33\.0 tok\/s, prose 1\.71 \/ 48\.4 tok\/s\): accept length at most 10% below, throughput at most 10% below/,
            );
            const good = await d.up();
            expectExit(good, 0, "up with the lab's DFlash drafter");
            assert.match(
                good.output,
                /serving figures avg accept length 3\.54 \(DFLASH\), 85\.9 tok\/s \(code 4\.92 \/ 137\.0 tok\/s, .*\) against the last good config's avg accept length 1\.72 \(NEXTN\), 45\.2 tok\/s: within 10% \(accept length\) and 10% \(throughput\)/,
            );
            const live = await serverInfoOnBox(labDir, info, API_KEY);
            assert.equal(live.speculative_algorithm, "DFLASH");
            assert.equal(live.speculative_num_draft_tokens, 16);
            assert.deepEqual(await servingFigures(d), DFLASH_FIGURES);
            assert.deepEqual((await d.outputs()).servingFigures, DFLASH_FIGURES, "the stack output");
            const after = await d.run(["preview", "--refresh", "--expect-no-changes"]);
            expectExit(after, 0, "no drift after the DFLASH deploy");
            assert.match(after.output, /\[sglang-qwen\.service\] last good serving figures: avg accept length 3\.54 \(DFLASH\), 85\.9 tok\/s \(code 4\.92 /);

            // A change that decodes 20% slower with the same acceptance (the lab's throughput knob, for the new config only; prefill as before): not kept.
            setFaults({ throughputFactor: 0.8, whenArgs: ["--max-running-requests", "32"] }, labDir);
            service(config).maxRunningRequests = 32;
            d.writeConfig(config);
            const slower = await d.up();
            assert.notEqual(slower.code, 0, slower.output);
            assert.match(
                slower.output,
                /output throughput 70\.8 tok\/s is 17\.5% below the last good config's 85\.9 tok\/s, more than readiness\.throughputDropLimit \(10%\)/,
            );
            assert.deepEqual(await servingFigures(d), DFLASH_FIGURES, "the last good figures stay");
            assert.equal((await serverInfoOnBox(labDir, info, API_KEY)).max_running_requests, 48, "the DFLASH server as it was serves again");
            clearFaults(labDir);
            delete service(config).maxRunningRequests;
            d.writeConfig(config);
            // Declared as it runs again: the up verifies the server that serves (the failed rollout's record is new) and restarts nothing.
            const back = await d.up();
            expectExit(back, 0, "up after declaring the DFLASH server as it runs");
            assert.doesNotMatch(back.output, /rollout:/);
            expectExit(await d.run(["preview", "--refresh", "--expect-no-changes"]), 0, "the box as declared again");
            // The drafter republished in place under the same folder: drift (exit 7), and up loads it again through the checks.
            await onBox(labDir, "container", "touch -d '2030-01-01 00:00' /models/Qwen3.6-27B-DFlash/model.safetensors.index.json");
            const report = await d.npmScript("drift", ["--stack", "lab", "--json"]);
            expectExit(report, 7, "npm run drift after the drafter changed in place");
            const changes = (JSON.parse(report.stdout) as { changes: { field: string }[] }).changes;
            assert.ok(
                changes.some((c) => c.field === "drafterDigestOnBox"),
                JSON.stringify(changes),
            );
            const again = await d.up();
            expectExit(again, 0, "up after the drafter changed in place");
            assert.match(again.output, /rollout: the drafter folder \/models\/Qwen3\.6-27B-DFlash changed in place since the server loaded it/);
            expectExit(await d.npmScript("drift", ["--stack", "lab", "--json"]), 0, "no drift once the server loaded the drafter as it is");
        } finally {
            d.cleanup();
        }
    });
});
