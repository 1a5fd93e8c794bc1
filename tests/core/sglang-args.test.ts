import assert from "node:assert/strict";
import fc from "fast-check";
import { ServiceConfig, ServiceSchema } from "../../core/config/schema";
import { ArgvError, argvFieldsOf, argvFromFields, liveArgsDrift, normalizeServerInfo, parseArgv, renderArgv, resolveLauncher } from "../../core/sglang/args";
import { fieldConfig, fieldService, serviceConfig } from "./fixtures";

function service(edit: (raw: ReturnType<typeof fieldConfig>["service"]) => void = () => {}): ServiceConfig {
    const raw = fieldConfig().service;
    edit(raw);
    return ServiceSchema.parse(raw);
}

/** /server_info as SGLang 0.5.11 answers for the field config (defaults filled in, NEXTN shown as EAGLE). */
function fieldServerInfo(): Record<string, unknown> {
    return {
        model_path: "/models/Qwen3.6-27B",
        tokenizer_path: "/models/Qwen3.6-27B",
        served_model_name: "qwen3.6-27b",
        tp_size: 2,
        host: "0.0.0.0",
        port: 30000,
        mem_fraction_static: 0.88,
        max_running_requests: 48,
        speculative_algorithm: "EAGLE",
        speculative_draft_model_path: "/models/Qwen3.6-27B",
        speculative_num_steps: 1,
        speculative_eagle_topk: 1,
        speculative_num_draft_tokens: 2,
        mamba_scheduler_strategy: "extra_buffer",
        disable_radix_cache: false,
        api_key: null,
        attention_backend: "flashinfer",
        internal_states: [{ avg_spec_accept_length: 1.8 }],
        version: "0.5.11",
    };
}

describe("sglang argv: render", () => {
    it("renders the field's command line with sglang serve for 0.5.11", () => {
        assert.deepEqual(renderArgv(fieldService()), [
            "/opt/sglang/venv/bin/sglang",
            "serve",
            "--model-path",
            "/models/Qwen3.6-27B",
            "--served-model-name",
            "qwen3.6-27b",
            "--tp-size",
            "2",
            "--host",
            "0.0.0.0",
            "--port",
            "30000",
            "--mem-fraction-static",
            "0.88",
            "--speculative-algorithm",
            "NEXTN",
            "--speculative-num-steps",
            "1",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "2",
            "--mamba-scheduler-strategy",
            "extra_buffer",
        ]);
    });

    it("names the mamba strategy's flag as each release reads it: --mamba-radix-cache-strategy from 0.5.14", () => {
        const flagsFor = (version: string) => renderArgv(service((s) => (s.sglangVersion = version))).filter((a) => a.startsWith("--mamba-"));
        assert.deepEqual(flagsFor("0.5.11"), ["--mamba-scheduler-strategy"]);
        assert.deepEqual(flagsFor("0.5.13"), ["--mamba-scheduler-strategy"]);
        assert.deepEqual(flagsFor("0.5.14"), ["--mamba-radix-cache-strategy"]);
        assert.deepEqual(flagsFor("0.5.23"), ["--mamba-radix-cache-strategy"]);
        const argv = renderArgv(service((s) => (s.sglangVersion = "0.5.23")));
        assert.equal(argv[argv.indexOf("--mamba-radix-cache-strategy") + 1], "extra_buffer");
    });

    it("uses python -m sglang.launch_server before 0.5.10", () => {
        const argv = renderArgv(service((s) => (s.sglangVersion = "0.5.9")));
        assert.deepEqual(argv.slice(0, 3), ["/opt/sglang/venv/bin/python3", "-m", "sglang.launch_server"]);
    });

    it("lets the config pick the launcher", () => {
        assert.equal(resolveLauncher({ launcher: "launch_server", sglangVersion: "0.5.11" }), "launch_server");
        assert.equal(resolveLauncher({ launcher: "serve", sglangVersion: "0.5.9" }), "serve");
        assert.equal(resolveLauncher({ launcher: "auto", sglangVersion: "0.5.10" }), "serve");
    });

    it("spells out no flag the config leaves to SGLang", () => {
        const argv = renderArgv(
            service((s) => {
                const partial = s as Partial<typeof s>;
                delete partial.memFractionStatic;
                delete partial.mambaSchedulerStrategy;
                delete partial.listenHost;
                delete partial.speculative;
            }),
        );
        for (const flag of ["--mem-fraction-static", "--mamba-scheduler-strategy", "--host", "--speculative-algorithm", "--disable-radix-cache", "--api-key"]) {
            assert.ok(!argv.includes(flag), `${flag} rendered`);
        }
    });

    it("passes the API key as SGLang's --config file, never --api-key on the command line", () => {
        const argv = renderArgv(fieldService(), { configFile: "/etc/sglang/qwen.yaml" });
        assert.deepEqual(argv.slice(-2), ["--config", "/etc/sglang/qwen.yaml"]);
        assert.ok(!argv.includes("--api-key"));
        assert.ok(!argv.some((a) => a.includes("SGLANG_API_KEY")));
    });

    it("switches drafter by config alone", () => {
        const argv = renderArgv(
            service((s) => {
                s.speculative = { algorithm: "EAGLE3", draftModelPath: "/models/dflash-drafter", numSteps: 3, eagleTopk: 1, numDraftTokens: 4 };
            }),
        );
        const at = argv.indexOf("--speculative-draft-model-path");
        assert.equal(argv[at + 1], "/models/dflash-drafter");
        assert.equal(argv[argv.indexOf("--speculative-algorithm") + 1], "EAGLE3");
    });

    it("puts extraArgs last, as given", () => {
        const argv = renderArgv(service((s) => ((s as Record<string, unknown>).extraArgs = ["--enable-metrics", "--context-length=32768"])));
        assert.deepEqual(argv.slice(-2), ["--enable-metrics", "--context-length=32768"]);
    });

    it("puts each extraArgs element into argv as one element, unchanged", () => {
        const extra = ["--cuda-graph-bs", "1", "2", "4", "8", "--json-model-override-args", '{"a": "b c", "d": 4.0}', "--x", "${SGLANG_API_KEY}"];
        const argv = renderArgv(
            service((s) => ((s as Record<string, unknown>).extraArgs = extra)),
            { configFile: "/etc/sglang/qwen.yaml" },
        );
        assert.deepEqual(argv.slice(-extra.length), extra);
    });
});

