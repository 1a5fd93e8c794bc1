import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { BoxExpectations, boxContradictions, boxExpectations, boxFactsCommand, BoxFacts, drafterDigestRefusal, parseBoxFacts } from "../../core/box/box-facts";
import { validateStackConfig } from "../../core/config/config";
import { readBoxFacts } from "../../providers/sglang-server/facts";
import type { RemoteHost } from "../../remote/remote-host";
import { DFLASH_BLOCK, fieldConfig, withField } from "./fixtures";

const QWEN = path.join(__dirname, "..", "..", "lab", "sglang", "fixtures", "qwen3.6-27b", "config.json");

function fieldExpectations(): BoxExpectations {
    const result = validateStackConfig(fieldConfig());
    assert.ok(result.ok);
    return boxExpectations(result.config.servers[0]!, 49140);
}

const fieldFacts = (): BoxFacts => ({
    sglangVersion: "0.5.11",
    model: "present",
    architecture: "Qwen3_5ForConditionalGeneration",
    mtpLayers: 1,
    weightsBytes: 53.8e9,
});

describe("box facts: the script the stack runs on the box (real python3)", () => {
    let dir: string;
    before(function () {
        // The read runs only through directories that root alone owns and writes: not under the world-writable /tmp.
        if (process.getuid?.() !== 0) this.skip();
        dir = fs.mkdtempSync("/run/box-facts-");
        fs.chmodSync(dir, 0o755);
    });
    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    function run(modelPath: string, python = "/usr/bin/python3"): BoxFacts {
        const [interpreter, ...args] = boxFactsCommand(python, modelPath);
        const r = spawnSync(interpreter!, args, { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        return parseBoxFacts(r.stdout);
    }

    it("reads the architecture, MTP layers, layer types and the safetensors index's total size from the model folder", () => {
        const model = path.join(dir, "qwen");
        fs.mkdirSync(model);
        fs.copyFileSync(QWEN, path.join(model, "config.json"));
        fs.writeFileSync(path.join(model, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: 53_800_000_000 }, weight_map: {} }));
        const facts = run(model);
        assert.equal(facts.model, "present");
        assert.equal(facts.architecture, "Qwen3_5ForConditionalGeneration");
        assert.equal(facts.mtpLayers, 1);
        assert.equal(facts.weightsBytes, 53_800_000_000);
        assert.equal(facts.layerTypes?.filter((t) => t === "linear_attention").length, 48);
        assert.equal(facts.layerTypes?.filter((t) => t === "full_attention").length, 16);
    });

    it("reads the venv's SGLang version from its package metadata, without importing it", () => {
        const venv = path.join(dir, "venv");
        const made = spawnSync("python3", ["-m", "venv", "--without-pip", venv], { encoding: "utf8" });
        assert.equal(made.status, 0, made.stderr);
        const site = path.join(venv, "lib", fs.readdirSync(path.join(venv, "lib"))[0]!, "site-packages");
        const distInfo = path.join(site, "sglang-0.5.11.dist-info");
        fs.mkdirSync(distInfo);
        fs.writeFileSync(path.join(distInfo, "METADATA"), "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.11\n");
        // An import would fail: the package's code is not there at all.
        assert.equal(run(path.join(dir, "nowhere"), path.join(venv, "bin", "python3")).sglangVersion, "0.5.11");
        assert.equal(run(path.join(dir, "nowhere")).sglangVersion, null);
    });

    it("reads the model's facts with the box's python3 when the configured python does not exist, saying it is missing; and says a venv whose staging did not finish", () => {
        const model = path.join(dir, "for-missing");
        fs.mkdirSync(model);
        fs.copyFileSync(QWEN, path.join(model, "config.json"));
        const missing = run(model, path.join(dir, "releases", "venv-0.5.23", "bin", "python3"));
        assert.equal(missing.python, "missing");
        assert.equal(missing.sglangVersion, null);
        assert.equal(missing.architecture, "Qwen3_5ForConditionalGeneration", "the model's facts still come");
        const venv = path.join(dir, "half-staged");
        const made = spawnSync("python3", ["-m", "venv", "--without-pip", venv], { encoding: "utf8" });
        assert.equal(made.status, 0, made.stderr);
        assert.equal(run(model, path.join(venv, "bin", "python3")).python, undefined);
        fs.writeFileSync(path.join(venv, ".sglang-serve-staging"), "");
        assert.equal(run(model, path.join(venv, "bin", "python3")).python, "staging");
    });

    it("derives the context length as SGLang does: the text sub-config's first length key, times a rope scaling factor without original_max_position_embeddings", () => {
        const base = { architectures: ["LlamaForCausalLM"], max_position_embeddings: 40960 };
        const configs: Array<[string, Record<string, unknown>, number | undefined]> = [
            ["plain", base, 40960],
            ["linear", { ...base, rope_scaling: { rope_type: "linear", factor: 2.0 } }, 81920],
            ["yarn", { ...base, rope_scaling: { rope_type: "yarn", factor: 4.0, original_max_position_embeddings: 32768 } }, 40960],
            ["llama3", { ...base, rope_scaling: { rope_type: "llama3", factor: 8.0 } }, 40960],
            ["first-key", { ...base, seq_length: 8192 }, 8192],
            ["nested", { architectures: ["X"], max_position_embeddings: 4096, text_config: { max_position_embeddings: 131072 } }, 131072],
            ["none", { architectures: ["X"] }, undefined],
        ];
        for (const [name, config, expected] of configs) {
            const model = path.join(dir, `ctx-${name}`);
            fs.mkdirSync(model);
            fs.writeFileSync(path.join(model, "config.json"), JSON.stringify(config));
            assert.equal(run(model).contextLength, expected, name);
        }
        const qwen = path.join(dir, "ctx-qwen");
        fs.mkdirSync(qwen);
        fs.copyFileSync(QWEN, path.join(qwen, "config.json"));
        assert.equal(run(qwen).contextLength, 262144);
        assert.deepEqual([run(qwen).attentionHeads, run(qwen).kvHeads], [24, 4], "from the text config");
    });

    it("gives a folder digest that changes when a file in it is replaced, added or its config.json rewritten, and stays while nothing changes", () => {
        const drafter = path.join(dir, "drafter");
        fs.mkdirSync(drafter);
        fs.writeFileSync(path.join(drafter, "config.json"), JSON.stringify({ architectures: ["DFlashDraftModel"] }));
        fs.writeFileSync(path.join(drafter, "model.safetensors"), "weights-1");
        const first = run(drafter).folderDigest;
        assert.match(first ?? "", /^[0-9a-f]{32}$/);
        assert.equal(run(drafter).folderDigest, first, "a second read of the same folder");
        const republished = new Date(Date.now() + 60_000);
        fs.writeFileSync(path.join(drafter, "model.safetensors"), "weights-2");
        fs.utimesSync(path.join(drafter, "model.safetensors"), republished, republished);
        const second = run(drafter).folderDigest;
        assert.notEqual(second, first, "the weights replaced in place (same size, new mtime)");
        fs.writeFileSync(path.join(drafter, "extra.safetensors"), "x");
        assert.notEqual(run(drafter).folderDigest, second, "a file added");
    });

    it("says a model folder is missing, or has no config.json", () => {
        assert.equal(run(path.join(dir, "nowhere")).model, "missing");
        const empty = path.join(dir, "empty");
        fs.mkdirSync(empty);
        assert.equal(run(empty).model, "no-config");
    });
});

