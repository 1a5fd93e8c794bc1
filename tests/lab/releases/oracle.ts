import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ensureInstalled, OracleCase, OracleResult, releaseDir, runOracle, sglangVersions } from "../../../sglang-release/oracle";
import { fixtureModelPath } from "../../../lab/sglang/fixtures";

// The real SGLang releases (sglang-release), run as the oracle: every verdict
// below is SGLang's own code deciding, with only the hardware stubbed.

const MODEL = fixtureModelPath("qwen3.6-27b");
const NEXTN_ONE_STEP = [
    "--speculative-algorithm",
    "NEXTN",
    "--speculative-num-steps",
    "1",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "2",
];

/** The field's command line as `npm run render -- --stack kpro5` prints it (Pulumi.kpro5.yaml), on the fixture model. */
const FIELD_ARGV = [
    "--model-path",
    MODEL,
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
    ...NEXTN_ONE_STEP,
    "--mamba-scheduler-strategy",
    "extra_buffer",
];
const FIELD_ENV = { SGLANG_ENABLE_SPEC_V2: "1" };

/** The field's first (failing) start: NEXTN, radix cache on, strategy auto (no_buffer). */
const NO_BUFFER_ARGV = ["--model-path", MODEL, "--tp", "2", ...NEXTN_ONE_STEP, "--mem-fraction-static", "0.88"];

const RADIX_VALUE_ERROR =
    "Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using " +
    "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use " +
    "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.";

const serve = (argv: string[], extra: Partial<OracleCase> = {}): OracleCase => ({ argv, entry: "sglang-serve", ...extra });
const launch = (argv: string[], extra: Partial<OracleCase> = {}): OracleCase => ({ argv, entry: "launch-server", ...extra });

/** Named cases per release, run in one oracle process per release. */
const CASES: Record<string, Record<string, OracleCase>> = {
    "0.5.9": {
        noBuffer: launch(NO_BUFFER_ARGV),
        serveWithModel: serve(["--model-path", MODEL, "--tp-size", "2"]),
    },
    "0.5.10": {
        noBuffer: launch(NO_BUFFER_ARGV),
        dflash: serve(["--model-path", MODEL, "--speculative-algorithm", "DFLASH"]),
        mtp: serve(["--model-path", MODEL, "--speculative-algorithm", "MTP"]),
    },
    "0.5.11": {
        field: serve(FIELD_ARGV, { env: FIELD_ENV }),
        fieldAsLaunchServer: launch(FIELD_ARGV, { env: FIELD_ENV }),
        noBuffer: launch(NO_BUFFER_ARGV),
        noBufferServe: serve(NO_BUFFER_ARGV),
        extraBufferWithoutSpecV2: serve(FIELD_ARGV),
        specV2Off: serve(FIELD_ARGV, { env: { SGLANG_ENABLE_SPEC_V2: "0" } }),
        mtp: serve(["--model-path", MODEL, "--speculative-algorithm", "MTP"]),
        dflash: serve([
            "--model-path",
            MODEL,
            "--tp-size",
            "2",
            "--speculative-algorithm",
            "DFLASH",
            "--speculative-draft-model-path",
            MODEL,
            "--mamba-scheduler-strategy",
            "extra_buffer",
        ]),
        positional: serve(["/models/x"]),
        positionalWithFlags: serve([MODEL, "--tp-size", "2"]),
        ambiguousPrefix: serve(["--model-path", MODEL, "--pp", "2"]),
        smallGpus: serve(["--model-path", MODEL, "--tp-size", "2"], { gpuMemoryMiB: 24564 }),
        largeGpus: serve(["--model-path", MODEL, "--tp-size", "2"], { gpuMemoryMiB: 81920 }),
    },
};

