import assert from "node:assert/strict";
import { boxFactsCommand, parseBoxFacts } from "../../core/box/box-facts";
import { ServiceConfig } from "../../core/config/schema";
import { renderArgv } from "../../core/sglang/args";
import { renderServerConfigFile } from "../../core/unit/systemd-unit";
import { fieldService } from "../core/fixtures";
import { LabInfo } from "../../lab/control";
import { sglangVenvs } from "../../lab/sglang/venvs";
import { sglangVersions } from "../../sglang-release/oracle";
import { exec, httpRequest, installUnit, LAB_WAIT_MS, lab, ok, runUntilOutput, waitFor } from "./lab-fixture";

// The container's venvs run the real SGLang releases' config layer (argparse,
// prepare_server_args, ServerArgs) with the hardware stubbed; the simulator
// takes over at the launcher boundary (lab/sglang/sglang_lab_venv.py). These
// tests are about that config layer: every start here runs it (the lab's start
// cache off: lab/sglang/sglang_lab_start_cache.py).

/** A start's environment that runs the release's config layer even where the lab's start cache holds its record. */
const RUN_THE_RELEASE = "SGLANG_LAB_START_CACHE=off";

const KEY = "lab-venv-test-key-0123456789";
const DRAFTER = "/models/Qwen3.6-27B-DFlash";

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A unit running `service` as the stack renders it: the API key in SGLang's --config file, as the stack writes it. */
function unitFor(name: string, service: ServiceConfig): string {
    const argv = renderArgv(service, { configFile: `/etc/sglang/${name}.yaml` });
    const env = Object.entries({ ...service.environment, SGLANG_LAB_START_CACHE: "off" })
        .map(([k, v]) => `Environment=${k}=${v}\n`)
        .join("");
    return `[Unit]\nDescription=SGLang venv test\n\n[Service]\n${env}ExecStart=${argv.join(" ")}\n`;
}

async function start(name: string, service: ServiceConfig): Promise<void> {
    await ok("container", `mkdir -p /etc/sglang && (umask 077 && cat > /etc/sglang/${name}.yaml)`, renderServerConfigFile(KEY));
    await installUnit(`${name}.service`, unitFor(name, service));
    await ok("container", `systemctl daemon-reload && systemctl reset-failed ${name} 2>/dev/null; systemctl start ${name}`);
}

async function failed(name: string): Promise<string> {
    await waitFor(`${name} to fail`, async () => ((await exec("container", `systemctl is-active ${name}`)).stdout.trim() === "failed" ? true : undefined));
    return ok("container", `journalctl -u ${name} -o cat --no-pager`);
}