describe("box facts: the pinned drafter (service.speculative.draftModelDigest)", () => {
    const PINNED = "0123456789abcdef0123456789abcdef";
    const withDrafter = (digest?: string): BoxExpectations => {
        const field = fieldExpectations();
        return {
            ...field,
            serverArgs: {
                ...field.serverArgs,
                speculative: DFLASH_BLOCK,
            },
            ...(digest ? { drafterDigest: digest } : {}),
        };
    };
    const folder = (folderDigest: string): BoxFacts => ({ ...fieldFacts(), folderDigest });

    it("takes the digest out of the settings SGLang judges, to the expectations", () => {
        const result = validateStackConfig(
            withField((r) => (r.service.speculative = { ...DFLASH_BLOCK, draftModelDigest: PINNED } as typeof r.service.speculative)),
        );
        assert.ok(result.ok);
        const expect = boxExpectations(result.config.servers[0]!);
        assert.equal(expect.drafterDigest, PINNED);
        assert.equal((expect.serverArgs.speculative as Record<string, unknown>).draftModelDigest, undefined);
    });

    it("accepts the pinned folder, and anything when nothing is pinned", () => {
        assert.equal(drafterDigestRefusal(withDrafter(PINNED), folder(PINNED)), undefined);
        assert.equal(drafterDigestRefusal(withDrafter(), folder("f".repeat(32))), undefined);
    });

    it("refuses another folder naming both digests and both ways out, and a folder it cannot read", () => {
        const other = "f".repeat(32);
        assert.deepEqual(drafterDigestRefusal(withDrafter(PINNED), folder(other)), {
            property: "service.speculative.draftModelDigest",
            reason:
                `service.speculative.draftModelDigest is ${PINNED}, but the drafter folder /models/dflash-drafter on the box has digest ${other}: it holds another drafter than the one pinned. ` +
                `Copy the pinned drafter back, or declare ${other} to serve what is there.`,
        });
        assert.match(
            drafterDigestRefusal(withDrafter(PINNED), { error: "no such folder" })!.reason,
            /pins \/models\/dflash-drafter, which cannot be read on the box: no such folder$/,
        );
    });
});

