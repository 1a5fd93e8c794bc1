import * as assert from "node:assert/strict";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import type { ServiceOutputs, ServiceProps } from "../../providers/sglang-server/props";
import { CONTAINER_CONF, declaredService, ProviderBox, readinessSettings, serviceInputs } from "./provider-box";

// What one engine run sends to the box for a server (issue 35 item 3): the
// engine refreshes (read), checks, diffs and updates in one provider process,
// one ProviderRun. The box's facts and the drafter folder's are read once per
// run and shared by the refresh, check and the rollout.

const ID = "127.0.0.1:129:sglang-qwen.service";
const MODEL = "/models/Qwen3.6-27B";
const DRAFTER = "/models/Qwen3.6-27B-DFlash";

describe("the box's facts in one engine run against the fake box", function () {
    this.timeout(60_000);
    let box: ProviderBox;

    beforeEach(async () => {
        box = await ProviderBox.open();
        box.write("etc/pve/lxc/129.conf", CONTAINER_CONF, 0o640);
        // A DFlash drafter folder without a config.json: SGLang's own verdict waits for it (a notice), so no release code runs here.
        box.write(`${DRAFTER.slice(1)}/model.safetensors`, "drafter weights");
    });
    afterEach(async () => {
        await box.close();
    });

    /**
     * The field's server with a DFlash drafter, as the component declares it
     * (with the box's expectations), at `memFractionStatic`; the fake server's
     * accept length (1.83) passes with a floor of 1.
     */
    const declared = (memFractionStatic: number): ServiceProps =>
        serviceInputs(
            box,
            declaredService(box, (raw) => {
                raw.speculative = { algorithm: "DFLASH", draftModelPath: DRAFTER, numSteps: 1, eagleTopk: 1, numDraftTokens: 16 };
                raw.memFractionStatic = memFractionStatic;
            }),
            { withBox: true, readiness: readinessSettings({ acceptLengthFloor: 1 }) },
        );

    /** One engine run in a fresh provider process: refresh, check, diff and, for `up`, update; the commands it sent. */
    const engineRun = async (recorded: ServiceOutputs, news: ServiceProps, update: boolean): Promise<string[]> => {
        const provider = sglangServiceProvider(box.newRun());
        box.forget();
        const read = await provider.read!(ID, recorded);
        const checked = await provider.check!(read.inputs!, news);
        assert.deepEqual(checked.failures ?? [], []);
        const diff = await provider.diff!(ID, read.props!, checked.inputs!);
        if (update && diff.changes) await provider.update!(ID, read.props!, checked.inputs!);
        return [...box.commands];
    };

    /** The box facts reads (core/box/box-facts.ts boxFactsCommand) of a folder among `commands`. */
    const factsReads = (commands: string[], folder: string) =>
        commands.filter((c) => c.includes("import glob, json, os, stat, subprocess, sys") && c.endsWith(` ${folder} sglang`)).length;

    it("reads the model folder's and the drafter folder's facts once in an up that rolls out a changed flag: the refresh's, for check and the rollout", async () => {
        const first = await sglangServiceProvider(box.run).create(declared(0.88));
        const commands = await engineRun(first.outs!, declared(0.85), true);
        assert.ok(
            box.said.some((l) => l.includes("rollout: changed: --mem-fraction-static")),
            box.said.join("\n"),
        );
        assert.equal(factsReads(commands, MODEL), 1, commands.join("\n"));
        assert.equal(factsReads(commands, DRAFTER), 1, commands.join("\n"));
    });

    it("reads them once in a preview, and again in the next engine run: a run shares nothing with the next", async () => {
        const first = await sglangServiceProvider(box.run).create(declared(0.88));
        for (let run = 0; run < 2; run++) {
            const commands = await engineRun(first.outs!, declared(0.85), false);
            assert.equal(factsReads(commands, MODEL), 1, commands.join("\n"));
            assert.equal(factsReads(commands, DRAFTER), 1, commands.join("\n"));
        }
    });
});
