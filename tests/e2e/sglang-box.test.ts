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
//
// One deployment for the file (issue 36: fewer engine runs), its tests in
// order. The refusals and the upgrade are read on the `up`s' own output: `up`
// runs the provider's check, which is the preview's judgement (the box's
// facts, SGLang's own verdict, its notices), before anything changes, and
// `--diff` shows what the preview would; a refused check is what a preview
// refuses, with the same message.
describe("SGLang on the lab box: auto, extraArgs, an upgrade to 0.5.23, and the box's own facts", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;
    /**
     * One deployment: the first test deploys auto and the extraArgs; those
     * after it declare the field config (0.5.11) with a change each, refused
     * (they leave the box as the first test left it), then the upgrade, last.
     */
    let d: Deployment;

    /** The field config as declared, written for the deployment: each test after the first starts from it. */
    function fieldConfig(): StackConfigFile {
        const config = labStackConfig(info, "pct-exec");
        d.writeConfig(config);
        return config;
    }

    before(async () => {
        ({ labDir, info } = await startLab("sglang-box", 124));
        d = await Deployment.create("lab", labStackConfig(info, "pct-exec"));
        d.giveApiKey(API_KEY);
    });
    after(async () => {
        d?.cleanup();
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
        d.writeConfig(config);
        expectExit(await d.up(), 0, "up with auto and the extraArgs");
        // The real release in the lab's venv parsed them: its own /server_info holds what SGLang runs.
        const live = await serverInfoOnBox(labDir, info, API_KEY);
        assert.deepEqual(live.cuda_graph_bs, [1, 2, 4, 8]);
        assert.equal(live.json_model_override_args, json);
        const before = await mainPid(labDir);
        expectExit(await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]), 0, "second up changes nothing");
        assert.equal(await mainPid(labDir), before);
    });

    it("declaring sglangVersion 0.5.10 on a box whose venv has 0.5.11, and a model folder that is not there, fails at the check naming both versions and the folder, with nothing on the box changed", async () => {
        const config = fieldConfig();
        const unitBefore = await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`);
        const pidBefore = await mainPid(labDir);
        // Two facts of the box that cannot mask each other (its python's release; the model folder, read again for the new
        // path): both are reported by the one check.
        service(config).sglangVersion = "0.5.10";
        (service(config).model as Record<string, unknown>).path = "/models/not-there";
        d.writeConfig(config);
        const up = await d.up();
        assert.notEqual(up.code, 0, up.output);
        assert.match(up.output, /service\.sglangVersion is 0\.5\.10 but \/opt\/sglang\/venv\/bin\/python3 has SGLang 0\.5\.11 installed/);
        assert.match(up.output, /service\.model\.path \/models\/not-there does not exist on the box/);
        assert.equal(await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`), unitBefore);
        assert.equal(await mainPid(labDir), pidBefore);
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
    });

    it("a context length above the box model's, and what only SGLang's own code refuses, fail at the check before the running server is touched", async () => {
        const config = fieldConfig();
        const pidBefore = await mainPid(labDir);
        // Issue 18: a context length above what the box's config.json gives (262,144 for Qwen3.6-27B) is refused. (Not in one
        // run with the next: SGLang's own code is asked only when the box's facts refuse nothing.)
        service(config).extraArgs = ["--reasoning-parser", "qwen3", "--context-length", "300000"];
        d.writeConfig(config);
        const context = await d.up();
        assert.notEqual(context.code, 0, context.output);
        assert.match(
            context.output,
            /service\.extraArgs\[2\] is --context-length 300000: SGLang 0\.5\.11 refuses it at startup with ValueError: Warning: User-specified context_length \(300000\) is greater than the derived context_length \(262144\)/,
        );
        assert.equal(await mainPid(labDir), pidBefore, "the running server was not touched");
        // Issue 18 item 1: what only SGLang's own code says (check_server_args, not modelled by the stack's rules) is refused
        // with SGLang's text under the element it is about, before anything on the box changes.
        service(config).extraArgs = ["--enable-metrics", "--export-metrics-to-file"];
        d.writeConfig(config);
        const refused = await d.up();
        assert.notEqual(refused.code, 0, refused.output);
        const refusal =
            /property service\.extraArgs\[1\] .*has a problem: SGLang 0\.5\.11's own code refuses the server this config renders \(run here with the box's config\.json, before anything on the box changes\): ValueError: --export-metrics-to-file-dir is required when --export-metrics-to-file is enabled/;
        assert.match(refused.output, refusal, refused.output.slice(-4000));
        assert.equal(await mainPid(labDir), pidBefore, "the running server was not touched");
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
    });

    it("an upgrade to 0.5.23 in its own venv: up shows the strategy's renamed flag and SGLANG_ENABLE_SPEC_V2 left out, brings 0.5.23 to ready, and a second up changes nothing", async () => {
        const config = fieldConfig();
        service(config).sglangVersion = "0.5.23";
        service(config).python = "/opt/sglang/venv-0.5.23/bin/python3";
        d.writeConfig(config);
        const up = await d.up();
        expectExit(up, 0, "up with 0.5.23");
        assert.match(up.output, /--mamba-radix-cache-strategy/);
        assert.match(up.output, /SGLANG_ENABLE_SPEC_V2 is not written into the unit: SGLang 0\.5\.23 has no SGLANG_ENABLE_SPEC_V2/);
        // Issue 18: judged by 0.5.23's own code (its venv's facts, read again for the new python), and clean: no warning.
        assert.match(up.output, /\[sglang-qwen\.service\] SGLang 0\.5\.23's own code accepts this server/);
        assert.doesNotMatch(up.output, /^\s*warning:/m);
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