describe("box facts: the box contradicting the declared server", () => {
    it("finds nothing for the field config on the field box", () => {
        assert.deepEqual(boxContradictions(fieldExpectations(), fieldFacts()), []);
    });

    it("names both versions when the venv has another SGLang than declared", () => {
        const expect = { ...fieldExpectations(), sglangVersion: "0.5.10" };
        const [c] = boxContradictions(expect, fieldFacts());
        assert.equal(c?.property, "service.sglangVersion");
        assert.match(c!.reason, /service\.sglangVersion is 0\.5\.10 but \/opt\/sglang\/venv\/bin\/python3 has SGLang 0\.5\.11 installed/);
    });

    it("names the python when it has no SGLang at all", () => {
        const [c] = boxContradictions(fieldExpectations(), { ...fieldFacts(), sglangVersion: null });
        assert.equal(c?.property, "service.python");
    });

    it("names both architectures, and both weight sizes beyond 10%", () => {
        const found = boxContradictions(fieldExpectations(), { ...fieldFacts(), architecture: "LlamaForCausalLM", weightsBytes: 70e9 });
        assert.deepEqual(
            found.map((c) => c.property),
            ["service.model.architecture", "service.model.weightsGB"],
        );
        assert.match(found[0]!.reason, /is Qwen3_5ForConditionalGeneration but .*config\.json says LlamaForCausalLM/);
        assert.match(found[1]!.reason, /weightsGB is 52 but the weights .* are 70\.0 GB/);
    });

    it("refuses NEXTN on a checkpoint without MTP layers", () => {
        const [c] = boxContradictions(fieldExpectations(), { ...fieldFacts(), mtpLayers: 0 });
        assert.equal(c?.property, "service.speculative.algorithm");
        assert.match(c!.reason, /has none \(no mtp_num_hidden_layers or num_nextn_predict_layers\)/);
    });

    it("refuses a missing model folder, and says nothing else about it", () => {
        const found = boxContradictions(fieldExpectations(), { sglangVersion: "0.5.11", model: "missing" });
        assert.deepEqual(
            found.map((c) => c.property),
            ["service.model.path"],
        );
    });

    it("does not refuse a declared source's revision folder that the rollout has not staged yet, but refuses one with no config.json", () => {
        const expect = { ...fieldExpectations(), modelFromSource: true };
        assert.deepEqual(boxContradictions(expect, { sglangVersion: "0.5.11", model: "missing" }), []);
        assert.deepEqual(
            boxContradictions(expect, { sglangVersion: "0.5.11", model: "no-config" }).map((c) => c.property),
            ["service.model.path"],
        );
    });

    it("judges SGLang's hybrid-model rules with the box's architecture when the config leaves it out", () => {
        const expect = { ...fieldExpectations() };
        delete expect.architecture;
        assert.deepEqual(boxContradictions(expect, fieldFacts()), []);
        const nemotron = boxContradictions(expect, { ...fieldFacts(), architecture: "NemotronHForCausalLM" });
        assert.equal(nemotron[0]?.property, "service.mambaSchedulerStrategy");
        assert.match(nemotron[0]!.reason, /mamba extra_buffer is not supported for NemotronHForCausalLM model/);
    });

    it("refuses a --context-length above what SGLang derives from the box's config.json, under its extraArgs element, with SGLang's text", () => {
        const withArgs = (extraArgs: string[], environment: Record<string, string> = {}) => {
            const raw = fieldConfig();
            raw.service.extraArgs = extraArgs;
            raw.service.environment = { ...raw.service.environment, ...environment };
            const result = validateStackConfig(raw);
            assert.ok(result.ok);
            return boxExpectations(result.config.servers[0]!, 49140);
        };
        const facts = { ...fieldFacts(), contextLength: 40960 };
        const [c, ...rest] = boxContradictions(withArgs(["--reasoning-parser", "qwen3", "--context-length", "60000"]), facts);
        assert.deepEqual(rest, []);
        assert.equal(c?.property, "service.extraArgs[2]");
        assert.match(
            c!.reason,
            /^service\.extraArgs\[2\] is --context-length 60000: SGLang 0\.5\.11 refuses it at startup with ValueError: Warning: User-specified context_length \(60000\) is greater than the derived context_length \(40960\)\./,
        );
        assert.match(c!.reason, /fix: --context-length 40960 or less/);
        assert.deepEqual(boxContradictions(withArgs(["--context-length=40960"]), facts), []);
        assert.deepEqual(boxContradictions(withArgs(["--context-length", "60000"], { SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: "1" }), facts), []);
        const yarn = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}';
        assert.deepEqual(boxContradictions(withArgs(["--context-length", "131072", "--json-model-override-args", yarn]), facts), []);
        assert.deepEqual(boxContradictions(withArgs(["--context-length", "60000"]), fieldFacts()), [], "no verdict without the box's length");
    });

    it("refuses a tensorParallelSize that does not split the attention heads or the KV heads, with SGLang's assertion and the sizes that do", () => {
        const facts = { ...fieldFacts(), attentionHeads: 24, kvHeads: 4 };
        const at = (tp: number, extra: Partial<BoxExpectations> = {}) => boxContradictions({ ...fieldExpectations(), attentionTpSize: tp, ...extra }, facts);
        for (const tp of [1, 2, 4, 8, 12, 24]) assert.deepEqual(at(tp), [], `tp ${tp}`);
        const [five] = at(5);
        assert.equal(five?.property, "service.tensorParallelSize");
        assert.equal(
            five!.reason,
            "service.tensorParallelSize is 5 but /models/Qwen3.6-27B/config.json has 24 attention heads and 4 KV heads: SGLang 0.5.11 fails loading the weights " +
                "with AssertionError: 24 is not divisible by 5 (QKVParallelLinear); use a tensorParallelSize that splits them: 2, 4, 8, 12, 24.",
        );
        assert.match(at(3)[0]!.reason, /AssertionError: 4 is not divisible by 3/, "fewer KV heads than tp do not split");
        assert.match(at(6)[0]!.reason, /AssertionError: 6 is not divisible by 4/, "KV heads replicated over tp must divide it");
        const withoutTp = fieldExpectations();
        delete withoutTp.attentionTpSize;
        assert.deepEqual(
            boxContradictions({ ...withoutTp, memory: { ...withoutTp.memory, tensorParallelSize: 5 } }, facts),
            [],
            "with --enable-dp-attention (or an older state): not judged",
        );
    });

    it("takes --enable-dp-attention's split out of the heads rule", () => {
        const raw = fieldConfig();
        raw.service.extraArgs = ["--enable-dp-attention", "--dp-size", "2"];
        const result = validateStackConfig(raw);
        assert.ok(result.ok, result.ok ? "" : JSON.stringify(result.issues));
        assert.equal(boxExpectations(result.config.servers[0]!, 49140).attentionTpSize, undefined);
        assert.equal(fieldExpectations().attentionTpSize, 2);
    });

    it("checks the weights from the box against the GPUs when the config leaves weightsGB out", () => {
        const expect = { ...fieldExpectations(), memory: { tensorParallelSize: 1, memFractionStatic: 0.88, gpuMemoryMiB: 49140 } };
        delete expect.weightsGB;
        const [c] = boxContradictions(expect, fieldFacts());
        assert.equal(c?.property, "service.tensorParallelSize");
        assert.match(c!.reason, /53\.8 GB, from the box\) over tensorParallelSize 1/);
        assert.deepEqual(boxContradictions({ ...expect, memory: { ...expect.memory, tensorParallelSize: 2 } }, fieldFacts()), []);
    });
});