describe("sglang argv: parse", () => {
    it("parse(render(service)) gives back the service's fields (property)", () => {
        fc.assert(
            fc.property(serviceConfig, fc.boolean(), (svc, withKey) => {
                const opts = withKey ? { configFile: `/etc/sglang/${svc.name}.yaml` } : {};
                assert.deepEqual(parseArgv(renderArgv(svc, opts)), argvFieldsOf(svc, opts));
            }),
            { numRuns: 300 },
        );
    });

    it("reads the hand-written launch_server form with aliases and --flag=value", () => {
        const fields = parseArgv([
            "/opt/sglang/venv/bin/python3",
            "-m",
            "sglang.launch_server",
            "--model",
            "/models/Qwen3.6-27B",
            "--tp",
            "2",
            "--port=30000",
            "--speculative-algorithm",
            "NEXTN",
            "--disable-radix-cache",
            "--context-length",
            "32768",
            "--enable-metrics",
        ]);
        assert.equal(fields.launcher, "launch_server");
        assert.equal(fields.modelPath, "/models/Qwen3.6-27B");
        assert.equal(fields.tensorParallelSize, 2);
        assert.equal(fields.port, 30000);
        assert.deepEqual(fields.speculative, { algorithm: "NEXTN" });
        assert.equal(fields.disableRadixCache, true);
        assert.deepEqual(fields.extraArgs, ["--context-length", "32768", "--enable-metrics"]);
    });

    it("keeps unowned flags and their values as the tokens the command line has, in either form", () => {
        const extra = [
            "--reasoning-parser",
            "qwen3",
            "--cuda-graph-bs",
            "1",
            "2",
            "4",
            "8",
            "--context-length=32768",
            "--json-model-override-args",
            '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}',
            "--x",
            "-1",
            "--enable-metrics",
        ];
        const fields = parseArgv(["/v/bin/sglang", "serve", "--model-path", "/m", "--port", "1", ...extra]);
        assert.deepEqual(fields.extraArgs, extra);
    });

    it("reads back the extraArgs of every shape the config accepts (render, then parse)", () => {
        for (const extraArgs of [
            ["--reasoning-parser", "qwen3"],
            ["--cuda-graph-bs", "1", "2", "4", "8"],
            ["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'],
            ["--enable-metrics", "--context-length=32768"],
        ]) {
            const svc = service((s) => ((s as Record<string, unknown>).extraArgs = extraArgs));
            assert.deepEqual(parseArgv(renderArgv(svc)).extraArgs, extraArgs);
        }
    });

    it("reads either name of the mamba strategy's flag, and renders a unit back with the name it has", () => {
        for (const flag of ["--mamba-scheduler-strategy", "--mamba-radix-cache-strategy"]) {
            const argv = ["/opt/sglang/venv/bin/sglang", "serve", "--model-path", "/m", flag, "extra_buffer"];
            const fields = parseArgv(argv);
            assert.equal(fields.mambaSchedulerStrategy, "extra_buffer");
            assert.deepEqual(fields.extraArgs, []);
            assert.deepEqual(argvFromFields(fields), argv);
        }
    });

    it("reads sglang serve's positional model path", () => {
        assert.equal(parseArgv(["/v/bin/sglang", "serve", "/models/x", "--port", "1"]).modelPath, "/models/x");
    });

    it("keeps the last of a repeated flag, as argparse does", () => {
        assert.equal(parseArgv(["/v/bin/sglang", "serve", "--model-path", "/m", "--port", "1", "--port", "2"]).port, 2);
    });

    it("flags a literal API key in the unit without keeping it", () => {
        const fields = parseArgv(["/v/bin/sglang", "serve", "--model-path", "/m", "--api-key", "sk-live-123"]);
        assert.equal(fields.apiKeyInline, true);
        assert.equal(fields.configFile, undefined);
        assert.ok(!JSON.stringify(fields).includes("sk-live-123"));
    });

    it("flags the older units' --api-key ${SGLANG_API_KEY} as a key on the command line", () => {
        assert.equal(parseArgv(["/v/bin/sglang", "serve", "--model-path", "/m", "--api-key", "${SGLANG_API_KEY}"]).apiKeyInline, true);
    });

    it("rejects a command that is not an SGLang server", () => {
        assert.throws(() => parseArgv(["/usr/bin/python3", "app.py"]), ArgvError);
        assert.throws(() => parseArgv(["/v/bin/sglang", "serve", "--port", "x", "--model-path", "/m"]), /--port needs a whole number/);
        assert.throws(() => parseArgv(["/v/bin/sglang", "serve", "--model-path"]), /needs a value/);
    });
});

describe("sglang argv: /server_info", () => {
    it("maps EAGLE with the model as its own draft back to NEXTN", () => {
        const live = normalizeServerInfo(fieldServerInfo());
        assert.deepEqual(live.speculative, { algorithm: "NEXTN", numSteps: 1, eagleTopk: 1, numDraftTokens: 2 });
        assert.equal(live.tensorParallelSize, 2);
        assert.equal(live.version, "0.5.11");
    });

    it("maps EAGLE without a draft path to NEXTN too", () => {
        const live = normalizeServerInfo({ ...fieldServerInfo(), speculative_draft_model_path: null });
        assert.equal(live.speculative?.algorithm, "NEXTN");
    });

    it("keeps EAGLE3 with its drafter", () => {
        const live = normalizeServerInfo({ ...fieldServerInfo(), speculative_algorithm: "EAGLE3", speculative_draft_model_path: "/models/d" });
        assert.deepEqual(live.speculative?.algorithm, "EAGLE3");
        assert.equal(live.speculative?.draftModelPath, "/models/d");
    });

    it("finds no drift between the field config and its running server", () => {
        assert.deepEqual(liveArgsDrift(argvFieldsOf(fieldService()), normalizeServerInfo(fieldServerInfo())), []);
    });

    it("does not call values SGLang filled in drift", () => {
        const declared = service((s) => {
            const partial = s as Partial<typeof s>;
            delete partial.memFractionStatic;
            delete partial.mambaSchedulerStrategy;
            s.speculative = { algorithm: "NEXTN" } as typeof s.speculative;
        });
        const live = normalizeServerInfo({ ...fieldServerInfo(), mem_fraction_static: 0.836, speculative_num_steps: 3, speculative_num_draft_tokens: 4 });
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), live), []);
    });

    it("reads the strategy from 0.5.14's mamba_radix_cache_strategy, and finds no drift on 0.5.23's answer", () => {
        const info = { ...fieldServerInfo(), version: "0.5.23", mamba_radix_cache_strategy: "extra_buffer" } as Record<string, unknown>;
        delete info.mamba_scheduler_strategy;
        assert.equal(normalizeServerInfo(info).mambaSchedulerStrategy, "extra_buffer");
        const declared = service((s) => (s.sglangVersion = "0.5.23"));
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), normalizeServerInfo(info)), []);
        assert.deepEqual(
            liveArgsDrift(argvFieldsOf(declared), normalizeServerInfo({ ...info, mamba_radix_cache_strategy: "no_buffer" })).map((d) => d.field),
            ["service.mambaSchedulerStrategy"],
        );
    });

    it("treats a declared auto strategy as matching no_buffer", () => {
        const declared = service((s) => (s.mambaSchedulerStrategy = "auto"));
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), normalizeServerInfo({ ...fieldServerInfo(), mamba_scheduler_strategy: "no_buffer" })), []);
    });

    it("reports a changed flag with declared and actual values", () => {
        const live = normalizeServerInfo({ ...fieldServerInfo(), tp_size: 1, mem_fraction_static: 0.8 });
        assert.deepEqual(liveArgsDrift(argvFieldsOf(fieldService()), live), [
            { field: "service.tensorParallelSize", declared: 2, actual: 1 },
            { field: "service.memFractionStatic", declared: 0.88, actual: 0.8 },
        ]);
    });

    it("reports speculation running where none is declared", () => {
        const declared = service((s) => delete (s as Partial<typeof s>).speculative);
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), normalizeServerInfo(fieldServerInfo())), [
            { field: "service.speculative.algorithm", declared: undefined, actual: "NEXTN" },
        ]);
    });

    it("does not call the draft-token count SGLang adjusts with topk 1 drift", () => {
        const declared = service((s) => (s.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1, numDraftTokens: 2 }));
        const live = normalizeServerInfo({ ...fieldServerInfo(), speculative_num_steps: 3, speculative_num_draft_tokens: 4 });
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), live), []);
    });

    it("takes EAGLE without a draft path for what it runs: the model's own MTP head", () => {
        const declared = service((s) => (s.speculative = { ...s.speculative!, algorithm: "EAGLE" }));
        const live = normalizeServerInfo({ ...fieldServerInfo(), speculative_algorithm: "EAGLE", speculative_draft_model_path: null });
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), live), []);
    });

    it("does not call a radix cache SGLang disabled by itself drift, but does a declared --disable-radix-cache it ignores", () => {
        assert.deepEqual(liveArgsDrift(argvFieldsOf(fieldService()), normalizeServerInfo({ ...fieldServerInfo(), disable_radix_cache: true })), []);
        const declared = service((s) => ((s as { disableRadixCache?: boolean }).disableRadixCache = true));
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), normalizeServerInfo({ ...fieldServerInfo(), disable_radix_cache: false })), [
            { field: "service.disableRadixCache", declared: true, actual: false },
        ]);
    });

    it("runs DFLASH with one step and topk 1 whatever was declared", () => {
        const declared = service(
            (s) => (s.speculative = { algorithm: "DFLASH", draftModelPath: "/models/dflash", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 }),
        );
        const live = normalizeServerInfo({
            ...fieldServerInfo(),
            speculative_algorithm: "DFLASH",
            speculative_draft_model_path: "/models/dflash",
            speculative_num_steps: 1,
            speculative_eagle_topk: 1,
            speculative_num_draft_tokens: 16,
        });
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), live), []);
        assert.deepEqual(liveArgsDrift(argvFieldsOf(declared), { ...live, speculative: { ...live.speculative, numDraftTokens: 8 } }), [
            { field: "service.speculative.numDraftTokens", declared: 16, actual: 8 },
        ]);
    });

    it("accepts server args nested under server_args", () => {
        const live = normalizeServerInfo({ server_args: fieldServerInfo(), version: "0.5.11" });
        assert.equal(live.port, 30000);
    });

    it("rejects a body that is not the server_info object", () => {
        assert.throws(() => normalizeServerInfo({ tp_size: "two" }), ArgvError);
    });
});
