import * as assert from "node:assert/strict";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import type { ServiceOutputs, ServiceProps } from "../../providers/sglang-server/props";
import { CONTAINER_CONF, declaredService, ProviderBox, readinessSettings, serviceInputs } from "./provider-box";

// What a provider run (one provider process, one ProviderRun) reads of the
// box for a server (issue 35 item 3): the box's facts and the drafter
// folder's once, shared by the verbs the run serves. The pinned engine
// (v3.248.0, Pulumi.yaml `refresh: always`) serves a no-op `up`'s refresh and
// check from one process, and an `up` that changes something from two: the
// refresh in one, check and update in the other (process ids seen in the lab).

const ID = "127.0.0.1:129:sglang-qwen.service";
const MODEL = "/models/Qwen3.6-27B";
const DRAFTER = "/models/Qwen3.6-27B-DFlash";

describe("the box's facts per provider run against the fake box", function () {
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

    /**
     * An `up`: the refresh, check, diff and, for `update`, update; in one
     * provider process, or (`split`) as the engine runs an `up` that changes
     * something, the refresh in one and the rest in another. The commands sent.
     */
    const up = async (recorded: ServiceOutputs, news: ServiceProps, opts: { update: boolean; split: boolean }): Promise<string[]> => {
        const refreshing = sglangServiceProvider(box.newRun());
        box.forget();
        const read = await refreshing.read!(ID, recorded);
        const provider = opts.split ? sglangServiceProvider(box.newRun()) : refreshing;
        const checked = await provider.check!(read.inputs!, news);
        assert.deepEqual(checked.failures ?? [], []);
        const diff = await provider.diff!(ID, read.props!, checked.inputs!);
        if (opts.update && diff.changes) await provider.update!(ID, read.props!, checked.inputs!);
        return [...box.commands];
    };

    /** The box facts reads (core/box/box-facts.ts boxFactsCommand) of a folder among `commands`. */
    const factsReads = (commands: string[], folder: string) =>
        commands.filter((c) => c.includes("import glob, json, os, stat, subprocess, sys") && c.endsWith(` ${folder} sglang`)).length;

    it("reads the model folder's and the drafter folder's facts once in a run that refreshes, checks and rolls out a changed flag", async () => {
        const first = await sglangServiceProvider(box.run).create(declared(0.88));
        const commands = await up(first.outs!, declared(0.85), { update: true, split: false });
        assert.ok(
            box.said.some((l) => l.includes("rollout: changed: --mem-fraction-static")),
            box.said.join("\n"),
        );
        assert.equal(factsReads(commands, MODEL), 1, commands.join("\n"));
        assert.equal(factsReads(commands, DRAFTER), 1, commands.join("\n"));
    });

    it("reads each once per process in an up the engine splits: the refresh's, then check's drafter read shared by the rollout before and after", async () => {
        const first = await sglangServiceProvider(box.run).create(declared(0.88));
        const commands = await up(first.outs!, declared(0.85), { update: true, split: true });
        assert.ok(
            box.said.some((l) => l.includes("rollout: changed: --mem-fraction-static")),
            box.said.join("\n"),
        );
        // The refresh's and the rollout's own (check judges with the facts the refresh recorded, reading none).
        assert.equal(factsReads(commands, MODEL), 2, commands.join("\n"));
        // The refresh's and check's; the rollout judges with check's and records what the new server loaded from it.
        assert.equal(factsReads(commands, DRAFTER), 2, commands.join("\n"));
    });

    it("reads them once in a preview, and again in the next: a run shares nothing with the next", async () => {
        const first = await sglangServiceProvider(box.run).create(declared(0.88));
        for (let run = 0; run < 2; run++) {
            const commands = await up(first.outs!, declared(0.85), { update: false, split: false });
            assert.equal(factsReads(commands, MODEL), 1, commands.join("\n"));
            assert.equal(factsReads(commands, DRAFTER), 1, commands.join("\n"));
        }
    });
});