async function serverInfo(url: string): Promise<Record<string, unknown>> {
    await waitFor(`/health 200 at ${url}`, async () => ((await httpRequest(`${url}/health`).catch(() => null))?.status === 200 ? true : undefined));
    const r = await httpRequest(`${url}/server_info`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as Record<string, unknown>;
}

describe("the lab container's SGLang venvs (the real releases' config layer)", function () {
    this.timeout(2 * LAB_WAIT_MS);
    let info: LabInfo;
    let field: ServiceConfig;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
        field = { ...fieldService(), listenHost: info.container.address };
    });

    it("answers each venv's SGLang release from its package metadata, as the stack's box facts read it", async () => {
        // One per release of sglang-release/VERSIONS; the field's (0.5.11) at /opt/sglang/venv.
        const venvs = sglangVenvs(sglangVersions());
        assert.equal(venvs["0.5.11"], "/opt/sglang/venv");
        for (const [release, venv] of Object.entries(venvs)) {
            const facts = parseBoxFacts(await ok("container", boxFactsCommand(`${venv}/bin/python3`, "/models/Qwen3.6-27B").map(sh).join(" ")));
            assert.equal(facts.sglangVersion, release, venv);
        }
    });

    it("gives the stack the model folder's real facts: architecture, layer types, one MTP layer, about 53.8 GB of weights", async () => {
        const facts = parseBoxFacts(await ok("container", boxFactsCommand("/opt/sglang/venv/bin/python3", "/models/Qwen3.6-27B").map(sh).join(" ")));
        assert.equal(facts.model, "present");
        assert.equal(facts.architecture, "Qwen3_5ForConditionalGeneration");
        assert.equal(facts.mtpLayers, 1);
        assert.equal(facts.layerTypes?.filter((t) => t === "linear_attention").length, 48);
        assert.ok(Math.abs((facts.weightsBytes ?? 0) / 1e9 - 53.8) < 0.1, String(facts.weightsBytes));
    });

    it("runs plain python3 -c scripts with the container's own interpreter inside the venv", async () => {
        const out = await ok(
            "container",
            `/opt/sglang/venv-0.5.10/bin/python3 -c ${sh("import sys; print(sys.prefix, sys.base_prefix, sys.version_info[:2] == (3, 11))")}`,
        );
        assert.equal(out, "/opt/sglang/venv-0.5.10 /usr True\n");
    });

    it("fails a unit with speculative.algorithm MTP with SGLang 0.5.11's own argparse error and exit 2", async () => {
        await start("sglang-mtp", { ...field, port: 30201, speculative: { ...field.speculative!, algorithm: "MTP" as "NEXTN" } });
        const log = await failed("sglang-mtp");
        assert.match(log, /^usage: sglang serve \[-h\] --model-path MODEL_PATH/m);
        assert.match(
            log,
            /^sglang serve: error: argument --speculative-algorithm: invalid choice: 'MTP' \(choose from 'DFLASH', 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM'\)$/m,
        );
        assert.match(log, /^sglang-mtp\.service: Main process exited, code=exited, status=2\/INVALIDARGUMENT$/m);
    });

    it("fails a unit with the no_buffer strategy with SGLang's own ValueError traceback and exit 1", async () => {
        await start("sglang-nobuf", { ...field, port: 30202, mambaSchedulerStrategy: "no_buffer" });
        const log = await failed("sglang-nobuf");
        assert.match(
            log,
            /^ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer\.To use radix cache/m,
        );
        assert.match(
            log,
            /File "\/usr\/local\/lib\/sglang-lab\/releases\/0\.5\.11\/site\/sglang\/srt\/server_args\.py", line \d+, in _handle_mamba_radix_cache/,
        );
        assert.match(log, /^sglang-nobuf\.service: Main process exited, code=exited, status=1\/FAILURE$/m);
        assert.doesNotMatch(log, /server_args=ServerArgs/);
    });

    it("starts the field config: /server_info from SGLang reports NEXTN as EAGLE with a null draft path", async () => {
        await start("sglang-field", { ...field, port: 30203 });
        const si = await serverInfo(`http://${info.container.address}:30203`);
        assert.equal(si.speculative_algorithm, "EAGLE");
        assert.equal(si.speculative_draft_model_path, null);
        assert.equal(si.speculative_num_draft_tokens, 2);
        assert.equal(si.max_running_requests, 48);
        assert.equal(si.mamba_scheduler_strategy, "extra_buffer");
        assert.equal(si.version, "0.5.11");
        assert.equal(si.status, "ready");
        assert.ok(Number(si.max_total_num_tokens) > 0, "the simulator fills in the scheduler's token capacity");
        const log = await ok("container", "journalctl -u sglang-field -o cat --no-pager");
        assert.match(log, /^\[[\d\- :]+\] server_args=ServerArgs\(model_path='\/models\/Qwen3\.6-27B', .*speculative_algorithm='EAGLE', /m);
        assert.match(log, /^\[[\d\- :]+\] Spec v2 is enabled by default for eagle\/eagle3\/standalone speculative decoding\.$/m);
        await ok("container", "systemctl stop sglang-field");
    });

    it("starts DFLASH with the drafter folder: /server_info shows DFLASH, the drafter and 16 draft tokens", async () => {
        await start("sglang-dflash", {
            ...field,
            port: 30204,
            speculative: { algorithm: "DFLASH", draftModelPath: DRAFTER, numSteps: 1, eagleTopk: 1, numDraftTokens: 16 },
        });
        const si = await serverInfo(`http://${info.container.address}:30204`);
        assert.equal(si.speculative_algorithm, "DFLASH");
        assert.equal(si.speculative_draft_model_path, DRAFTER);
        assert.equal(si.speculative_num_draft_tokens, 16);
        assert.match(await ok("container", "journalctl -u sglang-dflash -o cat --no-pager"), /type=DFlashDraftModel/);
        await ok("container", "systemctl stop sglang-dflash");
    });

    it("reads the DFlash drafter's block size (16) from its config.json when no draft-token count is given", async () => {
        const argv = renderArgv({ ...field, port: 30205, speculative: { algorithm: "DFLASH", draftModelPath: DRAFTER } });
        const r = await runUntilOutput(`env ${RUN_THE_RELEASE} ${argv.join(" ")}`, "speculative_num_draft_tokens=[0-9]+");
        assert.deepEqual(`${r.stdout}${r.stderr}`.match(/speculative_num_draft_tokens=[0-9]*/g), ["speculative_num_draft_tokens=16"]);
    });

    it("runs each venv's own release: SGLang 0.5.10 has no DFLASH choice", async () => {
        const r = await exec(
            "container",
            `${RUN_THE_RELEASE} /opt/sglang/venv-0.5.10/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B --speculative-algorithm DFLASH`,
        );
        assert.equal(r.code, 2);
        assert.match(
            r.stderr,
            /sglang serve: error: argument --speculative-algorithm: invalid choice: 'DFLASH' \(choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM'\)\n$/,
        );
    });
});