describe("the real SGLang releases (sglang-release oracle)", function () {
    const results: Record<string, Record<string, OracleResult>> = {};
    const result = (version: string, name: string): OracleResult => {
        const r = results[version]?.[name];
        if (!r) throw new Error(`no result for ${version} ${name}`);
        return r;
    };

    before(async function () {
        // A cold install downloads the wheels (about a minute); warm, it is instant.
        this.timeout(600_000);
        await ensureInstalled();
        await Promise.all(
            Object.entries(CASES).map(async ([version, named]) => {
                const names = Object.keys(named);
                const out = await runOracle(
                    version,
                    names.map((n) => named[n]),
                );
                results[version] = Object.fromEntries(names.map((n, i) => [n, out[i]]));
            }),
        );
    });

    it("the field config starts on 0.5.11 (sglang serve hands ServerArgs to the HTTP server)", function () {
        const r = result("0.5.11", "field");
        assert.equal(r.status, "ok", r.stderr);
        assert.equal(r.exitCode, 0);
        assert.equal(r.launcher, "http");
        assert.equal(r.serverArgs?.tp_size, 2);
        assert.equal(r.serverArgs?.mamba_scheduler_strategy, "extra_buffer");
        assert.equal(r.serverArgs?.mem_fraction_static, 0.88);
        assert.equal(r.serverArgs?.served_model_name, "qwen3.6-27b");
    });

    it("the field config keeps the declared 1/1/2 speculative shape and resets max running requests to 48", function () {
        const r = result("0.5.11", "field");
        assert.deepEqual([r.serverArgs?.speculative_num_steps, r.serverArgs?.speculative_eagle_topk, r.serverArgs?.speculative_num_draft_tokens], [1, 1, 2]);
        assert.equal(r.serverArgs?.max_running_requests, 48);
        assert.ok(r.logs.some((l) => l.level === "WARNING" && l.message.startsWith("Max running requests is reset to 48 for speculative decoding.")));
    });

    it("NEXTN shows as EAGLE in serverInfo with a null draft model path for Qwen3_5", function () {
        const info = result("0.5.11", "field").serverInfo;
        assert.equal(info?.speculative_algorithm, "EAGLE");
        assert.equal(info?.speculative_draft_model_path, null);
        assert.equal(info?.version, "0.5.11");
    });

    it("serverInfo marks what only a running scheduler knows as simulated", function () {
        const r = result("0.5.11", "field");
        assert.equal(r.serverInfo?.status, "ready");
        assert.equal(r.serverInfo?.max_total_num_tokens, null);
        assert.ok(r.serverInfoSimulated?.includes("max_total_num_tokens"));
        assert.ok(Array.isArray(r.serverInfo?.internal_states));
    });

    it("--speculative-algorithm MTP is an argparse error, exit 2, from the `sglang serve` parser", function () {
        const r = result("0.5.11", "mtp");
        assert.equal(r.status, "argparse-error");
        assert.equal(r.exitCode, 2);
        assert.match(r.stderr, /^usage: sglang serve /m);
        assert.match(
            r.stderr,
            /^sglang serve: error: argument --speculative-algorithm: invalid choice: 'MTP' \(choose from 'DFLASH', 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM'\)$/m,
        );
    });

    it("NEXTN with no_buffer and the radix cache raises the exact ValueError on 0.5.10 and 0.5.11", function () {
        for (const version of ["0.5.10", "0.5.11"]) {
            const r = result(version, "noBuffer");
            assert.equal(r.status, "exception", `${version}: ${r.status}`);
            assert.equal(r.exitCode, 1);
            assert.equal(r.exceptionType, "ValueError");
            assert.equal(r.message, RADIX_VALUE_ERROR);
            assert.ok(r.stderr.endsWith(`ValueError: ${RADIX_VALUE_ERROR}\n`), r.stderr.slice(-300));
        }
    });

    it("NEXTN with no_buffer is not fatal on 0.5.9: it disables the radix cache and starts", function () {
        const r = result("0.5.9", "noBuffer");
        assert.equal(r.status, "ok", r.stderr);
        assert.equal(r.serverArgs?.disable_radix_cache, true);
        assert.ok(
            r.logs.some(
                (l) =>
                    l.message === "Disabling radix cache since speculative decoding for Qwen3_5ForConditionalGeneration is not supported with radix cache yet.",
            ),
        );
    });

    it("`sglang serve` raises the same radix ValueError as launch_server on 0.5.11", function () {
        assert.equal(result("0.5.11", "noBufferServe").message, RADIX_VALUE_ERROR);
    });

    it("extra_buffer alone starts on 0.5.11: SGLANG_ENABLE_SPEC_V2=1 is not required", function () {
        const r = result("0.5.11", "extraBufferWithoutSpecV2");
        assert.equal(r.status, "ok", r.stderr);
        assert.ok(r.logs.some((l) => l.message === "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."));
    });

    it("SGLANG_ENABLE_SPEC_V2=0 of one case switches 0.5.11 to spec v1 for that case only", function () {
        const spec = (name: string) =>
            result("0.5.11", name)
                .logs.map((l) => l.message)
                .filter((m) => m.startsWith("Spec v"));
        assert.deepEqual(spec("specV2Off"), ["Spec v1 is used for eagle/eagle3/standalone speculative decoding because SGLANG_ENABLE_SPEC_V2=False."]);
        assert.deepEqual(spec("field"), ["Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."]);
    });

    it("DFLASH is accepted by 0.5.11", function () {
        const r = result("0.5.11", "dflash");
        assert.equal(r.status, "ok", r.stderr);
        assert.equal(r.serverArgs?.speculative_algorithm, "DFLASH");
    });

    it("DFLASH is rejected by argparse in 0.5.10", function () {
        const r = result("0.5.10", "dflash");
        assert.equal(r.status, "argparse-error");
        assert.equal(r.exitCode, 2);
        assert.equal(r.message, "argument --speculative-algorithm: invalid choice: 'DFLASH' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')");
    });

    it("0.5.10 has no MTP either", function () {
        assert.equal(result("0.5.10", "mtp").status, "argparse-error");
    });

    it("`sglang serve /models/x` (positional model path) fails: --model-path is required", function () {
        const r = result("0.5.11", "positional");
        assert.equal(r.status, "exception");
        assert.equal(r.exitCode, 1);
        assert.equal(r.exceptionType, "Exception");
        assert.equal(r.message, "Error: --model-path is required. Please provide the path to the model.");
        assert.match(r.stderr, /^Traceback \(most recent call last\):/m);
    });

    it("a positional model path fails even next to other flags", function () {
        assert.equal(result("0.5.11", "positionalWithFlags").message, "Error: --model-path is required. Please provide the path to the model.");
    });

    it("python -m sglang.launch_server warns that sglang serve is the recommended entrypoint (0.5.11)", function () {
        const r = result("0.5.11", "fieldAsLaunchServer");
        assert.equal(r.status, "ok", r.stderr);
        const warning = r.logs.find((l) => l.category === "UserWarning");
        assert.equal(
            warning?.message,
            "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.\n  Example: sglang serve --model-path <model> [options]",
        );
        assert.match(warning?.source ?? "", /\/sglang\/launch_server\.py:\d+$/);
        assert.match(r.stderr, /launch_server\.py:\d+: UserWarning: 'python -m sglang\.launch_server' is still supported/);
    });

    it("an ambiguous option prefix (--pp) is an argparse error", function () {
        const r = result("0.5.11", "ambiguousPrefix");
        assert.equal(r.status, "argparse-error");
        assert.match(r.message ?? "", /^ambiguous option: --pp could match --pp-size, /);
    });

    it("the GPU memory of a case reaches SGLang's memory-based defaults", function () {
        const small = result("0.5.11", "smallGpus").serverArgs;
        const large = result("0.5.11", "largeGpus").serverArgs;
        assert.ok(small && large);
        assert.ok(Number(small.chunked_prefill_size) < Number(large.chunked_prefill_size), `${small.chunked_prefill_size} vs ${large.chunked_prefill_size}`);
        assert.ok(Number(small.cuda_graph_max_bs) < Number(large.cuda_graph_max_bs));
    });

    it("0.5.9's sglang serve needs the diffusion extra (remote_pdb), which a plain install lacks", function () {
        const r = result("0.5.9", "serveWithModel");
        assert.equal(r.status, "exception");
        assert.equal(r.exceptionType, "ModuleNotFoundError");
        assert.equal(r.message, "No module named 'remote_pdb'");
    });

    it("the DEPS pins agree with every release's own == pins", function () {
        const cache = path.join(
            process.env.SGLANG_SERVE_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(process.env.HOME ?? "/root", ".cache"), "sglang-serve"),
            "sglang",
        );
        const norm = (n: string) => n.toLowerCase().replace(/[-_.]+/g, "-");
        const deps = fs
            .readFileSync(path.join(releaseDir(), "DEPS"), "utf8")
            .split("\n")
            .filter((l) => l.trim() && !l.startsWith("#"))
            .map((l) => l.trim().split(/\s+/));
        for (const version of sglangVersions()) {
            const effective = new Map<string, string>();
            for (const scope of ["all", version]) {
                for (const [s, req] of deps) if (s === scope) effective.set(norm(req.split("==")[0]), req.split("==")[1]);
            }
            const site = path.join(cache, version, "site");
            const info = fs.readdirSync(site).find((d) => /^sglang-.*\.dist-info$/.test(d));
            assert.ok(info, `sglang ${version} installed`);
            for (const line of fs.readFileSync(path.join(site, info, "METADATA"), "utf8").split("\n")) {
                const m = /^Requires-Dist: ([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^;\s]+)(.*)$/.exec(line);
                if (!m || m[3].includes("extra ==")) continue;
                const ours = effective.get(norm(m[1]));
                if (ours !== undefined) assert.equal(ours, m[2], `${version} pins ${m[1]}==${m[2]}, DEPS has ${ours}`);
            }
        }
    });
});
