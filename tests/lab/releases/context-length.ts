import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { boxFactsCommand, parseBoxFacts } from "../../../core/box/box-facts";
import { ensureInstalled, runOracle, sglangVersions } from "../../../sglang-release/oracle";
import { fixtureModelPath } from "../../../lab/sglang/fixtures";

// Issue 18: a `--context-length` above the model's is refused at preview from
// the box's config.json (core/box/box-facts.ts derives the length). Here the
// derivation is held to the real releases: for each config.json, the length
// the box-facts script derives starts, and one more fails with SGLang's own
// ValueError naming that length.

const QWEN = JSON.parse(fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8")) as Record<string, unknown>;
const QWEN_TEXT = QWEN.text_config as Record<string, unknown>;
const LLAMA = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_size: 1024,
    intermediate_size: 2048,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    num_hidden_layers: 4,
    vocab_size: 32000,
    max_position_embeddings: 40960,
    torch_dtype: "bfloat16",
    rms_norm_eps: 1e-6,
};

/** config.json variants: the hybrid Qwen3.6 (its length in text_config), and a plain Llama with each kind of rope scaling. */
const CONFIGS: Record<string, Record<string, unknown>> = {
    "qwen3.6": QWEN,
    "qwen3.6-40960": { ...QWEN, text_config: { ...QWEN_TEXT, max_position_embeddings: 40960 } },
    llama: LLAMA,
    "llama-linear-x2": { ...LLAMA, rope_scaling: { rope_type: "linear", factor: 2.0 } },
    "llama-yarn-original": { ...LLAMA, rope_scaling: { rope_type: "yarn", factor: 4.0, original_max_position_embeddings: 32768 } },
};

describe("the context length the box facts derive, against the real releases", function () {
    this.timeout(300_000);
    let dir: string;
    before(async function () {
        // The box-facts read runs only through directories root alone owns and writes: not under the world-writable /tmp.
        if (process.getuid?.() !== 0) this.skip();
        await ensureInstalled();
        dir = fs.mkdtempSync("/run/context-length-");
        fs.chmodSync(dir, 0o755);
        for (const [name, config] of Object.entries(CONFIGS)) {
            fs.mkdirSync(path.join(dir, name));
            fs.writeFileSync(path.join(dir, name, "config.json"), JSON.stringify(config));
        }
    });
    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    function derived(name: string): number {
        const [python, ...args] = boxFactsCommand("/usr/bin/python3", path.join(dir, name));
        const r = spawnSync(python!, args, { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        const length = parseBoxFacts(r.stdout).contextLength;
        assert.ok(length !== undefined, `${name}: no context length derived`);
        return length;
    }

    // Not 0.5.9: given --context-length, its launcher reaches sglang.multimodal_gen (its diffusion extra:
    // remote-pdb, imageio, ...), which the lab's install of its config layer does not hold.
    for (const version of sglangVersions().filter((v) => v !== "0.5.9")) {
        it(`${version}: the derived length starts and one more fails with SGLang's ValueError naming it`, async () => {
            const names = Object.keys(CONFIGS);
            const lengths = names.map(derived);
            assert.deepEqual(lengths.slice(0, 2), [262144, 40960]);
            const cases = names.flatMap((name, i) =>
                [lengths[i]!, lengths[i]! + 1].map((n) => ({
                    argv: ["--model-path", path.join(dir, name), "--context-length", String(n)],
                    entry: "sglang-serve" as const,
                })),
            );
            const results = await runOracle(version, cases);
            names.forEach((name, i) => {
                const [fits, over] = [results[2 * i]!, results[2 * i + 1]!];
                assert.equal(fits.status, "ok", `${name} at ${lengths[i]}: ${fits.exceptionType}: ${fits.message}`);
                assert.equal(over.exceptionType, "ValueError", `${name} at ${lengths[i]! + 1}: ${over.status} ${over.message}`);
                assert.match(
                    over.message ?? "",
                    new RegExp(
                        `^Warning: User-specified context_length \\(${lengths[i]! + 1}\\) is greater than the derived context_length \\(${lengths[i]}\\)\\.`,
                    ),
                );
            });
        });
    }
});
