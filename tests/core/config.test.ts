import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { validateStackConfig } from "../../core/config/config";
import { ConfigIssue, formatConfigIssues } from "../../core/config/issues";
import { STATIC_POOL_RESERVE_GIB } from "../../core/box/config-rules";
import { hostKeyProblem } from "../../core/config/values";
import { radixSpeculativeError } from "../../core/sglang/rules";
import { DFLASH_BLOCK, fieldConfig, FieldRaw, withField } from "./fixtures";
import { PLACEHOLDER_HOST_KEY } from "../../core/secrets/host-key";
import { rawStackConfig } from "../../core/config/stack-config-source";

function issuesOf(raw: unknown): ConfigIssue[] {
    const result = validateStackConfig(raw);
    assert.equal(result.ok, false, "expected the config to be rejected");
    return result.ok ? [] : result.issues;
}

function issueAt(raw: unknown, path: string): ConfigIssue {
    const issues = issuesOf(raw);
    const found = issues.find((i) => i.path === path);
    assert.ok(found, `no issue at ${path}; got: ${issues.map((i) => i.path).join(", ")}`);
    return found;
}

function accepted(raw: unknown) {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    return result;
}

/** The field config with a key file instead of kpro5's ssh-agent. */
const withKeyFile = () => withField((r) => (r.host.sshPrivateKeyPath = "~/.ssh/id_ed25519"));

/** ct129: the same container reached directly. */
function directConfig(edit: (raw: FieldRaw) => void = () => {}): unknown {
    return withField((raw) => {
        raw.host.topology = "direct";
        raw.host.address = "10.1.230.172";
        delete (raw as { container?: unknown }).container;
        edit(raw);
    });
}

describe("stack config: the field's working config", () => {
    it("accepts kpro5 (pct-exec, TP 2, NEXTN one step, extra_buffer + SGLANG_ENABLE_SPEC_V2)", () => {
        accepted(fieldConfig());
    });

    it("accepts ct129 (direct, no container section)", () => {
        accepted(directConfig());
    });

    it("accepts absent sections passed as undefined, as pulumi.Config.getObject returns them", () => {
        const raw = directConfig() as Record<string, unknown>;
        accepted({ ...raw, container: undefined, readiness: undefined, generateApiKey: undefined, sshPrivateKey: undefined });
    });

    it("fills in defaults", () => {
        const { config } = accepted(fieldConfig()) as { config: import("../../core/config/schema").StackConfig };
        assert.equal(config.boxes[0]!.host.port, 22);
        assert.equal(config.boxes[0]!.host.user, "root");
        assert.equal(config.servers[0]!.launcher, "auto");
        assert.equal(config.servers[0]!.disableRadixCache, false);
        assert.deepEqual(config.servers[0]!.extraArgs, []);
        assert.equal(config.readiness.startupTimeoutSeconds, 900);
        assert.equal(config.readiness.pollIntervalSeconds, 1);
        assert.equal(config.readiness.probeTimeoutSeconds, 30);
        assert.equal(config.boxes[0]!.container?.allowDelete, false);
    });

    it("warns that the placeholder host key must be replaced, without failing preview", () => {
        const result = accepted(fieldConfig());
        assert.ok(result.warnings.some((w) => w.includes("placeholder") && w.includes("ssh-keyscan -t ed25519 10.1.2.5")));
    });
});

describe("stack config: reporting", () => {
    it("reports every problem at once, each under its Pulumi key with the value and the fix", () => {
        const raw = withField((r) => {
            r.service.port = 70000;
            r.service.speculative.algorithm = "MTP";
            (r.service as Record<string, unknown>).bogus = 1;
            r.service.tensorParallelSize = 1;
        });
        const issues = issuesOf(raw);
        const paths = issues.map((i) => i.path);
        assert.ok(paths.includes("service.port"));
        assert.ok(paths.includes("service.speculative.algorithm"));
        assert.ok(paths.includes("service.bogus"));
        assert.ok(paths.includes("service.tensorParallelSize"));
        const message = formatConfigIssues(issues);
        assert.match(message, /4 problems/);
        assert.match(message, /sglang-serve:service\.port = 70000\n\s+service\.port must be a port from 1 to 65535/);
        assert.match(message, /sglang-serve:service\.speculative\.algorithm = "MTP"/);
    });

    it("never prints a secret's value", () => {
        const raw = { ...fieldConfig(), apiKey: "short key with spaces" };
        const message = formatConfigIssues(issuesOf(raw));
        assert.match(message, /sglang-serve:apiKey = \[secret\]/);
        assert.doesNotMatch(message, /short key/);
    });

    it("names unknown keys with a did-you-mean", () => {
        const raw = withField((r) => {
            (r.service as Record<string, unknown>).tensorParalelSize = 2;
        });
        assert.match(issueAt(raw, "service.tensorParalelSize").message, /did you mean tensorParallelSize\?/);
    });

    it("names unknown keys in nested sections", () => {
        const raw = withField((r) => ((r.service.speculative as Record<string, unknown>).numDraftToken = 2));
        assert.match(issueAt(raw, "service.speculative.numDraftToken").message, /did you mean numDraftTokens\?/);
    });

    it("names unknown top-level sections", () => {
        const raw = { ...fieldConfig(), servce: {} };
        assert.match(issueAt(raw, "servce").message, /did you mean service\?/);
    });

    it("says a missing required key is required", () => {
        const raw = withField((r) => {
            delete (r.service.model as Partial<typeof r.service.model>).path;
        });
        assert.match(issueAt(raw, "service.model.path").message, /is required/);
    });
});

