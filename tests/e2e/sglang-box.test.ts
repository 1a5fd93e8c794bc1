import * as assert from "node:assert/strict";
import { labDown } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { mainPid, onBox, serverInfoOnBox, service, startLab, UNIT } from "./lab-box";

const API_KEY = "e2e-sglang-box-api-key-0123456789ab";

// Issue 12's acceptance in the lab, whose container runs the real SGLang
// releases' config layer: an auto strategy that is not drift, extraArgs of
// every shape, an upgrade to 0.5.23, and the box's own facts (its SGLang
// release, its model) and SGLang's own verdict checked at preview. The DFlash
// drafter switch is tests/e2e/drafter-switch.test.ts.
describe("SGLang on the lab box: auto, extraArgs, an upgrade to 0.5.23, and the box's own facts", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;

    /**
     * The field config (0.5.11) deployed, for the tests after the first: one
     * deployment, its one `up` by the first test that asks for it. Each test
     * starts from the field config as declared; those before the upgrade leave
     * the box as it was (their changes are refused), the upgrade comes last.
     */
    let field: Deployment | undefined;
    async function fieldDeployment(): Promise<{ d: Deployment; config: StackConfigFile }> {
        const config = labStackConfig(info, "pct-exec");
        if (!field) {
            field = await Deployment.create("lab", config);
            field.giveApiKey(API_KEY);
            expectExit(await field.up(), 0, "up of the field config (0.5.11)");
        }
        field.writeConfig(config);
        return { d: field, config };
    }

    before(async () => {
        ({ labDir, info } = await startLab("sglang-box", 124));
    });
    after(async () => {
        field?.cleanup();
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("a stack with mambaSchedulerStrategy auto, no speculation, and extraArgs with several values and JSON: /server_info shows them, and a second up changes nothing and does not restart the server", async () => {
        const config = labStackConfig(info, "pct-exec");
        delete service(config).speculative;
        service(config).mambaSchedulerStrategy = "auto";
        // Issue 18's two commands that could not be written before: several values after one flag, and a JSON value.
        const json = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}';
        service(config).extraArgs = ["--cuda-graph-bs", "1", "2", "4", "8", "--json-model-override-args", json];
        const d = await Deployment.create("lab", config);
        try {
            d.giveApiKey(API_KEY);
            expectExit(await d.up(), 0, "up with auto and the extraArgs");
            // The real release in the lab's venv parsed them: its own /server_info holds what SGLang runs.
            const live = await serverInfoOnBox(labDir, info, API_KEY);
            assert.deepEqual(live.cuda_graph_bs, [1, 2, 4, 8]);
            assert.equal(live.json_model_override_args, json);
            const before = await mainPid(labDir);
            expectExit(await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]), 0, "second up changes nothing");
            assert.equal(await mainPid(labDir), before);
        } finally {
            d.cleanup();
        }
    });

    it("declaring sglangVersion 0.5.10 on a box whose venv has 0.5.11 fails the preview naming both versions, with nothing on the box changed", async () => {
        const { d, config } = await fieldDeployment();
        const unitBefore = await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`);
        const pidBefore = await mainPid(labDir);
        service(config).sglangVersion = "0.5.10";
        d.writeConfig(config);
        const preview = await d.preview("--refresh");
        assert.notEqual(preview.code, 0, preview.output);
        assert.match(preview.output, /service\.sglangVersion is 0\.5\.10 but \/opt\/sglang\/venv\/bin\/python3 has SGLang 0\.5\.11 installed/);
        const up = await d.up();
        assert.notEqual(up.code, 0, up.output);
        assert.equal(await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`), unitBefore);
        assert.equal(await mainPid(labDir), pidBefore);
    });

    it("a context length above the box model's, and what only SGLang's own code refuses, fail the preview, and a missing model folder fails the up, before the running server is touched", async () => {
        const { d, config } = await fieldDeployment();
        const pidBefore = await mainPid(labDir);
        // Issue 18: a context length above what the box's config.json gives (262,144 for Qwen3.6-27B) fails the preview.
        service(config).extraArgs = ["--reasoning-parser", "qwen3", "--context-length", "300000"];
        d.writeConfig(config);
        const preview = await d.preview("--refresh");
        assert.notEqual(preview.code, 0, preview.output);
        assert.match(
            preview.output,
            /service\.extraArgs\[2\] is --context-length 300000: SGLang 0\.5\.11 refuses it at startup with ValueError: Warning: User-specified context_length \(300000\) is greater than the derived context_length \(262144\)/,
        );
        // Issue 18 item 1: what only SGLang's own code says (check_server_args, not modelled by the stack's rules) fails the
        // preview with SGLang's text under the element it is about, and the up refuses it before anything on the box changes.
        service(config).extraArgs = ["--enable-metrics", "--export-metrics-to-file"];
        d.writeConfig(config);
        const judged = await d.preview("--refresh");
        assert.notEqual(judged.code, 0, judged.output);
        const refusal =
            /property service\.extraArgs\[1\] .*has a problem: SGLang 0\.5\.11's own code refuses the server this config renders \(run here with the box's config\.json, before anything on the box changes\): ValueError: --export-metrics-to-file-dir is required when --export-metrics-to-file is enabled/;
        assert.match(judged.output, refusal, judged.output.slice(-4000));
        const refused = await d.up();
        assert.notEqual(refused.code, 0, refused.output);
        assert.match(refused.output, /--export-metrics-to-file-dir is required/);
        assert.equal(await mainPid(labDir), pidBefore, "the running server was not touched");
        service(config).extraArgs = [];
        (service(config).model as Record<string, unknown>).path = "/models/not-there";
        d.writeConfig(config);
        const up = await d.up();
        assert.notEqual(up.code, 0, up.output);
        assert.match(up.output, /service\.model\.path \/models\/not-there does not exist on the box/);
        assert.equal(await mainPid(labDir), pidBefore);
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
    });

    it("an upgrade to 0.5.23 in its own venv: the preview shows the strategy's renamed flag and SGLANG_ENABLE_SPEC_V2 left out, up brings 0.5.23 to ready, and a second up changes nothing", async () => {
        const { d, config } = await fieldDeployment();
        service(config).sglangVersion = "0.5.23";
        service(config).python = "/opt/sglang/venv-0.5.23/bin/python3";
        d.writeConfig(config);
        const preview = await d.preview("--refresh");
        expectExit(preview, 0, "preview of the upgrade");
        assert.match(preview.output, /--mamba-radix-cache-strategy/);
        assert.match(preview.output, /SGLANG_ENABLE_SPEC_V2 is not written into the unit: SGLang 0\.5\.23 has no SGLANG_ENABLE_SPEC_V2/);
        // Issue 18: judged by 0.5.23's own code (its venv's facts, read again for the new python), and clean: no warning.
        assert.match(preview.output, /\[sglang-qwen\.service\] SGLang 0\.5\.23's own code accepts this server/);
        assert.doesNotMatch(preview.output, /^\s*warning:/m);
        expectExit(await d.up(), 0, "up with 0.5.23");
        const unit = await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`);
        assert.match(unit, /^ExecStart=\/opt\/sglang\/venv-0\.5\.23\/bin\/sglang serve /m);
        assert.match(unit, /^ {4}--mamba-radix-cache-strategy extra_buffer \\$/m);
        assert.doesNotMatch(unit, /--mamba-scheduler-strategy|SGLANG_ENABLE_SPEC_V2/);
        const live = await serverInfoOnBox(labDir, info, API_KEY);
        assert.equal(live.version, "0.5.23");
        assert.equal(live.mamba_radix_cache_strategy, "extra_buffer");
        assert.equal(live.speculative_algorithm, "EAGLE");
        const before = await mainPid(labDir);
        expectExit(await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]), 0, "second up changes nothing");
        assert.equal(await mainPid(labDir), before);
    });
});
