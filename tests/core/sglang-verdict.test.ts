import * as assert from "node:assert/strict";
import { ServiceSchema } from "../../core/config/schema";
import { standInArgv, tracebackLinesOf, verdictCase, verdictFailures, verdictKey, verdictKeyOf, verdictOf, verdictRequest } from "../../core/sglang/verdict";
import { renderUnit } from "../../core/unit/systemd-unit";
import { serverConfigFilePath } from "../../core/unit/unit-paths";
import { fieldConfig } from "./fixtures";

// The pure half of SGLang's own verdict at preview (tests/lab/sglang-verdict.test.ts runs the real release).

function unitOf(edit: (raw: Record<string, unknown>) => void = () => undefined, version = "0.5.11"): string {
    const raw = structuredClone(fieldConfig().service) as unknown as Record<string, unknown>;
    raw.sglangVersion = version;
    edit(raw);
    const service = ServiceSchema.parse(raw);
    return renderUnit(service, { hasSecrets: true, hasSecretEnvironment: false, owner: { project: "p", stack: "s" } });
}

describe("SGLang's own verdict: the request and the answer (core/sglang/verdict.ts)", () => {
    it("asks with the unit's argv after the program, without the API key's --config file, and its environment", () => {
        const unitText = unitOf((raw) => (raw.extraArgs = ["--reasoning-parser", "qwen3"]));
        assert.ok(unitText.includes(`--config ${serverConfigFilePath("qwen")}`));
        const r = verdictRequest({ version: "0.5.11", unitText, gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok(!("unavailable" in r));
        assert.equal(r.entry, "sglang-serve");
        assert.equal(r.argv[0], "--model-path");
        assert.ok(!r.argv.includes("--config") && !r.argv.includes(serverConfigFilePath("qwen")));
        assert.deepEqual(r.argv.slice(-2), ["--reasoning-parser", "qwen3"]);
        assert.deepEqual(r.env, { SGLANG_ENABLE_SPEC_V2: "1" });
        assert.deepEqual(r.model, { path: "/models/Qwen3.6-27B", configJson: "{}" });
        assert.equal(r.drafter, undefined);
        // Kept by the request and by the judge's own files: a changed oracle or stub asks the release again.
        assert.notEqual(verdictKey(r, "judge-a"), verdictKey(r, "judge-b"));
        assert.notEqual(verdictKey(r, "judge-a"), verdictKey({ ...r, env: {} }, "judge-a"));
    });

    it("hands the GPUs' name and compute capability to the hardware stubs as the driver reports them (issue 37)", () => {
        const unitText = unitOf();
        const r = verdictRequest({
            version: "0.5.23",
            unitText,
            gpus: { count: 2, memoryMiB: 81559, name: "NVIDIA H100 80GB HBM3", computeCapability: "9.0" },
            modelConfigJson: "{}",
        });
        assert.ok(!("unavailable" in r));
        const c = verdictCase(r, { model: "/tmp/m" });
        assert.equal(c.env!.SGLANG_LAB_GPU_CAPABILITY, "9.0");
        assert.equal(c.env!.SGLANG_LAB_GPU_NAME, "NVIDIA H100 80GB HBM3");
        assert.equal(c.gpuMemoryMiB, 81559);
        // Without one the stubs' default answers: the key tells the two apart.
        const without = { ...r, gpus: { count: 2, memoryMiB: 81559, name: "NVIDIA H100 80GB HBM3" } };
        assert.equal(verdictCase(without, { model: "/tmp/m" }).env!.SGLANG_LAB_GPU_CAPABILITY, undefined);
        assert.notEqual(verdictKey(r, "j"), verdictKey(without, "j"));
    });

    it("files a refusal under every setting its check reads that the config sets: owned, an extraArgs alias, the environment (issue 37)", () => {
        const extraArgs = ["--enable-metrics", "--pipeline-parallel-size", "2"];
        const unitText = unitOf((raw) => {
            raw.extraArgs = extraArgs;
            raw.environment = { SGLANG_ENABLE_PP_SPEC: "1", SGLANG_ENABLE_SPEC_V2: "1" };
        });
        const request = verdictRequest({ version: "0.5.11", unitText, gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok(!("unavailable" in request));
        const verdict = {
            status: "refused" as const,
            error: "AssertionError: PP + speculative decoding is not supported",
            warnings: [],
            // What oracle.py reads off the raising check; what the config leaves to SGLang (disaggregation_mode) has no key.
            reads: ["disaggregation_mode", "env:SGLANG_ENABLE_PP_SPEC", "pp_size", "speculative_algorithm"],
        };
        const failures = verdictFailures(verdict, request, extraArgs);
        assert.deepEqual(
            failures.map((f) => f.property),
            ["service.environment.SGLANG_ENABLE_PP_SPEC", "service.extraArgs[1]", "service.speculative.algorithm"],
        );
        assert.match(
            failures[0]!.reason,
            /fix: change service\.environment\.SGLANG_ENABLE_PP_SPEC or service\.extraArgs\[1\] or service\.speculative\.algorithm so that SGLang 0\.5\.11 accepts it/,
        );
        // Reads of nothing the config sets: the command line as a whole.
        assert.deepEqual(
            verdictFailures({ ...verdict, reads: ["disaggregation_mode"] }, request, extraArgs).map((f) => f.property),
            ["service"],
        );
    });

    it("runs launch_server's entry before 0.5.10, and waits for a separate drafter's config.json", () => {
        const old = verdictRequest({ version: "0.5.9", unitText: unitOf(() => undefined, "0.5.9"), gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok(!("unavailable" in old) && old.entry === "launch-server");
        const dflash = unitOf(
            (raw) => (raw.speculative = { algorithm: "DFLASH", draftModelPath: "/models/drafter", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 }),
        );
        const waits = verdictRequest({ version: "0.5.11", unitText: dflash, gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok("unavailable" in waits && /\/models\/drafter\/config\.json could not be read/.test(waits.unavailable));
        const r = verdictRequest({ version: "0.5.11", unitText: dflash, gpus: { count: 2 }, modelConfigJson: "{}", drafterConfigJson: '{"d": 1}' });
        assert.ok(!("unavailable" in r));
        assert.deepEqual(r.drafter, { path: "/models/drafter", configJson: '{"d": 1}' });
        const argv = standInArgv(r, "/tmp/m", "/tmp/d");
        assert.equal(argv[argv.indexOf("--model-path") + 1], "/tmp/m");
        assert.equal(argv[argv.indexOf("--speculative-draft-model-path") + 1], "/tmp/d");
    });

    it("files a message under the first flag it names that the config owns or an extraArgs element sets, else under service", () => {
        const extra = ["--enable-metrics", "--export-metrics-to-file", "--kv-cache-dtype=fp8_e5m2"];
        assert.equal(verdictKeyOf("--export-metrics-to-file-dir is required when --export-metrics-to-file is enabled", extra), "service.extraArgs[1]");
        assert.equal(verdictKeyOf("argument --kv-cache-dtype: invalid choice: 'x'", extra), "service.extraArgs[2]");
        assert.equal(verdictKeyOf("served_model_name cannot contain a colon (':') character.", extra), "service.model.servedName");
        assert.equal(verdictKeyOf("tp_size must be divisible by number of nodes", extra), "service.tensorParallelSize");
        assert.equal(verdictKeyOf("something else entirely", extra), "service");
    });

    it("files a message about a repeated extraArgs flag under its last element, the one SGLang runs with (issue 37)", () => {
        const extra = ["--context-length", "32768", "--enable-metrics", "--context-length=300000"];
        const argv = ["--model-path", "/models/m", ...extra];
        assert.equal(
            verdictKeyOf("User-specified context_length (300000) is greater than the derived context_length (262144).", extra, argv),
            "service.extraArgs[3]",
        );
        assert.equal(verdictKeyOf("--context-length is too long for this model", extra, argv), "service.extraArgs[3]");
    });

    it("files argparse's refusal of an earlier occurrence's value under that occurrence", () => {
        const extra = ["--context-length", "abc", "--context-length", "32768"];
        assert.equal(verdictKeyOf("argument --context-length: invalid human_readable_int value: 'abc'", extra), "service.extraArgs[0]");
    });

    // SGLang 0.5.23's own tracebacks (sglang-release/oracle.py, the lab's differential configs), shortened.
    const ASSERTION = [
        "Traceback (most recent call last):",
        '  File "/r/0.5.23/site/sglang/srt/server_args.py", line 812, in __post_init__',
        "    self._handle_speculative_decoding()",
        '  File "/r/0.5.23/site/sglang/srt/speculative/spec_info.py", line 264, in handle_server_args',
        "    _handle_eagle_family(server_args)",
        '  File "/r/0.5.23/site/sglang/srt/arg_groups/speculative_hook.py", line 1162, in _handle_eagle_family',
        "    and cfg.speculative_num_draft_tokens is None",
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "AssertionError",
        "",
    ].join("\n");
    const UNKNOWN_ALGORITHM = [
        "[2026-12-02 10:19:19] Attention backend not specified.",
        "Traceback (most recent call last):",
        '  File "/r/0.5.23/site/sglang/srt/arg_groups/speculative_hook.py", line 242, in handle_speculative_decoding',
        "    algo = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/r/0.5.23/site/sglang/srt/speculative/spec_info.py", line 65, in from_string',
        '    raise ValueError(f"Unknown speculative algorithm name: {name}")',
        "ValueError: Unknown speculative algorithm name: MTP",
    ].join("\n");

    it("reads the traceback's source lines, innermost frame first, without the markers", () => {
        assert.deepEqual(tracebackLinesOf(ASSERTION), [
            "and cfg.speculative_num_draft_tokens is None",
            "_handle_eagle_family(server_args)",
            "self._handle_speculative_decoding()",
        ]);
        assert.deepEqual(tracebackLinesOf(UNKNOWN_ALGORITHM), [
            'raise ValueError(f"Unknown speculative algorithm name: {name}")',
            "algo = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)",
        ]);
        assert.deepEqual(tracebackLinesOf("sglang serve: error: argument --tp-size: invalid int value: 'x'\n"), []);
    });

    it("files a message that names an owned setting's value (and no flag) under that setting", () => {
        const argv = ["--model-path", "/models/m", "--mamba-radix-cache-strategy", "no_buffer", "--speculative-algorithm", "MTP", "--tp-size", "2"];
        assert.equal(
            verdictKeyOf("no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.", [], argv),
            "service.mambaSchedulerStrategy",
        );
        assert.equal(verdictKeyOf("Unknown speculative algorithm name: MTP", [], argv), "service.speculative.algorithm");
        assert.equal(verdictKeyOf("2 is not a valid size", [], argv), "service", "numbers are no evidence");
        assert.equal(verdictKeyOf("/models/m has no config.json", [], argv), "service", "nor are paths");
    });

    it("files a message that names an extraArgs flag's value (and no flag) under that element (0.5.23: `backend 'triton' provides neither`)", () => {
        const extra = ["--kv-cache-dtype", "fp8_e4m3", "--attention-backend", "triton"];
        const argv = ["--model-path", "/models/m", "--tp-size", "2", ...extra];
        assert.equal(
            verdictKeyOf("NVFP4 prefill supports an FP8 E4M3 workspace or native NVFP4, but backend 'triton' provides neither.", extra, argv),
            "service.extraArgs[2]",
        );
        assert.equal(verdictKeyOf("the backend does not work here", extra, argv), "service", "a word that is no value of theirs is no evidence");
    });

    it("shows the line that raised an error whose message names no setting, and files it under the setting that line names", () => {
        const unitText = unitOf();
        const r = verdictRequest({ version: "0.5.23", unitText, gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok(!("unavailable" in r));
        const answer = (message: string, stderr: string) => ({
            status: "exception" as const,
            exitCode: 1,
            exceptionType: "AssertionError",
            message,
            logs: [],
            stderr,
        });
        const verdict = verdictOf(answer("", ASSERTION), r, { model: "/tmp/x/model" });
        assert.equal(verdict.error, "AssertionError (at `and cfg.speculative_num_draft_tokens is None`)");
        const [failure] = verdictFailures(verdict, r, []);
        // Python shows one line of the multi-line assertion: the setting it names is one the failure is about, and the reason shows the line.
        assert.equal(failure!.property, "service.speculative.numDraftTokens");
        assert.match(
            failure!.reason,
            /SGLang 0\.5\.23's own code refuses .*: AssertionError \(at `and cfg\.speculative_num_draft_tokens is None`\); fix: change service\.speculative\.numDraftTokens/,
        );
        // A line that names no setting either: the command line as a whole.
        const bare = verdictOf(answer("", ASSERTION.replace("and cfg.speculative_num_draft_tokens is None", "and x is None")), r, { model: "/tmp/x/model" });
        assert.equal(verdictFailures(bare, r, [])[0]!.property, "service");
        const named = verdictOf(answer("served_model_name cannot contain a colon", ASSERTION), r, { model: "/tmp/x/model" });
        assert.equal(named.error, "AssertionError: served_model_name cannot contain a colon", "a message that names a setting stands alone");
        assert.equal(verdictOf(answer("", ""), r, { model: "/tmp/x/model" }).error, "AssertionError", "no traceback, nothing to add");
    });

    it("names the box's folders, never the stand-ins, and leaves out what is only about the stand-in folder", () => {
        const unitText = unitOf();
        const r = verdictRequest({ version: "0.5.11", unitText, gpus: { count: 2 }, modelConfigJson: "{}" });
        assert.ok(!("unavailable" in r));
        const verdict = verdictOf(
            {
                status: "exception",
                exitCode: 1,
                exceptionType: "ValueError",
                message: "context_length of /tmp/x/model is too long",
                logs: [
                    { level: "WARNING", logger: "sglang.srt.utils.common", message: "Failed to load generation config for /tmp/x/model: ..." },
                    { level: "WARNING", logger: "sglang.srt.server_args", message: "Max running requests is reset to 48" },
                    { level: "WARNING", logger: "transformers", message: "not SGLang's" },
                ],
            },
            r,
            { model: "/tmp/x/model" },
        );
        assert.deepEqual(verdict, {
            status: "refused",
            error: "ValueError: context_length of /models/Qwen3.6-27B is too long",
            warnings: ["Max running requests is reset to 48"],
        });
        const [failure] = verdictFailures(verdict, r, []);
        assert.equal(failure!.property, "service");
        assert.match(failure!.reason, /fix: change the rendered command line so that SGLang 0\.5\.11 accepts it/);
    });
});