describe("stack config: speculative decoding on hybrid linear-attention models (SGLang's own rules per release)", () => {
    const spec = "service.mambaSchedulerStrategy";

    it("rejects no_buffer with SGLang's exact startup error and the fix", () => {
        const issue = issueAt(
            withField((r) => (r.service.mambaSchedulerStrategy = "no_buffer")),
            spec,
        );
        assert.ok(issue.message.includes(radixSpeculativeError("Qwen3_5ForConditionalGeneration")));
        assert.ok(
            issue.message.includes(
                "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.",
            ),
        );
        assert.match(issue.message, /service\.mambaSchedulerStrategy: extra_buffer/);
        assert.match(issue.message, /disableRadixCache: true/);
    });

    it("rejects an unset strategy (auto resolves to no_buffer)", () => {
        const issue = issueAt(
            withField((r) => delete (r.service as Partial<typeof r.service>).mambaSchedulerStrategy),
            spec,
        );
        assert.match(issue.message, /service\.mambaSchedulerStrategy is unset: SGLang 0\.5\.11 refuses it/);
    });

    it("accepts extra_buffer without SGLANG_ENABLE_SPEC_V2 on 0.5.11 (the check looks at the strategy; spec v2 is on by default)", () => {
        accepted(withField((r) => (r.service.environment = {} as typeof r.service.environment)));
        accepted(withField((r) => (r.service.environment.SGLANG_ENABLE_SPEC_V2 = "0")));
    });

    it("accepts extra_buffer without SGLANG_ENABLE_SPEC_V2 on 0.5.10, advising it for the overlap scheduler", () => {
        const result = accepted(
            withField((r) => {
                r.service.sglangVersion = "0.5.10";
                r.service.environment = {} as typeof r.service.environment;
            }),
        );
        assert.ok(
            result.warnings.some((w) => /overlap scheduler/.test(w) && /advice, not required/.test(w)),
            result.warnings.join("\n"),
        );
    });

    for (const value of ["1", "true", "True"]) {
        it(`accepts SGLANG_ENABLE_SPEC_V2=${value}`, () => {
            accepted(withField((r) => (r.service.environment.SGLANG_ENABLE_SPEC_V2 = value)));
        });
    }

    it("warns about a SGLANG_ENABLE_SPEC_V2 value SGLang cannot read, naming the default it falls back to", () => {
        const result = accepted(withField((r) => (r.service.environment.SGLANG_ENABLE_SPEC_V2 = "on")));
        assert.ok(
            result.warnings.some((w) => /SGLANG_ENABLE_SPEC_V2 is "on", which SGLang cannot read: it warns and uses its default \(on in 0\.5\.11\)/.test(w)),
        );
    });

    it("leaves SGLANG_ENABLE_SPEC_V2 out of the unit from 0.5.14 (the release has no such variable), saying so in a notice: kpro5 on 0.5.23 has no warning about its server", () => {
        const result = accepted(withField((r) => (r.service.sglangVersion = "0.5.23")));
        assert.ok(
            result.notices.some((w) =>
                /sglang-serve:service\.environment\.SGLANG_ENABLE_SPEC_V2 is not written into the unit: SGLang 0\.5\.23 has no SGLANG_ENABLE_SPEC_V2 \(removed in 0\.5\.14;.*remove it from service\.environment\./.test(
                    w,
                ),
            ),
            result.notices.join("\n"),
        );
        // The placeholder host key is kpro5's own warning; nothing about the server.
        assert.deepEqual(
            result.warnings.filter((w) => !w.includes("sglang-serve:host.")),
            [],
        );
        const without = accepted(withField((r) => (r.service.environment = {} as typeof r.service.environment)));
        assert.ok(![...without.warnings, ...without.notices].some((w) => w.includes("SGLANG_ENABLE_SPEC_V2")), without.warnings.join("\n"));
        const older = accepted(withField((r) => (r.service.sglangVersion = "0.5.13")));
        assert.ok(!older.notices.some((w) => w.includes("not written into the unit")), older.notices.join("\n"));
    });

    it("refuses extra_buffer_lazy before 0.5.13 with argparse's text under the strategy's key, and takes it from 0.5.13", () => {
        const issue = issueAt(
            withField((r) => ((r.service as Record<string, unknown>).mambaSchedulerStrategy = "extra_buffer_lazy")),
            "service.mambaSchedulerStrategy",
        );
        assert.match(
            issue.message,
            /sglang serve: error: argument --mamba-scheduler-strategy: invalid choice: 'extra_buffer_lazy' \(choose from 'auto', 'no_buffer', 'extra_buffer'\)/,
        );
        assert.match(issue.message, /extra_buffer_lazy is a choice from SGLang 0\.5\.13 on/);
        accepted(
            withField((r) => {
                r.service.sglangVersion = "0.5.23";
                (r.service as Record<string, unknown>).mambaSchedulerStrategy = "extra_buffer_lazy";
            }),
        );
    });

    it("accepts disableRadixCache with no_buffer", () => {
        accepted(
            withField((r) => {
                r.service.mambaSchedulerStrategy = "no_buffer";
                (r.service as Record<string, unknown>).disableRadixCache = true;
            }),
        );
    });

    it("rejects extra_buffer with disableRadixCache (0.5.10+), with SGLang's message", () => {
        const issue = issueAt(
            withField((r) => ((r.service as Record<string, unknown>).disableRadixCache = true)),
            spec,
        );
        assert.ok(issue.message.includes("ValueError: mamba extra_buffer is not compatible with --disable-radix-cache"));
    });

    for (const architecture of ["Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3NextForCausalLM"]) {
        it(`supports extra_buffer on ${architecture}`, () => {
            accepted(withField((r) => (r.service.model.architecture = architecture)));
        });
    }

    for (const architecture of ["NemotronHForCausalLM", "FalconH1ForCausalLM", "JetNemotronForCausalLM", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM"]) {
        it(`refuses extra_buffer on ${architecture} (AssertionError), and its only fix with speculation is --disable-radix-cache`, () => {
            const issue = issueAt(
                withField((r) => (r.service.model.architecture = architecture)),
                spec,
            );
            assert.ok(issue.message.includes(`AssertionError: mamba extra_buffer is not supported for ${architecture} model`));
            assert.match(issue.message, /disableRadixCache: true/);
            const noBuffer = issueAt(
                withField((r) => {
                    r.service.model.architecture = architecture;
                    r.service.mambaSchedulerStrategy = "no_buffer";
                }),
                spec,
            );
            assert.ok(noBuffer.message.includes(`Speculative decoding for ${architecture} is not compatible with radix cache`));
            accepted(
                withField((r) => {
                    r.service.model.architecture = architecture;
                    delete (r.service as Partial<typeof r.service>).mambaSchedulerStrategy;
                    (r.service as Record<string, unknown>).disableRadixCache = true;
                }),
            );
        });
    }

    it("does not apply to a model without linear attention", () => {
        accepted(
            withField((r) => {
                r.service.model.architecture = "LlamaForCausalLM";
                r.service.mambaSchedulerStrategy = "no_buffer";
            }),
        );
    });

    it("does not apply without speculative decoding", () => {
        accepted(
            withField((r) => {
                delete (r.service as Partial<typeof r.service>).speculative;
                r.service.mambaSchedulerStrategy = "no_buffer";
            }),
        );
    });

    it("applies from 0.5.10", () => {
        issueAt(
            withField((r) => {
                r.service.sglangVersion = "0.5.10";
                r.service.mambaSchedulerStrategy = "no_buffer";
            }),
            spec,
        );
    });

    it("only warns for 0.5.9, which disables the radix cache itself", () => {
        const result = accepted(
            withField((r) => {
                r.service.sglangVersion = "0.5.9";
                r.service.mambaSchedulerStrategy = "no_buffer";
                r.service.environment = {} as typeof r.service.environment;
            }),
        );
        assert.ok(result.warnings.some((w) => w.includes("Disabling radix cache since speculative decoding for Qwen3_5ForConditionalGeneration")));
    });

    it("requires --mamba-track-interval to be at least the draft-token count with extra_buffer", () => {
        const issue = issueAt(
            withField((r) => {
                r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1, numDraftTokens: 4 } as typeof r.service.speculative;
                (r.service as Record<string, unknown>).extraArgs = ["--mamba-track-interval=2"];
            }),
            "service.extraArgs[0]",
        );
        assert.ok(issue.message.includes("AssertionError: mamba_track_interval 2 must be greater than or equal to speculative_num_draft_tokens 4"));
    });
});

describe("stack config: speculative algorithm and drafter (SGLang's own rules per release)", () => {
    const path = "service.speculative.algorithm";

    it("rejects MTP with argparse's message and says to use NEXTN for the model's own MTP head", () => {
        const issue = issueAt(
            withField((r) => (r.service.speculative.algorithm = "MTP")),
            path,
        );
        assert.match(issue.message, /sglang serve: error: argument --speculative-algorithm: invalid choice: 'MTP'/);
        assert.match(issue.message, /MTP is not a value: NEXTN uses the model's own MTP head/);
        assert.match(issue.message, /DFLASH, EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM/);
    });

    it("is case-sensitive like SGLang's argparse", () => {
        assert.match(
            issueAt(
                withField((r) => (r.service.speculative.algorithm = "nextn")),
                path,
            ).message,
            /case-sensitive: write NEXTN/,
        );
    });

    it("accepts DFLASH with a drafter on 0.5.11: steps 1, topk 1, draft tokens the drafter's block size", () => {
        const result = accepted(withField((r) => (r.service.speculative = { ...DFLASH_BLOCK } as typeof r.service.speculative)));
        assert.deepEqual(
            result.warnings.filter((w) => /numSteps|eagleTopk|numDraftTokens/.test(w)),
            [],
        );
    });

    it("pins the drafter by its digest, and refuses a digest without the folder it pins or in another form", () => {
        const dflash = (spec: Record<string, unknown>) =>
            withField((r) => (r.service.speculative = { ...DFLASH_BLOCK, ...spec } as typeof r.service.speculative));
        accepted(dflash({ draftModelDigest: "0123456789abcdef0123456789abcdef" }));
        assert.match(
            issueAt(dflash({ draftModelPath: undefined, draftModelDigest: "0123456789abcdef0123456789abcdef" }), "service.speculative.draftModelDigest")
                .message,
            /pins the folder at draftModelPath, which is not set: set draftModelPath or remove draftModelDigest/,
        );
        assert.match(
            issueAt(dflash({ draftModelDigest: "sha256:abc" }), "service.speculative.draftModelDigest").message,
            /must be the drafter folder's digest as the preview prints it \(32 lowercase hex digits\)/,
        );
    });

    it("rejects DFLASH without a drafter (ValueError)", () => {
        const issue = issueAt(
            withField((r) => (r.service.speculative = { algorithm: "DFLASH" } as typeof r.service.speculative)),
            "service.speculative.draftModelPath",
        );
        assert.ok(issue.message.includes("ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path."));
    });

    it("rejects DFLASH on 0.5.10, whose argparse does not offer it", () => {
        const issue = issueAt(
            withField((r) => {
                r.service.sglangVersion = "0.5.10";
                r.service.speculative = { algorithm: "DFLASH", draftModelPath: "/models/dflash-drafter" } as typeof r.service.speculative;
            }),
            path,
        );
        assert.match(issue.message, /invalid choice: 'DFLASH' \(choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM'\)/);
        // The way out is the release that has DFLASH, not another algorithm for the DFlash drafter (issue 21).
        assert.match(issue.message, /set service\.sglangVersion to 0\.5\.11/);
        assert.doesNotMatch(issue.message, /serve the drafter with EAGLE3/);
    });

    it("warns that DFLASH runs one step with topk 1 whatever was declared", () => {
        const result = accepted(
            withField((r) => {
                r.service.speculative = {
                    algorithm: "DFLASH",
                    draftModelPath: "/models/dflash-drafter",
                    numSteps: 3,
                    eagleTopk: 1,
                    numDraftTokens: 16,
                } as typeof r.service.speculative;
            }),
        );
        assert.ok(
            result.warnings.some((w) => /numSteps is 3, but SGLang 0\.5\.11 runs 1/.test(w)),
            result.warnings.join("\n"),
        );
    });

    it("lists the allowed values for anything else", () => {
        assert.match(
            issueAt(
                withField((r) => (r.service.speculative.algorithm = "MEDUSA")),
                path,
            ).message,
            /use one of DFLASH, EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM/,
        );
    });

    it("switches to a separate drafter by config alone (EAGLE3 + draftModelPath)", () => {
        accepted(
            withField((r) => {
                r.service.speculative = {
                    algorithm: "EAGLE3",
                    draftModelPath: "/models/dflash-drafter",
                    numSteps: 3,
                    eagleTopk: 1,
                    numDraftTokens: 4,
                } as typeof r.service.speculative;
            }),
        );
    });

    it("accepts EAGLE without a draft path: it drafts from the model path, like NEXTN", () => {
        accepted(withField((r) => (r.service.speculative.algorithm = "EAGLE")));
    });

    for (const algorithm of ["EAGLE3", "STANDALONE"]) {
        it(`warns that ${algorithm} without draftModelPath loads the served model as the drafter`, () => {
            const result = accepted(withField((r) => (r.service.speculative.algorithm = algorithm)));
            assert.ok(result.warnings.some((w) => /draftModelPath is not set with/.test(w)));
        });
    }

    it("warns that NEXTN with a draftModelPath runs as EAGLE with that drafter", () => {
        const result = accepted(withField((r) => ((r.service.speculative as Record<string, unknown>).draftModelPath = "/models/drafter")));
        assert.ok(result.warnings.some((w) => /SGLang runs EAGLE with that drafter/.test(w)));
    });

    it("requires an absolute draftModelPath", () => {
        issueAt(
            withField((r) => {
                r.service.speculative = { algorithm: "EAGLE3", draftModelPath: "models/drafter" } as typeof r.service.speculative;
            }),
            "service.speculative.draftModelPath",
        );
    });
});

describe("stack config: speculative steps (SGLang's own rules per release)", () => {
    it("warns that with eagleTopk 1 SGLang runs numSteps + 1 draft tokens, naming the value", () => {
        const result = accepted(withField((r) => (r.service.speculative.numDraftTokens = 3)));
        assert.ok(
            result.warnings.some((w) => /numDraftTokens is 3, but SGLang 0\.5\.11 runs 2/.test(w)),
            result.warnings.join("\n"),
        );
    });

    it("accepts numSteps with eagleTopk 1 and no draft-token count (SGLang sets numSteps + 1)", () => {
        accepted(withField((r) => (r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1 } as typeof r.service.speculative)));
    });

    it("rejects numSteps without eagleTopk (SGLang's TypeError)", () => {
        const issue = issueAt(
            withField((r) => (r.service.speculative = { algorithm: "NEXTN", numSteps: 3 } as typeof r.service.speculative)),
            "service.speculative.eagleTopk",
        );
        assert.ok(issue.message.includes("TypeError: '>' not supported between instances of 'NoneType' and 'int'"));
    });

    it("rejects eagleTopk or numDraftTokens without numSteps (SGLang's bare AssertionError)", () => {
        issueAt(
            withField((r) => (r.service.speculative = { algorithm: "NEXTN", eagleTopk: 1 } as typeof r.service.speculative)),
            "service.speculative.numSteps",
        );
        issueAt(
            withField((r) => (r.service.speculative = { algorithm: "NEXTN", numDraftTokens: 4 } as typeof r.service.speculative)),
            "service.speculative.numSteps",
        );
    });

    it("accepts none of them (SGLang picks)", () => {
        accepted(withField((r) => (r.service.speculative = { algorithm: "NEXTN" } as typeof r.service.speculative)));
    });

    it("accepts eagleTopk > 1 on 0.5.11 (falls back to spec v1) but rejects it on 0.5.10 with SGLANG_ENABLE_SPEC_V2 on", () => {
        const topk4 = (r: FieldRaw) =>
            (r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 4, numDraftTokens: 8 } as typeof r.service.speculative);
        accepted(withField(topk4));
        const issue = issueAt(
            withField((r) => {
                topk4(r);
                r.service.sglangVersion = "0.5.10";
            }),
            "service.speculative.eagleTopk",
        );
        assert.ok(issue.message.includes("ValueError: Spec v2 currently only supports topk = 1 for speculative decoding."));
        accepted(
            withField((r) => {
                topk4(r);
                r.service.sglangVersion = "0.5.10";
                r.service.environment = {} as typeof r.service.environment;
            }),
        );
    });
});

describe("stack config: GPUs and memory", () => {
    it("keeps a named reserve for the KV cache and Mamba state", () => {
        assert.equal(STATIC_POOL_RESERVE_GIB, 2);
    });

    it("rejects Qwen3.6-27B (52 GB) at TP 1 on a 48 GB card and suggests TP 2", () => {
        const issue = issueAt(
            withField((r) => (r.service.tensorParallelSize = 1)),
            "service.tensorParallelSize",
        );
        assert.match(issue.message, /does not fit/);
        assert.match(issue.message, /set tensorParallelSize: 2/);
    });

    it("accepts it at TP 2 with memFractionStatic 0.88", () => {
        accepted(fieldConfig());
    });

    it("rejects a static fraction too small for the weights even at TP 2", () => {
        const issue = issueAt(
            withField((r) => (r.service.memFractionStatic = 0.5)),
            "service.tensorParallelSize",
        );
        assert.match(issue.message, /memFractionStatic 0\.5/);
    });

    it("rejects more tensor parallel ranks than GPUs passed to the container", () => {
        const raw = withField((r) => {
            r.container.gpus = [0];
        });
        assert.match(issueAt(raw, "service.tensorParallelSize").message, /container\.gpus passes 1 GPU/);
    });

    it("counts the GPUs CUDA_VISIBLE_DEVICES in service.environment leaves the server: tp 2 with one visible GPU is refused (issue 37)", () => {
        const visible = (value: string) => withField((r) => ((r.service.environment as Record<string, string>).CUDA_VISIBLE_DEVICES = value));
        const issue = issueAt(visible("0"), "service.tensorParallelSize");
        assert.match(
            issue.message,
            /service\.tensorParallelSize is 2 but service\.environment\.CUDA_VISIBLE_DEVICES is "0", which leaves the server 1 GPU\(s\)/,
        );
        assert.match(issue.message, /list more GPUs in service\.environment\.CUDA_VISIBLE_DEVICES/);
        // As the CUDA runtime reads it: an index past the GPUs, or one named twice, ends the list.
        issueAt(visible("1,2"), "service.tensorParallelSize");
        issueAt(visible("0,0"), "service.tensorParallelSize");
        issueAt(visible(""), "service.tensorParallelSize");
        accepted(visible("1,0"));
        accepted(visible("GPU-1a6b0c3e,GPU-2b7c"));
    });

    it("counts CUDA_VISIBLE_DEVICES' GPUs against tp x pp from extraArgs", () => {
        const issue = issueAt(
            withField((r) => {
                r.service.tensorParallelSize = 1;
                r.service.extraArgs = ["--pp-size", "2"];
                (r.service.environment as Record<string, string>).CUDA_VISIBLE_DEVICES = "1";
            }),
            "service.extraArgs[0]",
        );
        assert.match(issue.message, /needs tp 1 x pp 2 = 2 GPUs .* but service\.environment\.CUDA_VISIBLE_DEVICES is "1", which leaves the server 1 GPU\(s\)/);
    });

    it("counts the host's GPUs for the direct topology", () => {
        const raw = directConfig((r) => (r.host.gpus.count = 1));
        assert.match(issueAt(raw, "service.tensorParallelSize").message, /host\.gpus\.count is 1/);
    });

    it("rejects passing through a GPU the host does not have", () => {
        assert.match(
            issueAt(
                withField((r) => (r.container.gpus = [0, 2])),
                "container.gpus[1]",
            ).message,
            /indices 0\.\.1/,
        );
    });
});

describe("stack config: what SGLang checks when it launches (check_server_args)", () => {
    it("refuses a served name with a colon under service.model.servedName, with SGLang's own text, in every release", () => {
        for (const version of ["0.5.9", "0.5.10", "0.5.11"]) {
            const issue = issueAt(
                withField((r) => {
                    r.service.sglangVersion = version;
                    r.service.model.servedName = "qwen3:27b";
                }),
                "service.model.servedName",
            );
            assert.ok(
                issue.message.includes(
                    "AssertionError: served_model_name cannot contain a colon (':') character. The colon is reserved for the 'model:adapter' syntax used in LoRA adapter specification. Invalid value: 'qwen3:27b'",
                ),
                issue.message,
            );
            assert.match(issue.message, new RegExp(`SGLang ${version.replaceAll(".", "\\.")} refuses it at startup`));
            assert.match(issue.message, /Fix: name the model without ':' \(for example qwen3-27b\)/);
        }
        accepted(withField((r) => (r.service.model.servedName = "qwen3.6-27b/v2")));
    });
});

describe("stack config: the fit rule (GPUs = tp x pp x dp; online quantization, CPU offload)", () => {
    /** Qwen3-32B (65.5 GB in BF16, a dense model without MTP) on the field's box. */
    const qwen3_32b = (edit: (r: FieldRaw) => void) =>
        withField((r) => {
            r.service.model = { path: "/models/Qwen3-32B", architecture: "Qwen3ForCausalLM", weightsGB: 65.5, servedName: "qwen3-32b" };
            delete (r.service as Partial<FieldRaw["service"]>).speculative;
            delete (r.service as Partial<FieldRaw["service"]>).mambaSchedulerStrategy;
            (r.service as { environment: Record<string, string> }).environment = {};
            delete (r.service as Partial<FieldRaw["service"]>).memFractionStatic;
            edit(r);
        });
    const oneGpu = (r: FieldRaw) => {
        r.container.gpus = [0];
        r.service.tensorParallelSize = 1;
    };

    it("accepts Qwen3-32B with --quantization fp8 on one 48 GB GPU, and refuses it without (65.5 GB does not fit)", () => {
        accepted(
            qwen3_32b((r) => {
                oneGpu(r);
                r.service.extraArgs = ["--quantization", "fp8"];
            }),
        );
        accepted(
            qwen3_32b((r) => {
                oneGpu(r);
                r.service.extraArgs = ["--quantization=fp8"];
            }),
        );
        const issue = issueAt(qwen3_32b(oneGpu), "service.tensorParallelSize");
        assert.match(issue.message, /65\.5 GB over tensorParallelSize 1 does not fit/);
    });

    it("counts weights already quantized on disk as they are: --quantization awq does not shrink them", () => {
        const issue = issueAt(
            qwen3_32b((r) => {
                oneGpu(r);
                r.service.extraArgs = ["--quantization", "awq"];
            }),
            "service.tensorParallelSize",
        );
        assert.match(issue.message, /does not fit/);
    });

    it("refuses --dp-size 2 with tp 2 on 2 GPUs at the extraArgs element, naming the GPU count; DP attention shares the GPUs", () => {
        const issue = issueAt(
            withField((r) => (r.service.extraArgs = ["--enable-metrics", "--dp-size", "2"])),
            "service.extraArgs[1]",
        );
        assert.match(issue.message, /needs tp 2 x dp 2 = 4 GPUs/);
        assert.match(issue.message, /container\.gpus passes 2 GPU\(s\)/);
        assert.match(
            issueAt(
                withField((r) => (r.service.extraArgs = ["--data-parallel-size=2"])),
                "service.extraArgs[0]",
            ).message,
            /= 4 GPUs/,
        );
        accepted(withField((r) => (r.service.extraArgs = ["--dp-size", "2", "--enable-dp-attention"])));
    });

    it("refuses a pipeline parallel size past the GPUs, and splits the weights over tp x pp", () => {
        const issue = issueAt(
            withField((r) => (r.service.extraArgs = ["--pp-size", "2"])),
            "service.extraArgs[0]",
        );
        assert.match(issue.message, /needs tp 2 x pp 2 = 4 GPUs/);
        // Qwen3.6-27B (52 GB) does not fit one GPU at tp 1, but does over tp 1 x pp 2.
        issueAt(
            withField((r) => (r.service.tensorParallelSize = 1)),
            "service.tensorParallelSize",
        );
        accepted(
            withField((r) => {
                r.service.tensorParallelSize = 1;
                r.service.extraArgs = ["--pipeline-parallel-size", "2"];
            }),
        );
    });

    it("without memFractionStatic judges against the whole GPU: the fraction the release picks is its verdict's (issue 37)", () => {
        const on24GB = (weightsGB: number, extraArgs: string[] = []) =>
            qwen3_32b((r) => {
                oneGpu(r);
                r.host.gpus = { count: 2, name: "NVIDIA GeForce RTX 4090", memoryMiB: 24564 };
                r.service.model.weightsGB = weightsGB;
                r.service.extraArgs = extraArgs;
            });
        // 18 GB fits below the whole card; whether it fits the pool 0.5.23 makes (0.704 of it) is for SGLang's verdict (core/box/resolved-fit.ts).
        accepted(on24GB(18));
        const issue = issueAt(on24GB(30), "service.tensorParallelSize");
        assert.match(
            issue.message,
            /each GPU needs 29\.9 GiB .* but the whole of one 24\.0 GiB GPU .*, more than any --mem-fraction-static SGLang could pick, is 24\.0 GiB/,
        );
        // KTransformers' expert offload: what it takes off needs the box's config.json, so the verdict judges it.
        accepted(on24GB(61, ["--kt-weight-path", "/models/Qwen3-30B-A3B-amx", "--kt-num-gpu-experts", "8"]));
        issueAt(on24GB(61, ["--kt-num-gpu-experts", "8"]), "service.tensorParallelSize");
    });

    it("takes --cpu-offload-gb (GiB per GPU) off each GPU's share of the weights", () => {
        const tp1 = (extraArgs: string[]) =>
            withField((r) => {
                r.service.tensorParallelSize = 1;
                r.service.extraArgs = extraArgs;
            });
        assert.match(issueAt(tp1(["--cpu-offload-gb", "2"]), "service.tensorParallelSize").message, /2 GiB per GPU offloaded to CPU memory/);
        accepted(tp1(["--cpu-offload-gb", "20"]));
    });
});

describe("stack config: values that reach a unit file or a shell", () => {
    const bad: [string, string, (r: FieldRaw) => void][] = [
        ["service.model.path", "a relative path", (r) => (r.service.model.path = "models/Qwen")],
        ["service.model.path", "a space", (r) => (r.service.model.path = "/models/Qwen 3")],
        ["service.model.path", "a newline", (r) => (r.service.model.path = "/models/Qwen\n[Service]")],
        ["service.model.path", "a NUL", (r) => (r.service.model.path = "/models/Q\0wen")],
        ["service.model.path", "a $", (r) => (r.service.model.path = "/models/$HOME")],
        ["service.python", "a ;", (r) => (r.service.python = "/opt/venv/bin/python3;rm")],
        ["service.model.servedName", "a space", (r) => (r.service.model.servedName = "qwen 27b")],
        ["service.environment.SGLANG_FOO", "a newline", (r) => ((r.service.environment as Record<string, string>).SGLANG_FOO = "a\nb")],
        ["service.environment.SGLANG_FOO", "a NUL", (r) => ((r.service.environment as Record<string, string>).SGLANG_FOO = "a\0b")],
        ["service.environment.SGLANG_FOO", "an escape character", (r) => ((r.service.environment as Record<string, string>).SGLANG_FOO = "a\x1b[0m")],
        ["service.environment.1BAD", "a name starting with a digit", (r) => ((r.service.environment as Record<string, string>)["1BAD"] = "x")],
        ["service.name", "upper case", (r) => (r.service.name = "Qwen")],
        ["service.name", "a slash", (r) => (r.service.name = "qwen/../x")],
        ["container.hostname", "a space", (r) => (r.container.hostname = "llm two")],
        ["host.address", "an octet over 255", (r) => (r.host.address = "10.1.2.500")],
        ["host.address", "a ;", (r) => (r.host.address = "kpro5;id")],
        ["service.endpointHost", "a URL", (r) => (r.service.endpointHost = "http://10.1.230.172")],
        ["service.port", "port 0", (r) => (r.service.port = 0)],
        ["service.port", "port 65536", (r) => (r.service.port = 65536)],
        ["service.port", "a fraction", (r) => (r.service.port = 30000.5)],
        ["host.port", "a string that is not a number", (r) => ((r.host as Record<string, unknown>).port = "22 ")],
        ["host.port", "a word", (r) => ((r.host as Record<string, unknown>).port = "ssh")],
        ["service.sglangVersion", "a suffix", (r) => (r.service.sglangVersion = "0.5.11rc1")],
    ];
    for (const [path, label, edit] of bad) {
        it(`rejects ${path} with ${label}`, () => {
            issueAt(withField(edit), path);
        });
    }

    it("rejects the API key in the plain environment, pointing at the secret", () => {
        const issue = issueAt(
            withField((r) => ((r.service.environment as Record<string, string>).SGLANG_API_KEY = "abcdefabcdefabcdef")),
            "service.environment.SGLANG_API_KEY",
        );
        assert.match(issue.message, /service\.requireApiKey: true .*SGLANG_SERVE_API_KEY/);
        assert.equal(issue.value, "[secret]");
    });

    for (const name of ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "MY_SECRET", "DB_PASSWORD", "openai_api_key"]) {
        it(`refuses ${name} in the plain environment, without its value, pointing at secretEnvironment`, () => {
            const raw = withField((r) => ((r.service.environment as Record<string, string>)[name] = "hf_abcdefghijklmnop"));
            const issue = issueAt(raw, `service.environment.${name}`);
            assert.match(issue.message, /looks like a secret/);
            assert.match(issue.message, /sglang-serve:service\.secretEnvironment/);
            assert.match(issue.message, /SGLANG_SERVE_SECRET_ENVIRONMENT/);
            assert.doesNotMatch(formatConfigIssues([issue]), /hf_abcdefghijklmnop/);
        });
    }

    for (const [name, rule] of [
        ["PASSWD", /names a password or passphrase/],
        ["SMTP_PASSPHRASE", /names a password or passphrase/],
        ["DB_PASS", /names a password \(PASS or PWD\)/],
        ["HF_AUTH", /names an authorization \(AUTH\)/],
        ["OPENAI_APIKEY", /names an API or access key/],
        ["AWS_ACCESS_KEY_ID", /names an API or access key/],
        ["CREDENTIALS", /holds CREDENTIAL/],
        ["PRIVATE_KEY_PEM", /holds PRIVATE/],
    ] as const) {
        it(`refuses ${name} in the plain environment (issue 34's wider set), naming the rule and secretEnvironment`, () => {
            const raw = withField((r) => ((r.service.environment as Record<string, string>)[name] = "plain-looking-value"));
            const issue = issueAt(raw, `service.environment.${name}`);
            assert.match(issue.message, new RegExp(`${name} looks like a secret`));
            assert.match(issue.message, rule);
            assert.match(issue.message, /move the name to sglang-serve:service\.secretEnvironment/);
            assert.equal(issue.value, "[secret]");
            assert.doesNotMatch(formatConfigIssues([issue]), /plain-looking-value/);
        });
    }

    for (const [name, value, rule] of [
        ["DATABASE_URL", "postgres://u:pw@h/db", /a URL with credentials \(scheme:\/\/user:password@…\)/],
        ["HF_HUB_HEADER", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", /a Hugging Face token \(hf_…\)/],
        ["OPENAI_CONF", "--key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx", /an API key \(sk-…\)/],
        ["GIT_CONF", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", /a GitHub token \(ghp_…\)/],
    ] as const) {
        it(`refuses ${name}'s credential-looking value in the plain environment, naming what it looks like without quoting it`, () => {
            const raw = withField((r) => ((r.service.environment as Record<string, string>)[name] = value));
            const issue = issueAt(raw, `service.environment.${name}`);
            assert.match(issue.message, rule);
            assert.match(issue.message, /its value looks like/);
            assert.match(issue.message, new RegExp(`sglang-serve:service\\.secretEnvironment .*SGLANG_SERVE_SECRET_ENVIRONMENT \\(\`${name}=\\.\\.\\.\``));
            assert.equal(issue.value, "[secret]");
            assert.ok(!formatConfigIssues([issue]).includes(value), formatConfigIssues([issue]));
        });
    }

    it("keeps plain values that only resemble credentials (a URL without a password, sk-learn, a mirror)", () => {
        accepted(
            withField(
                (r) =>
                    ((r.service as Record<string, unknown>).environment = {
                        SGLANG_ENABLE_SPEC_V2: "1",
                        DATABASE_URL: "postgres://u@h/db",
                        HF_ENDPOINT: "https://hf-mirror.example/base",
                        EXTRA_PIP: "sk-learn",
                    }),
            ),
        );
    });

    it("keeps plain variables that only contain KEY elsewhere (KEYS_DIR, SGLANG_KEY_CACHE)", () => {
        accepted(
            withField((r) => ((r.service as Record<string, unknown>).environment = { SGLANG_ENABLE_SPEC_V2: "1", KEYS_DIR: "/x", SGLANG_KEY_CACHE: "1" })),
        );
    });

    it("accepts secretEnvironment names and refuses bad, repeated, plain-too or the API key's own name", () => {
        accepted(withField((r) => ((r.service as Record<string, unknown>).secretEnvironment = ["HF_TOKEN", "WANDB_API_KEY"])));
        const names = (list: string[]) => withField((r) => ((r.service as Record<string, unknown>).secretEnvironment = list));
        issueAt(names(["1BAD"]), "service.secretEnvironment[0]");
        assert.match(issueAt(names(["HF_TOKEN", "HF_TOKEN"]), "service.secretEnvironment[1]").message, /listed twice/);
        assert.match(issueAt(names(["SGLANG_ENABLE_SPEC_V2"]), "service.secretEnvironment[0]").message, /in service\.environment too/);
        assert.match(issueAt(names(["SGLANG_API_KEY"]), "service.secretEnvironment[0]").message, /requireApiKey/);
    });

    it("accepts values with % = , : that the unit escapes", () => {
        accepted(
            withField((r) => {
                (r.service.environment as Record<string, string>).PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True,max_split_size_mb=512";
                (r.service.environment as Record<string, string>).SGLANG_PCT = "50%";
            }),
        );
    });

    it("accepts environment values with spaces, quotes, $ and \\, which the unit quotes (systemd does not expand $ in Environment=)", () => {
        accepted(
            withField((r) => {
                (r.service.environment as Record<string, string>).SGLANG_FOO = 'a "quoted" value';
                (r.service.environment as Record<string, string>).SGLANG_BAR = "${X} $HOME \\n 50% it's";
            }),
        );
    });

    it("names the control character in an environment value and says to remove it", () => {
        const issue = issueAt(
            withField((r) => ((r.service.environment as Record<string, string>).SGLANG_FOO = "a\nb")),
            "service.environment.SGLANG_FOO",
        );
        assert.match(issue.message, /holds a newline \(U\+000A\) at position 1.*remove it/);
    });
});

describe("stack config: extraArgs", () => {
    const extra = (args: string[]) => withField((r) => ((r.service as Record<string, unknown>).extraArgs = args));

    it("accepts flags the typed config does not own", () => {
        accepted(extra(["--enable-metrics", "--context-length=32768"]));
    });

    it("accepts a flag followed by its value as two elements", () => {
        accepted(extra(["--reasoning-parser", "qwen3"]));
        accepted(extra(["--context-length", "32768", "--enable-metrics"]));
    });

    it("accepts a flag followed by several values", () => {
        accepted(extra(["--cuda-graph-bs", "1", "2", "4", "8"]));
    });

    it("accepts a JSON value with quotes, spaces and a float", () => {
        accepted(extra(["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}']));
    });

    it("accepts values with spaces, quotes, %, $, \\, ; and non-ASCII text, which go into argv literally", () => {
        accepted(
            extra([
                "--chat-template=a b",
                "--tokenizer-metrics-allowed-custom-labels",
                "$(id)",
                "${SGLANG_API_KEY}",
                "50%",
                "a\\b",
                ";",
                "\\;",
                "it's",
                "字😀",
                "\tx",
            ]),
        );
    });

    it("refuses what the declared release's argparse refuses, with its own line, under the element (issue 18's commands)", () => {
        const cases: [string[], number, RegExp][] = [
            [["--enable-ep-moe"], 0, /sglang serve: error: unrecognized arguments: --enable-ep-moe/],
            [["--kv-cache-dtype=fp9"], 0, /sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' \(choose from 'auto', /],
            [["--enable-metrics=true"], 0, /sglang serve: error: argument --enable-metrics: ignored explicit argument 'true'/],
            [
                ["--reasoning-parser", "qwen3", "--enable-met"],
                2,
                /ambiguous option: --enable-met could match --enable-metrics, --enable-metrics-for-all-schedulers/,
            ],
            [["--enable-metrics", "--cuda-graph-bs"], 1, /argument --cuda-graph-bs: expected at least one argument/],
        ];
        for (const [args, index, line] of cases) {
            const issue = issueAt(extra(args), `service.extraArgs[${index}]`);
            assert.match(issue.message, line);
            assert.match(issue.message, /SGLang 0\.5\.11 refuses it at startup/);
        }
        accepted(extra(["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}']));
        accepted(extra(["--cuda-graph-bs", "1", "2", "4", "8"]));
        // --disable-log-requests, in many published commands, is in none of these releases: each refuses it.
        for (const version of ["0.5.9", "0.5.10", "0.5.11"]) {
            const raw = extra(["--disable-log-requests"]);
            raw.service.sglangVersion = version;
            assert.match(issueAt(raw, "service.extraArgs[0]").message, /unrecognized arguments: --disable-log-requests/);
        }
    });

    it("says when the declared release has no table of options to check extraArgs with, and lets them through", () => {
        const raw = extra(["--no-such-flag"]);
        raw.service.sglangVersion = "0.5.12";
        const result = accepted(raw);
        assert.ok(
            result.ok && result.warnings.some((w) => /service\.extraArgs is not checked against SGLang 0\.5\.12's options/.test(w)),
            JSON.stringify(result.ok && result.warnings),
        );
    });

    it("accepts negative numbers as values", () => {
        accepted(extra(["--bucket-inter-token-latency", "-1", "-0.5", "-.5"]));
    });

    it("requires the first entry to be a --flag, naming it", () => {
        issueAt(extra(["-v"]), "service.extraArgs[0]");
        const issue = issueAt(extra(["32768", "--context-length"]), "service.extraArgs[0]");
        assert.match(issue.message, /^service\.extraArgs\[0\] must be a --flag: .*put the flag before "32768"/);
    });

    it("requires flag names SGLang can have: lowercase letters, digits and -", () => {
        issueAt(extra(["--Context-Length=1"]), "service.extraArgs[0]");
        issueAt(extra(["--enable-metrics", "--"]), "service.extraArgs[1]");
        issueAt(extra(["--enable-metrics", "--x_y", "1"]), "service.extraArgs[1]");
    });

    it("refuses a value argparse would read as an option, saying to write --flag=value", () => {
        const issue = issueAt(extra(["--chat-template", "-v"]), "service.extraArgs[1]");
        assert.match(issue.message, /--flag=-v/);
        accepted(extra(["--chat-template=-v"]));
    });

    it("refuses values after a --flag=value element, which argparse would not give to the flag", () => {
        assert.match(issueAt(extra(["--cuda-graph-bs=1", "2"]), "service.extraArgs[1]").message, /follows service\.extraArgs\[0\] \(--cuda-graph-bs=\.\.\.\)/);
    });

    it("rejects a flag the typed config owns and names the field to use", () => {
        assert.match(issueAt(extra(["--tp-size=2"]), "service.extraArgs[0]").message, /use service\.tensorParallelSize instead/);
        assert.match(issueAt(extra(["--api-key=x"]), "service.extraArgs[0]").message, /service\.requireApiKey/);
        assert.match(issueAt(extra(["--config=/tmp/x.yaml"]), "service.extraArgs[0]").message, /service\.requireApiKey/);
        assert.match(issueAt(extra(["--speculative-algorithm=EAGLE"]), "service.extraArgs[0]").message, /service\.speculative\.algorithm/);
    });

    it("rejects an owned flag given with its value as the next element, at the flag's index", () => {
        assert.match(issueAt(extra(["--enable-metrics", "--tp-size", "2"]), "service.extraArgs[1]").message, /use service\.tensorParallelSize instead/);
        assert.match(issueAt(extra(["--reasoning-parser", "qwen3", "--api-key", "x"]), "service.extraArgs[2]").message, /service\.requireApiKey/);
    });

    it("rejects an abbreviation argparse would expand to an owned flag", () => {
        assert.match(issueAt(extra(["--mem-frac=0.5"]), "service.extraArgs[0]").message, /abbreviation of --mem-fraction-static/);
        assert.match(issueAt(extra(["--mem-frac", "0.5"]), "service.extraArgs[0]").message, /abbreviation of --mem-fraction-static/);
    });

    /** The config's warnings about extraArgs. */
    const extraWarnings = (raw: unknown): string[] => {
        const result = accepted(raw);
        return result.ok ? result.warnings.filter((w) => w.includes("extraArgs")) : [];
    };

    it("accepts a flag repeated in extraArgs, as SGLang's argparse does, warning with both elements, their values and the one kept", () => {
        const warnings = extraWarnings(extra(["--log-level", "info", "--enable-metrics", "--log-level", "debug"]));
        assert.equal(warnings.length, 1, warnings.join("\n"));
        assert.match(
            warnings[0]!,
            /^sglang-serve:service\.extraArgs: service\.extraArgs\[0\] \(--log-level info\) and service\.extraArgs\[3\] \(--log-level debug\) both set --log-level: SGLang 0\.5\.11's argparse keeps the last, so the server runs with --log-level debug/,
        );
        assert.match(warnings[0]!, /Remove service\.extraArgs\[0\] to give it once\.$/);
    });

    it("accepts a flag repeated in the other form, naming each element as written", () => {
        const [warning, ...rest] = extraWarnings(extra(["--cuda-graph-bs", "1", "2", "--cuda-graph-bs=4"]));
        assert.deepEqual(rest, []);
        assert.match(warning!, /service\.extraArgs\[0\] \(--cuda-graph-bs 1 2\) and service\.extraArgs\[3\] \(--cuda-graph-bs=4\) both set --cuda-graph-bs/);
        assert.match(warning!, /runs with --cuda-graph-bs=4/);
    });

    it("accepts a switch given three times, naming every element", () => {
        const [warning] = extraWarnings(extra(["--enable-metrics", "--enable-metrics", "--trust-remote-code", "--enable-metrics"]));
        assert.match(
            warning!,
            /service\.extraArgs\[0\] \(--enable-metrics\), service\.extraArgs\[1\] \(--enable-metrics\) and service\.extraArgs\[3\] \(--enable-metrics\) all set --enable-metrics/,
        );
        assert.doesNotMatch(warning!, /earlier value/);
    });

    it("warns about one option set through its spellings: an alias, an abbreviation, --x then --no-x", () => {
        const [alias] = extraWarnings(extra(["--pp-size", "2", "--pipeline-parallel-size=1"]));
        assert.match(
            alias!,
            /service\.extraArgs\[0\] \(--pp-size 2\) and service\.extraArgs\[2\] \(--pipeline-parallel-size=1\) both set --pipeline-parallel-size/,
        );
        const [abbreviated] = extraWarnings(extra(["--reasoning-pars", "qwen3", "--reasoning-parser", "deepseek-r1"]));
        assert.match(abbreviated!, /both set --reasoning-parser: .*runs with --reasoning-parser deepseek-r1/);
        const [negated] = extraWarnings(extra(["--lora-strict-loading", "--no-lora-strict-loading"]));
        assert.match(negated!, /both set --lora-strict-loading: .*runs with --no-lora-strict-loading/);
    });

    it("still refuses an earlier occurrence whose value argparse refuses, though a later one is good", () => {
        const issue = issueAt(extra(["--kv-cache-dtype=fp9", "--kv-cache-dtype", "fp8_e4m3"]), "service.extraArgs[0]");
        assert.match(issue.message, /invalid choice: 'fp9'/);
    });

    it("still refuses a typed setting given again in extraArgs, at every element that sets it", () => {
        const raw = extra(["--tp-size", "2", "--enable-metrics", "--tp-size=1"]);
        assert.match(issueAt(raw, "service.extraArgs[0]").message, /use service\.tensorParallelSize instead/);
        assert.match(issueAt(raw, "service.extraArgs[3]").message, /use service\.tensorParallelSize instead/);
    });

    it("rejects NUL, line breaks and other control characters, naming the element and the character", () => {
        issueAt(extra(["--x=\n"]), "service.extraArgs[0]");
        const issue = issueAt(extra(["--json-model-override-args", '{"a":\n1}']), "service.extraArgs[1]");
        assert.match(issue.message, /^service\.extraArgs\[1\] holds a newline \(U\+000A\) at position 5.*remove it/);
        assert.equal(issue.value, '{"a":\n1}');
        issueAt(extra(["--x", "a\0b"]), "service.extraArgs[1]");
        issueAt(extra(["--x", "a\rb"]), "service.extraArgs[1]");
        issueAt(extra(["--x", "a\u2028b"]), "service.extraArgs[1]");
        issueAt(extra(["--x", "\x1b[31m"]), "service.extraArgs[1]");
    });

    it("reads --mamba-track-interval in both forms for SGLang's own rules, reporting at the flag", () => {
        const spec = (r: FieldRaw, args: string[]) => {
            r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1, numDraftTokens: 4 } as typeof r.service.speculative;
            (r.service as Record<string, unknown>).extraArgs = args;
        };
        const issue = issueAt(
            withField((r) => spec(r, ["--enable-metrics", "--mamba-track-interval", "2"])),
            "service.extraArgs[1]",
        );
        assert.ok(issue.message.includes("mamba_track_interval 2 must be greater than or equal to speculative_num_draft_tokens 4"));
        assert.equal(issue.value, "--mamba-track-interval 2");
        accepted(withField((r) => spec(r, ["--mamba-track-interval", "4"])));
    });
});

describe("stack config: host, container, readiness", () => {
    it("requires a container for pct-exec", () => {
        const raw = withField((r) => delete (r as { container?: unknown }).container);
        assert.match(issueAt(raw, "container").message, /required when host\.topology is pct-exec/);
    });

    it("forbids a container for direct", () => {
        const raw = withField((r) => (r.host.topology = "direct"));
        assert.match(issueAt(raw, "container").message, /must be absent when host\.topology is direct/);
    });

    it("requires a well-formed pinned host key", () => {
        issueAt(
            withField((r) => (r.host.hostKey = "10.1.2.5 ssh-ed25519 AAAA")),
            "host.hostKey",
        );
        assert.match(hostKeyProblem("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLVJFUExBQ0UtV0lUSC1LRVlTQ0FO") ?? "", /blob holds ssh-ed25519/);
        assert.equal(hostKeyProblem(PLACEHOLDER_HOST_KEY), undefined);
    });

    it("refuses the SSH key as Pulumi config, without its value, pointing at ssh-agent and the removal", () => {
        const issue = issueAt({ ...fieldConfig(), sshPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----" }, "sshPrivateKey");
        assert.match(issue.message, /pulumi config rm sglang-serve:sshPrivateKey/);
        assert.match(issue.message, /ssh-agent/);
        assert.match(issue.message, /rotate the key/);
        assert.doesNotMatch(formatConfigIssues([issue]), /BEGIN OPENSSH/);
        issueAt({ ...fieldConfig(), sshPrivateKeyPassphrase: "hunter2hunter2" }, "sshPrivateKeyPassphrase");
    });

    it("rejects a probe timeout within SGLang's own health-check timeout", () => {
        const raw = { ...fieldConfig(), readiness: { probeTimeoutSeconds: 20 } };
        assert.match(issueAt(raw, "readiness.probeTimeoutSeconds").message, /SGLANG_HEALTH_CHECK_TIMEOUT \(20 s\)/);
        accepted({ ...fieldConfig(), readiness: { probeTimeoutSeconds: 25 } });
    });

    it("rejects listening on loopback when the stack reaches the server elsewhere", () => {
        const raw = withField((r) => delete (r.service as Partial<typeof r.service>).listenHost);
        assert.match(issueAt(raw, "service.listenHost").message, /unreachable at endpointHost 10\.1\.230\.172/);
    });

    it("leaves a release whose rules are not transcribed to its own code, saying so, and never applies another release's rules to it", () => {
        // NEXTN with the radix cache and no strategy: 0.5.11's ValueError; 0.5.23 picks an extra buffer itself and starts.
        const radix = (version: string) =>
            withField((r) => {
                r.service.sglangVersion = version;
                delete (r.service as Record<string, unknown>).mambaSchedulerStrategy;
            });
        issueAt(radix("0.5.11"), "service.mambaSchedulerStrategy");
        const result = accepted(radix("0.6.0"));
        assert.ok(
            result.notices.some((w) =>
                /sglang-serve:service\.sglangVersion is 0\.6\.0: its ServerArgs rules are SGLang's own code, run at the preview .*transcribed rules cover 0\.5\.9, 0\.5\.10, 0\.5\.11/.test(
                    w,
                ),
            ),
            result.notices.join("\n"),
        );
    });
});

describe("stack config: API key and authentication", () => {
    const withKey = (required: boolean) => withField((r) => ((r.service as Record<string, unknown>).requireApiKey = required));

    for (const key of ["", "short", "0123456789abcdef0123456789abcdef"]) {
        it(`refuses sglang-serve:apiKey (${key.length} characters) as Pulumi config, without its value, with the way out`, () => {
            const issue = issueAt({ ...fieldConfig(), apiKey: key }, "apiKey");
            assert.match(issue.message, /pulumi config rm sglang-serve:apiKey/);
            assert.match(issue.message, /service\.requireApiKey: true/);
            assert.match(issue.message, /SGLANG_SERVE_API_KEY/);
            assert.match(issue.message, /rotate the key/);
            const text = formatConfigIssues([issue]);
            assert.match(text, /sglang-serve:apiKey = \[secret\]/);
            if (key !== "") assert.ok(!text.includes(key), text);
        });
    }

    it("refuses a generated key, which would live in the state", () => {
        assert.match(issueAt({ ...fieldConfig(), generateApiKey: true }, "generateApiKey").message, /lives in the state/);
    });

    it("accepts a server that requires a key, with no key in the config", () => {
        accepted(withKey(true));
    });

    it("refuses a server on 0.0.0.0 without a key, naming requireApiKey, listenHost and allowUnauthenticated", () => {
        const issue = issueAt(withKey(false), "service.requireApiKey");
        assert.match(issue.message, /service\.listenHost is 0\.0\.0\.0/);
        assert.match(issue.message, /SGLANG_SERVE_API_KEY/);
        assert.match(issue.message, /service\.allowUnauthenticated: true/);
        assert.match(formatConfigIssues([issue]), /sglang-serve:service\.requireApiKey = false/);
    });

    it("refuses a server on another non-loopback address without a key", () => {
        const raw = withKey(false);
        (raw.service as Record<string, unknown>).listenHost = "10.1.230.172";
        issueAt(raw, "service.requireApiKey");
    });

    it("accepts a server on 0.0.0.0 without a key when allowUnauthenticated says so, with a warning", () => {
        const raw = withKey(false);
        (raw.service as Record<string, unknown>).allowUnauthenticated = true;
        const result = accepted(raw);
        assert.ok(
            result.warnings.some((w) => w.includes("without an API key") && w.includes("0.0.0.0:30000")),
            result.warnings.join("\n"),
        );
    });

    it("accepts a server on loopback without a key", () => {
        const raw = withKey(false);
        (raw.service as Record<string, unknown>).listenHost = "127.0.0.1";
        (raw.service as Record<string, unknown>).endpointHost = "127.0.0.1";
        accepted(raw);
    });

    it("reports a key left in Pulumi config alone when the server requires a key", () => {
        const issues = issuesOf({ ...withKey(true), apiKey: "0123456789abcdef" });
        assert.deepEqual(
            issues.map((i) => i.path),
            ["apiKey"],
        );
    });

    it("rejects a takeOverFrom that is not a stack name", () => {
        issueAt(
            withField((r) => ((r.service as Record<string, unknown>).takeOverFrom = "ct 129")),
            "service.takeOverFrom",
        );
        accepted(withField((r) => ((r.service as Record<string, unknown>).takeOverFrom = "ct129")));
        accepted(withField((r) => ((r.service as Record<string, unknown>).takeOverFrom = "sglang-serve/ct129")));
    });
});

describe("stack config: numbers and booleans as `pulumi config set --path` stores them (strings)", () => {
    it('takes "0.87" for service.memFractionStatic 0.87', () => {
        const { config } = accepted(withField((r) => ((r.service as Record<string, unknown>).memFractionStatic = "0.87"))) as {
            config: import("../../core/config/schema").StackConfig;
        };
        assert.equal(config.servers[0]!.memFractionStatic, 0.87);
    });

    it('takes "2" for service.tensorParallelSize and "22" for host.port', () => {
        const { config } = accepted(
            withField((r) => {
                (r.service as Record<string, unknown>).tensorParallelSize = "2";
                (r.host as Record<string, unknown>).port = "22";
            }),
        ) as { config: import("../../core/config/schema").StackConfig };
        assert.equal(config.servers[0]!.tensorParallelSize, 2);
        assert.equal(config.boxes[0]!.host.port, 22);
    });

    it('takes "true" and "false" for booleans', () => {
        const { config } = accepted(
            withField((r) => {
                (r.service as Record<string, unknown>).disableRadixCache = "false";
                r.readiness = { chatCheck: "true" };
            }),
        ) as { config: import("../../core/config/schema").StackConfig };
        assert.equal(config.servers[0]!.disableRadixCache, false);
        assert.equal(config.readiness.chatCheck, true);
    });

    it("still rejects a string that is not a whole number where one is wanted, with the usual message", () => {
        const issue = issueAt(
            withField((r) => ((r.service as Record<string, unknown>).tensorParallelSize = "two")),
            "service.tensorParallelSize",
        );
        assert.match(issue.message, /must be a number, not string/);
        issueAt(
            withField((r) => ((r.service as Record<string, unknown>).tensorParallelSize = "2.5")),
            "service.tensorParallelSize",
        );
        issueAt(
            withField((r) => ((r.service as Record<string, unknown>).tensorParallelSize = "")),
            "service.tensorParallelSize",
        );
    });

    it('rejects "yes" and "1" for a boolean', () => {
        issueAt(
            withField((r) => ((r.service as Record<string, unknown>).disableRadixCache = "yes")),
            "service.disableRadixCache",
        );
        issueAt(
            withField((r) => ((r.service as Record<string, unknown>).disableRadixCache = "1")),
            "service.disableRadixCache",
        );
    });
});

describe("stack config: SSH credentials", () => {
    const withoutKeyPath = () => withField((r) => delete (r.host as Partial<typeof r.host>).sshPrivateKeyPath);

    it("accepts neither a key path nor the key secret: the providers use ssh-agent", () => {
        const result = accepted(withoutKeyPath());
        assert.ok(!result.warnings.some((w) => w.includes("cannot log in")), result.warnings.join("\n"));
    });

    it("warns when neither is set and no ssh-agent runs", () => {
        const result = validateStackConfig(withoutKeyPath(), { sshAgentAvailable: false });
        assert.ok(
            result.warnings.some((w) => /no ssh-agent runs \(SSH_AUTH_SOCK is not set\).*cannot log in to 10\.1\.2\.5/.test(w)),
            result.warnings.join("\n"),
        );
    });

    it("does not warn about the agent when a key file is set", () => {
        const result = validateStackConfig(withKeyFile(), { sshAgentAvailable: false });
        assert.ok(!result.warnings.some((w) => w.includes("ssh-agent")));
    });
});

describe("stack config: a new stack with no config yet (pulumi stack init, then preview)", () => {
    const repo = path.join(__dirname, "..", "..");
    const newStackMessage = () => formatConfigIssues(issuesOf(rawStackConfig(() => undefined)), "newbox");

    it("names the sections to set in the stack's own file, and where the example config is", () => {
        const message = newStackMessage();
        assert.match(message, /fix these keys in Pulumi\.newbox\.yaml:/);
        assert.match(message, /sglang-serve:host = \(not set\)\n\s+host is required/);
        assert.match(message, /sglang-serve:service = \(not set\)\n\s+service is required/);
        assert.match(message, /Start from an example: copy the config: section of Pulumi\.kpro5\.yaml .*\nor Pulumi\.ct129\.yaml .* into Pulumi\.newbox\.yaml/);
        assert.match(message, /docs\/design\.md, "Stack config", describes every key/);
    });

    it("points at files and headings that exist", () => {
        const message = newStackMessage();
        for (const stack of ["kpro5", "ct129"]) assert.ok(fs.existsSync(path.join(repo, `Pulumi.${stack}.yaml`)), `Pulumi.${stack}.yaml`);
        const headings = (doc: string) => fs.readFileSync(path.join(repo, doc), "utf8").match(/^#+ .*$/gm) ?? [];
        const cited = [...message.matchAll(/(docs\/[\w-]+\.md), "([^"]+)"/g)];
        assert.equal(cited.length, 2, message);
        for (const [, doc, heading] of cited) {
            assert.ok(
                headings(doc).some((h) => h.replace(/^#+ /, "").startsWith(heading)),
                `${doc} has no heading "${heading}"`,
            );
        }
    });

    it("does not repeat the example's pointer for a filled-in config with a bad value", () => {
        const message = formatConfigIssues(issuesOf(withField((r) => (r.service.port = 70000))), "kpro5");
        assert.match(message, /fix these keys in Pulumi\.kpro5\.yaml:/);
        assert.doesNotMatch(message, /Start from an example/);
    });
});
