import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { ServiceConfig } from "../../core/config/schema";
import { verdictFailures, verdictNotice, VerdictRequest, verdictRequest } from "../../core/sglang/verdict";
import { renderUnit } from "../../core/unit/systemd-unit";
import { serverConfigFilePath } from "../../core/unit/unit-paths";
import { ServiceSchema } from "../../core/config/schema";
import { fixtureModelPath } from "../../lab/sglang/fixtures";
import { boxExpectations } from "../../core/box/box-facts";
import type { ServiceProps } from "../../providers/sglang-server/props";
import { previewVerdict, pruneVerdicts, releaseVerdict, verdictFile, VERDICTS_KEPT, VerdictUnavailable } from "../../providers/sglang-server/verdict";
import { ensureInstalled, releaseCacheRoot } from "../../sglang-release/oracle";
import { fieldConfig } from "../core/fixtures";

// Issue 18 item 1: SGLang's own verdict at preview. The unit the stack would
// write goes through the declared release's real code (sglang-release/,
// hardware stubbed) with the box's config.json: what the stack's own rules do
// not model (check_server_args, ServerArgs' cross-field checks) is refused with
// SGLang's text under the key it is about; a verdict is kept by its request.

const QWEN_CONFIG = fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8");

function service(edit: (raw: Record<string, unknown>) => void = () => undefined): ServiceConfig {
    const raw = structuredClone(fieldConfig().service) as unknown as Record<string, unknown>;
    edit(raw);
    return ServiceSchema.parse(raw);
}

function request(s: ServiceConfig): VerdictRequest {
    const unitText = renderUnit(s, { hasSecrets: true, hasSecretEnvironment: false, owner: { project: "sglang-serve", stack: "test" } });
    assert.ok(unitText.includes(serverConfigFilePath(s.name)), "the unit carries the API key's --config file, which the verdict leaves out");
    const r = verdictRequest({
        version: s.sglangVersion,
        unitText,
        gpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
        modelConfigJson: QWEN_CONFIG,
    });
    assert.ok(!("unavailable" in r), JSON.stringify(r));
    return r;
}

/** A cache root that links the installed releases and has no verdicts of its own (verdicts are kept under the release cache). */
function linkedCache(): string {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), "verdict-cache-"));
    const installed = releaseCacheRoot();
    fs.mkdirSync(path.join(cache, "sglang"));
    for (const entry of fs.readdirSync(installed)) {
        if (entry !== "verdicts") fs.symlinkSync(path.join(installed, entry), path.join(cache, "sglang", entry));
    }
    return cache;
}