describe("box facts against a venv the stack stages (service.venv)", () => {
    const staged = (): BoxExpectations => {
        const result = validateStackConfig(
            withField((raw) => {
                delete raw.service.python;
                raw.service.sglangVersion = "0.5.23";
                raw.service.venv = { root: "/opt/sglang/releases", adopt: { "0.5.11": "/opt/sglang/venv" } };
            }),
        );
        assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
        return boxExpectations(result.config.servers[0]!, 49140);
    };

    it("expects the release's venv under the root, and a missing or half-staged one is no contradiction: the rollout stages it", () => {
        const expect = staged();
        assert.equal(expect.python, "/opt/sglang/releases/venv-0.5.23/bin/python3");
        assert.equal(expect.stagedVenv, "/opt/sglang/releases/venv-0.5.23");
        assert.deepEqual(boxContradictions(expect, { ...fieldFacts(), sglangVersion: null, python: "missing" }), []);
        assert.deepEqual(boxContradictions(expect, { ...fieldFacts(), sglangVersion: null, python: "staging" }), []);
        assert.deepEqual(boxContradictions(expect, { ...fieldFacts(), sglangVersion: "0.5.23" }), []);
    });

    it("refuses a venv at the release's path that the stack did not stage and that holds another release, naming the directory and both fixes", () => {
        const [found] = boxContradictions(staged(), { ...fieldFacts(), sglangVersion: "0.5.10" });
        assert.equal(found?.property, "service.venv");
        assert.match(
            found!.reason,
            /^\/opt\/sglang\/releases\/venv-0\.5\.23 exists but has SGLang 0\.5\.10, not the declared 0\.5\.23, and the stack did not stage it: remove it .*or name the venv that has it in service\.venv\.adopt\.$/,
        );
    });

    it("refuses a venv at the release's path that the stack did not stage (no marker: its python was not run), naming it and both fixes", () => {
        const facts = parseBoxFacts(
            JSON.stringify({ sglangVersion: null, python: "unstaged", model: "present", architecture: "Qwen3_5ForConditionalGeneration" }),
        );
        assert.equal(facts.python, "unstaged");
        const found = boxContradictions(staged(), { ...fieldFacts(), ...facts });
        assert.deepEqual(
            found.map((f) => f.property),
            ["service.venv"],
        );
        assert.match(
            found[0]!.reason,
            /^\/opt\/sglang\/releases\/venv-0\.5\.23 exists but the stack did not stage it \(it has no \.sglang-serve-venv\), so its python is not run: remove it \(the rollout then installs 0\.5\.23 there\), or name it in service\.venv\.adopt\.$/,
        );
    });

    it("asks the box for a staged venv's facts with the read that runs its python only with the stack's marker; a pinned python without", async () => {
        const sent: string[][] = [];
        const remote = {
            run: async (argv: string[]) => {
                sent.push(argv);
                return { code: 0, stdout: JSON.stringify({ sglangVersion: null, python: "unstaged", model: "present" }), stderr: "" };
            },
        } as unknown as RemoteHost;
        const read = await readBoxFacts(remote, staged());
        assert.ok(!("error" in read) && read.python === "unstaged");
        await readBoxFacts(remote, fieldExpectations());
        assert.deepEqual(
            sent.map((a) => a.slice(4)),
            [
                ["/opt/sglang/releases/venv-0.5.23/bin/python3", "/models/Qwen3.6-27B", "sglang", "staged"],
                ["/opt/sglang/venv/bin/python3", "/models/Qwen3.6-27B", "sglang"],
            ],
        );
    });

    it("uses an adopted venv as it is: a missing one is a contradiction, not something to install", () => {
        const result = validateStackConfig(
            withField((raw) => {
                delete raw.service.python;
                raw.service.venv = { root: "/opt/sglang/releases", adopt: { "0.5.11": "/opt/sglang/venv" } };
            }),
        );
        assert.ok(result.ok);
        const expect = boxExpectations(result.config.servers[0]!, 49140);
        assert.equal(expect.python, "/opt/sglang/venv/bin/python3");
        assert.equal(expect.stagedVenv, undefined);
        const [found] = boxContradictions(expect, { ...fieldFacts(), sglangVersion: null, python: "missing" });
        assert.match(found!.reason, /^\/opt\/sglang\/venv\/bin\/python3 does not exist on the box/);
    });
});