describe("SGLang's own verdict at preview (the declared release's code, run here)", function () {
    this.timeout(300_000);
    /** The file's cache: the verdicts its tests ask for, asked together in before(). */
    let shared: string;
    const saved = process.env.SGLANG_SERVE_CACHE;

    const fieldServer = () => service();
    const exportMetrics = () => service((raw) => (raw.extraArgs = ["--enable-metrics", "--export-metrics-to-file"]));
    const invalidKvDtype = () => service((raw) => (raw.extraArgs = ["--kv-cache-dtype=fp9"]));
    const colonName = () => service((raw) => ((raw.model as Record<string, unknown>).servedName = "qwen3:27b"));
    const longContext = () => service((raw) => (raw.extraArgs = ["--context-length", "300000"]));
    const pipelineWithSpeculation = () =>
        service((raw) => {
            raw.tensorParallelSize = 1;
            raw.extraArgs = ["--pp-size", "2", "--enable-metrics", "--disable-overlap-schedule"];
        });

    /** 0.5.23 with the Hopper-only trtllm_mha backend, previewed on a box with the GPU `gpuName`. */
    const trtllmOn = (gpuName: string, memoryMiB: number, gpuCapability: string) => {
        const s = service((raw) => {
            raw.sglangVersion = "0.5.23";
            raw.extraArgs = ["--attention-backend", "trtllm_mha"];
        });
        const unitText = renderUnit(s, { hasSecrets: false, hasSecretEnvironment: false, owner: { project: "p", stack: "s" } });
        const props = {
            unitName: "sglang-qwen.service",
            unitText,
            gpuIndices: [0, 1],
            gpuName,
            gpuCapability,
            expectBox: boxExpectations(s, memoryMiB),
        } as unknown as ServiceProps;
        const facts = { sglangVersion: "0.5.23", model: "present" as const, configJson: QWEN_CONFIG };
        return previewVerdict(props, facts, undefined, { notices: false });
    };
    const H100 = ["NVIDIA H100 80GB HBM3", 81559, "9.0"] as const;
    const A6000 = ["NVIDIA RTX A6000", 49140, "8.6"] as const;
    /** A capability not known (a state from before, an unknown in preview) is not sent: the stubs' own default (8.6) judges. */
    const H100_UNKNOWN_CAPABILITY = ["NVIDIA H100 80GB HBM3", 81559, "04da6b54-80e4-46f7-96ec-b56ff0331ba9"] as const;

    const MOE_CONFIG = fs.readFileSync(path.join(fixtureModelPath("qwen3-30b-a3b"), "config.json"), "utf8");
    /** Qwen3-30B-A3B (61 GB in BF16) alone on one 24 GB RTX 4090. */
    const moeService = (version: string, edit: (raw: Record<string, unknown>) => void = () => undefined) =>
        service((raw) => {
            raw.sglangVersion = version;
            raw.model = { path: "/models/Qwen3-30B-A3B", architecture: "Qwen3MoeForCausalLM", weightsGB: 61, servedName: "qwen3-30b-a3b" };
            raw.tensorParallelSize = 1;
            raw.environment = {};
            delete raw.speculative;
            delete raw.mambaSchedulerStrategy;
            delete raw.memFractionStatic;
            edit(raw);
        });
    const moePreview = (s: ServiceConfig) => {
        const unitText = renderUnit(s, { hasSecrets: false, hasSecretEnvironment: false, owner: { project: "p", stack: "s" } });
        const props = {
            unitName: "sglang-qwen.service",
            unitText,
            gpuIndices: [0],
            gpuName: "NVIDIA GeForce RTX 4090",
            gpuCapability: "8.9",
            expectBox: boxExpectations(s, 24564),
        } as unknown as ServiceProps;
        const facts = { sglangVersion: s.sglangVersion, model: "present" as const, configJson: MOE_CONFIG };
        return previewVerdict(props, facts, undefined, { notices: false });
    };
    const weights18 = (raw: Record<string, unknown>) => ((raw.model as Record<string, unknown>).weightsGB = 18);
    /** KTransformers keeping `gpuExperts` of each layer's experts on the GPU. */
    const kt = (gpuExperts: number) => (raw: Record<string, unknown>) =>
        (raw.extraArgs = ["--kt-weight-path", "/models/Qwen3-30B-A3B-amx", "--kt-num-gpu-experts", String(gpuExperts), "--kt-cpuinfer", "16"]);
    const offload = (gb: number) => (raw: Record<string, unknown>) => (raw.extraArgs = ["--cpu-offload-gb", String(gb)]);

    before(async function () {
        await ensureInstalled();
        shared = linkedCache();
        process.env.SGLANG_SERVE_CACHE = shared;
        // Asked together, each release's verdicts come from one run of its code (sglang-release/oracle-process.ts).
        // Each test then asks again and reads its verdict back from this cache, as the next preview does.
        await Promise.all([
            ...[fieldServer(), exportMetrics(), invalidKvDtype(), colonName(), longContext(), pipelineWithSpeculation()].map((s) =>
                releaseVerdict(request(s), "[test]"),
            ),
            trtllmOn(...H100),
            trtllmOn(...A6000),
            trtllmOn(...H100_UNKNOWN_CAPABILITY),
            ...[
                moeService("0.5.23", weights18),
                moeService("0.5.11", weights18),
                moeService("0.5.23", (raw) => (weights18(raw), (raw.memFractionStatic = 0.85))),
                moeService("0.5.23", kt(8)),
                moeService("0.5.23", kt(128)),
                moeService("0.5.23", offload(40)),
                moeService("0.5.23", offload(45)),
            ].map(moePreview),
        ]);
    });

    after(function () {
        if (saved === undefined) delete process.env.SGLANG_SERVE_CACHE;
        else process.env.SGLANG_SERVE_CACHE = saved;
        fs.rmSync(shared, { recursive: true, force: true });
    });

    it("accepts the field's server on 0.5.11 and says what it will run (48 running requests with speculative decoding)", async function () {
        const req = request(fieldServer());
        assert.ok(!req.argv.includes("--config"), "no --config: the API key's file is not here");
        const verdict = await releaseVerdict(req, "[test]");
        assert.equal(verdict.status, "ok", verdict.error);
        assert.deepEqual(verdictFailures(verdict, req, []), []);
        assert.match(verdictNotice(verdict, "0.5.11") ?? "", /Max running requests is reset to 48 for speculative decoding/);
        assert.ok(!verdict.warnings.some((w) => w.includes(os.tmpdir())), "no text names the local stand-in folder");
    });

    it("refuses what only check_server_args says, under the extraArgs element it is about", async function () {
        const s = exportMetrics();
        const req = request(s);
        const verdict = await releaseVerdict(req, "[test]");
        assert.equal(verdict.status, "refused");
        const [failure] = verdictFailures(verdict, req, s.extraArgs);
        assert.equal(failure!.property, "service.extraArgs[1]");
        assert.match(
            failure!.reason,
            /SGLang 0\.5\.11's own code refuses .*ValueError: --export-metrics-to-file-dir is required when --export-metrics-to-file is enabled; fix: change service\.extraArgs\[1\]/,
        );
    });

    it("files argparse's refusal and a ServerArgs assertion under the key SGLang names", async function () {
        const choice = invalidKvDtype();
        const choiceReq = request(choice);
        const [badChoice] = verdictFailures(await releaseVerdict(choiceReq, "[test]"), choiceReq, choice.extraArgs);
        assert.equal(badChoice!.property, "service.extraArgs[0]");
        assert.match(badChoice!.reason, /sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp9'/);

        const colon = colonName();
        const colonReq = request(colon);
        const [named] = verdictFailures(await releaseVerdict(colonReq, "[test]"), colonReq, []);
        assert.equal(named!.property, "service.model.servedName");
        assert.match(named!.reason, /AssertionError: served_model_name cannot contain a colon/);
    });

    it("judges with the box's config.json: a context length above the model's is SGLang's own ValueError", async function () {
        const s = longContext();
        const req = request(s);
        const [failure] = verdictFailures(await releaseVerdict(req, "[test]"), req, s.extraArgs);
        assert.equal(failure!.property, "service.extraArgs[0]");
        assert.match(failure!.reason, /User-specified context_length \(300000\) is greater than the derived context_length \(262144\)/);
        assert.ok(!failure!.reason.includes(os.tmpdir()), failure!.reason);
    });

    it("judges on the GPUs' compute capability read on the box: 0.5.23 accepts the Hopper-only trtllm_mha backend on an H100 (9.0) and refuses it on an A6000 (8.6) (issue 37)", async function () {
        assert.deepEqual(await trtllmOn(...H100), []);
        const refused = await trtllmOn(...A6000);
        // The message names no flag: it is filed under the setting its check reads (attention_backends_of: --attention-backend).
        assert.deepEqual(
            refused.map((f) => f.property),
            ["service.extraArgs[0]"],
        );
        assert.match(refused[0]!.reason, /ValueError: TRTLLM MHA backend for prefill requires Hopper \(SM90\), Blackwell \(SM100\), or SM120 GPUs/);
        // A capability not known (a state from before, an unknown in preview) is not sent: the stubs' own default (8.6) judges.
        const unknown = await trtllmOn(...H100_UNKNOWN_CAPABILITY);
        assert.match(unknown[0]?.reason ?? "", /requires Hopper/);
    });

    it("files a refusal whose message names no flag under every setting the check reads, as the release's source has it: pipeline parallelism with speculative decoding (issue 37)", async function () {
        const req = request(pipelineWithSpeculation());
        const verdict = await releaseVerdict(req, "[test]");
        assert.equal(
            verdict.error,
            "AssertionError: Pipeline parallelism is not compatible with overlap schedule, speculative decoding (at `self.disable_overlap_schedule and self.speculative_algorithm is None`)",
        );
        // 0.5.11's check_server_args: `if self.pp_size > 1: assert self.disable_overlap_schedule and self.speculative_algorithm is None`.
        assert.deepEqual(verdict.reads, ["disable_overlap_schedule", "pp_size", "speculative_algorithm"]);
        assert.deepEqual(
            verdictFailures(verdict, req, ["--pp-size", "2", "--enable-metrics", "--disable-overlap-schedule"]).map((f) => f.property),
            ["service.extraArgs[3]", "service.extraArgs[0]", "service.speculative.algorithm"],
        );
    });

    describe("the fit with the fraction the release resolves and what stays in CPU memory (issue 37)", () => {
        it("refuses 18 GB of weights on a 24 GB card at the fraction 0.5.23 picks itself (0.704), with the arithmetic; 0.5.11's pick (0.833) and a declared 0.85 hold them", async function () {
            const [refused, ...more] = await moePreview(moeService("0.5.23", weights18));
            assert.deepEqual(more, []);
            assert.equal(refused!.property, "service.tensorParallelSize");
            assert.match(
                refused!.reason,
                /^service\.model\.weightsGB 18 GB over tp 1 does not fit the static memory pool SGLang 0\.5\.23 makes: each GPU needs 18\.8 GiB .* but --mem-fraction-static 0\.704 \(SGLang 0\.5\.23's own pick for this GPU, memFractionStatic being unset\) of one 24\.0 GiB GPU is 16\.9 GiB: it cannot start/,
            );
            assert.deepEqual(await moePreview(moeService("0.5.11", weights18)), []);
            assert.deepEqual(await moePreview(moeService("0.5.23", (raw) => (weights18(raw), (raw.memFractionStatic = 0.85)))), []);
        });

        it("accepts the 61 GB MoE on the 24 GB card with KTransformers keeping its experts on the CPU, as 0.5.23 starts it; all 128 on the GPU are refused with the arithmetic", async function () {
            assert.deepEqual(await moePreview(moeService("0.5.23", kt(8))), []);
            const [refused] = await moePreview(moeService("0.5.23", kt(128)));
            assert.match(refused!.reason, /keeps 128 of each layer's 128 on the GPU, so 0\.0 GB of them stay in CPU memory/);
            assert.match(refused!.reason, /--mem-fraction-static 0\.704/);
        });

        it("refuses --cpu-offload-gb 40 of the 61 GB MoE at 0.5.23's fraction, naming the offload, and accepts 45", async function () {
            const [refused] = await moePreview(moeService("0.5.23", offload(40)));
            assert.match(
                refused!.reason,
                /each GPU needs 18\.8 GiB \(weights \(40 GiB per GPU offloaded to CPU memory \(--cpu-offload-gb\)\) plus the 2 GiB reserve/,
            );
            assert.deepEqual(await moePreview(moeService("0.5.23", offload(45))), []);
        });
    });

    describe("keeping verdicts, and a release that cannot run", () => {
        let cache: string;

        beforeEach(function () {
            // Each test its own verdict folder: a fresh cache root that links the installed releases.
            cache = linkedCache();
            process.env.SGLANG_SERVE_CACHE = cache;
        });

        afterEach(function () {
            process.env.SGLANG_SERVE_CACHE = shared;
            fs.rmSync(cache, { recursive: true, force: true });
        });

        it("keeps a verdict by its request: the second preview of the same server reads it back", async function () {
            const req = request(service());
            const first = await releaseVerdict(req, "[test]");
            const file = verdictFile(req);
            assert.equal(path.dirname(file), path.join(cache, "sglang", "verdicts"));
            assert.deepEqual(JSON.parse(fs.readFileSync(file, "utf8")), first);
            // What the file says is what the next preview gets (nothing runs): a marker proves it came from the file.
            fs.writeFileSync(file, JSON.stringify({ ...first, warnings: ["kept"] }));
            const again = await releaseVerdict(req, "[test]");
            assert.deepEqual(again.warnings, ["kept"]);
            assert.equal(again.kept, true);
            const other = request(service((raw) => (raw.memFractionStatic = 0.85)));
            assert.notEqual(verdictFile(other), file);
        });

        it("keeps at most VERDICTS_KEPT verdicts: a new one removes the least recently used, and reading one renews it", async function () {
            const req = request(service((raw) => (raw.memFractionStatic = 0.83)));
            const file = verdictFile(req);
            const dir = path.dirname(file);
            fs.mkdirSync(dir, { recursive: true });
            const old = new Date("2026-01-01T00:00:00Z");
            const stale = Array.from({ length: VERDICTS_KEPT + 3 }, (_, i) => path.join(dir, `stale-${i}.json`));
            for (const f of stale) {
                fs.writeFileSync(f, "{}");
                fs.utimesSync(f, old, old);
            }
            fs.utimesSync(stale[0]!, new Date("2026-06-01T00:00:00Z"), new Date("2026-06-01T00:00:00Z"));
            const first = await releaseVerdict(req, "[test]");
            assert.equal(first.kept, undefined, "run, not read back");
            const left = fs.readdirSync(dir).filter((f) => f.endsWith(".json"));
            assert.equal(left.length, VERDICTS_KEPT);
            assert.ok(left.includes(path.basename(file)), "the new verdict stays");
            assert.ok(left.includes("stale-0.json"), "the most recently used of the old ones stays");
            // A read renews it: pruned down to one, the folder keeps the verdict just read.
            await releaseVerdict(req, "[test]");
            assert.equal(pruneVerdicts(dir, 1), VERDICTS_KEPT - 1);
            assert.deepEqual(
                fs.readdirSync(dir).filter((f) => f.endsWith(".json")),
                [path.basename(file)],
            );
        });

        it("a release not cached and not installable fails saying how to fill the cache", async function () {
            const req = { ...request(service()), version: "0.5.99" };
            const saved = { index: process.env.PIP_INDEX_URL, retries: process.env.PIP_RETRIES, timeout: process.env.PIP_TIMEOUT };
            // Loopback, nothing listening: the index cannot be reached.
            Object.assign(process.env, { PIP_INDEX_URL: "http://127.0.0.1:9/simple", PIP_RETRIES: "0", PIP_TIMEOUT: "2" });
            try {
                await assert.rejects(releaseVerdict(req, "[test]"), (e: Error) => {
                    assert.ok(e instanceof VerdictUnavailable);
                    assert.match(
                        e.message,
                        /SGLang 0\.5\.99's own code is not in .* and could not be installed .*: run `bash .*install\.sh 0\.5\.99` where the package index is reachable/,
                    );
                    return true;
                });
            } finally {
                for (const [k, v] of [
                    ["PIP_INDEX_URL", saved.index],
                    ["PIP_RETRIES", saved.retries],
                    ["PIP_TIMEOUT", saved.timeout],
                ] as const) {
                    if (v === undefined) delete process.env[k];
                    else process.env[k] = v;
                }
            }
        });

        it("a release whose code does not run here is an info line, and the stack's own rules judge alone", async function () {
            // A release in the cache whose config layer fails to import (as 0.5.17's needs xgrammar, which is not carried).
            const site = path.join(cache, "sglang", "9.9.9", "site");
            fs.mkdirSync(path.join(site, "sglang"), { recursive: true });
            const init = "import xgrammar_not_carried\n";
            fs.writeFileSync(path.join(site, "sglang", "__init__.py"), init);
            // As an install leaves it: the module in its wheel's RECORD, which the check before use holds it to (issue 34).
            fs.mkdirSync(path.join(site, "sglang-9.9.9.dist-info"));
            const metadata = "Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n";
            fs.writeFileSync(path.join(site, "sglang-9.9.9.dist-info", "METADATA"), metadata);
            const line = (file: string, text: string) => `${file},sha256=${createHash("sha256").update(text).digest("base64url")},${text.length}\n`;
            fs.writeFileSync(
                path.join(site, "sglang-9.9.9.dist-info", "RECORD"),
                line("sglang/__init__.py", init) + line("sglang-9.9.9.dist-info/METADATA", metadata) + "sglang-9.9.9.dist-info/RECORD,,\n",
            );
            fs.writeFileSync(path.join(site, ".sglang-serve-key"), "test\n");
            const s = service((raw) => (raw.sglangVersion = "9.9.9"));
            const unitText = renderUnit(s, { hasSecrets: false, hasSecretEnvironment: false, owner: { project: "p", stack: "s" } });
            const props = {
                unitName: "sglang-qwen.service",
                unitText,
                gpuIndices: [0, 1],
                gpuName: "NVIDIA RTX A6000",
                expectBox: boxExpectations(s, 49140),
            } as unknown as ServiceProps;
            const facts = { sglangVersion: "9.9.9", model: "present" as const, configJson: QWEN_CONFIG };
            const said: string[] = [];
            const log = console.log;
            console.log = (line: string) => said.push(line);
            try {
                assert.deepEqual(await previewVerdict(props, facts, undefined), []);
            } finally {
                console.log = log;
            }
            assert.equal(said.length, 1, said.join("\n"));
            assert.match(
                said[0]!,
                /^\[sglang-qwen\.service\] SGLang 9\.9\.9's own code could not run here \(ModuleNotFoundError: No module named 'xgrammar_not_carried'\); the stack's own rules judged this server$/,
            );
        });
    });

    it("waits, with the reason, when the box's config.json was not read", function () {
        const s = service();
        const unitText = renderUnit(s, { hasSecrets: false, hasSecretEnvironment: false, owner: { project: "p", stack: "s" } });
        const r = verdictRequest({ version: "0.5.11", unitText, gpus: { count: 2 } });
        assert.ok("unavailable" in r);
        assert.match(r.unavailable, /\/models\/Qwen3\.6-27B\/config\.json was not read/);
    });
});
