import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { Deployment, expectExit } from "../../lab/deployment";
import * as yaml from "js-yaml";

type StackFile = { config: Record<string, Record<string, unknown>> };

function fieldConfig(stack: string): Record<string, Record<string, unknown>> {
    const text = fs.readFileSync(path.join(__dirname, "..", "..", `Pulumi.${stack}.yaml`), "utf8");
    return structuredClone((yaml.load(text) as StackFile).config);
}

describe("preview of the field stacks with the real engine (no host contacted)", function () {
    this.timeout(180_000);
    const deployments: Deployment[] = [];
    after(() => deployments.forEach((d) => d.cleanup()));

    /** The field stacks require an API key: a deploy's environment gives it (`apiKey`); null: a run without it, as a pull request's preview. */
    async function preview(stack: string, config: Record<string, unknown>, apiKey: string | null = "field-preview-api-key-0123456789") {
        const d = await Deployment.create(stack, config);
        deployments.push(d);
        if (apiKey !== null) d.giveApiKey(apiKey);
        return d.preview();
    }

    it("runs under a plain `pulumi` with the official launcher, and runs the edited source on the next run", async () => {
        const d = await Deployment.create("kpro5", fieldConfig("kpro5"));
        deployments.push(d);
        expectExit(await d.plainPulumi(["stack", "init"]), 0, "stack init");
        d.giveApiKey("plain-pulumi-test-key-0123456789");
        const first = await d.plainPulumi(["preview"]);
        expectExit(first, 0, "plain preview kpro5");
        for (const type of ["GpuHost", "LxcContainer", "SglangService", "ReadinessCheck"]) {
            assert.match(first.stdout, new RegExp(`sglang-serve:index:${type}\\b`), `${type} missing`);
        }
        fs.appendFileSync(path.join(d.dir, "index.ts"), 'export const editedInThisCheckout = "edit-" + (2 * 21);\n');
        const second = await d.plainPulumi(["preview"]);
        expectExit(second, 0, "plain preview after an edit");
        assert.match(second.stdout, /editedInThisCheckout\s*:\s*"edit-42"/);
    });

    it("fails a new stack's first preview (stack init, no config yet) with the stack's own message, not the SDK's TypeError", async () => {
        const d = await Deployment.create("newbox", {});
        deployments.push(d);
        // docs/operator-guide.md "Adding a host or a stack", before the stack file is filled in: no Pulumi.newbox.yaml yet.
        fs.rmSync(path.join(d.dir, "Pulumi.newbox.yaml"));
        expectExit(await d.plainPulumi(["stack", "init"]), 0, "stack init newbox");
        const r = await d.plainPulumi(["preview"]);
        assert.notEqual(r.code, 0, r.output);
        assert.doesNotMatch(r.output, /TypeError|Cannot convert undefined or null to object/);
        assert.match(r.output, /fix these keys in Pulumi\.newbox\.yaml/);
        assert.match(r.output, /sglang-serve:host = \(not set\)/);
        assert.match(r.output, /sglang-serve:service = \(not set\)/);
        assert.match(r.output, /Start from an example: copy the config: section of Pulumi\.kpro5\.yaml/);
    });

    it("takes a number set with `pulumi config set --path` (stored as a string)", async () => {
        const d = await Deployment.create("kpro5", fieldConfig("kpro5"));
        deployments.push(d);
        d.giveApiKey("plain-pulumi-test-key-0123456789");
        const set = await d.run(["config", "set", "--path", "sglang-serve:service.memFractionStatic", "0.87"]);
        expectExit(set, 0, "config set --path");
        const stored = await d.run(["config", "get", "--path", "sglang-serve:service.memFractionStatic", "--json"]);
        assert.match(stored.stdout, /"value": "0\.87"/, "the CLI stores --path values as strings");
        const r = await d.preview();
        expectExit(r, 0, "preview with the string 0.87");
        assert.match(r.stdout, /--mem-fraction-static.*0\.87/);
    });

    it("previews ct129 (direct topology) without a container resource", async () => {
        const r = await preview("ct129", fieldConfig("ct129"));
        expectExit(r, 0, "preview ct129");
        assert.match(r.stdout, /sglang-serve:index:SglangService/);
        assert.doesNotMatch(r.stdout, /sglang-serve:index:LxcContainer/);
    });

    it("fails naming the key when extra_buffer is removed (SGLang's startup ValueError)", async () => {
        const config = fieldConfig("kpro5");
        delete (config["sglang-serve:service"] as Record<string, unknown>).mambaSchedulerStrategy;
        const r = await preview("kpro5", config);
        assert.notEqual(r.code, 0);
        assert.match(r.output, /service\.mambaSchedulerStrategy/);
        assert.match(r.output, /is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer/);
    });

    // The rows of the table, judged as SGLang 0.5.11 judges them (tests/lab/sglang-differential.test.ts holds the rules to the release).
    type Service = Record<string, unknown> & { speculative?: Record<string, unknown>; environment: Record<string, string>; model: Record<string, unknown> };
    const rows: Array<{ row: string; edit: (s: Service) => void; fails?: { key: string; text: RegExp } }> = [
        { row: "extra_buffer without SGLANG_ENABLE_SPEC_V2 starts (0.5.11 defaults it on)", edit: (s) => delete s.environment.SGLANG_ENABLE_SPEC_V2 },
        {
            row: "DFLASH with a drafter, steps 1, topk 1, draft tokens 16 starts",
            edit: (s) => (s.speculative = { algorithm: "DFLASH", draftModelPath: "/models/dflash-drafter", numSteps: 1, eagleTopk: 1, numDraftTokens: 16 }),
        },
        {
            row: "steps 3 and topk 1 without draft tokens starts (SGLang sets 4)",
            edit: (s) => (s.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1 }),
        },
        {
            row: "extra_buffer with disableRadixCache fails (ValueError, 0.5.10+)",
            edit: (s) => (s.disableRadixCache = true),
            fails: { key: "service.mambaSchedulerStrategy", text: /mamba extra_buffer is not compatible with --disable-radix-cache/ },
        },
        {
            row: "NemotronH with extra_buffer and speculation fails (AssertionError)",
            edit: (s) => (s.model.architecture = "NemotronHForCausalLM"),
            fails: { key: "service.mambaSchedulerStrategy", text: /AssertionError: mamba extra_buffer is not supported for NemotronHForCausalLM model/ },
        },
        {
            row: "Lfm2 with speculation and the radix cache fails (ValueError)",
            edit: (s) => {
                s.model.architecture = "Lfm2ForCausalLM";
                delete s.mambaSchedulerStrategy;
            },
            fails: { key: "service.mambaSchedulerStrategy", text: /Speculative decoding for Lfm2ForCausalLM is not compatible with radix cache/ },
        },
        {
            row: "topk 2 with SGLANG_ENABLE_SPEC_V2 on starts on 0.5.11 (spec v1 fallback)",
            edit: (s) => (s.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 2, numDraftTokens: 6 }),
        },
    ];
    for (const { row, edit, fails } of rows) {
        it(`judges as SGLang 0.5.11 does: ${row}`, async () => {
            const config = fieldConfig("kpro5");
            edit(config["sglang-serve:service"] as Service);
            const r = await preview("kpro5", config);
            if (!fails) {
                expectExit(r, 0, row);
                return;
            }
            assert.notEqual(r.code, 0, r.output);
            assert.match(r.output, new RegExp(`sglang-serve:${fails.key.replace(/\./g, "\\.")} =`));
            assert.match(r.output, fails.text);
        });
    }

    it("fails naming the allowed values when the algorithm is MTP", async () => {
        const config = fieldConfig("kpro5");
        (config["sglang-serve:service"] as { speculative: { algorithm: string } }).speculative.algorithm = "MTP";
        const r = await preview("kpro5", config);
        assert.notEqual(r.code, 0);
        assert.match(r.output, /service\.speculative\.algorithm/);
        for (const allowed of ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]) {
            assert.match(r.output, new RegExp(`\\b${allowed}\\b`));
        }
    });

    // One engine run for two facts: the tree, and a preview without the key (the key changes no resource).
    it("lists the GpuHost, LxcContainer, SglangService and ReadinessCheck tree for kpro5, previewed without the key's value, as a pull request's job does: the config declares it, the deploy gives it", async () => {
        const r = await preview("kpro5", fieldConfig("kpro5"), null);
        expectExit(r, 0, "preview kpro5 without SGLANG_SERVE_API_KEY");
        for (const type of [
            "sglang-serve:index:GpuHost",
            "sglang-serve:index:LxcContainer",
            "sglang-serve:index:SglangService",
            "sglang-serve:index:ReadinessCheck",
        ]) {
            assert.match(r.stdout, new RegExp(type.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")), `${type} missing`);
        }
    });

    it("fails kpro5 given a short SGLANG_SERVE_API_KEY, naming the key's rule as the deploy would, never the key (issue 34, finding 9)", async () => {
        const r = await preview("kpro5", fieldConfig("kpro5"), "Zq9short");
        assert.notEqual(r.code, 0, r.output);
        assert.match(r.output, /the deploy's secrets: SGLANG_SERVE_API_KEY is 8 characters long but must be 16-256: set a longer key/);
        assert.ok(!r.output.includes("Zq9short"));
    });

    it("fails kpro5 with DATABASE_URL: postgres://u:pw@h/db in the plain environment, pointing at secretEnvironment, never printing it (issue 34, finding 7)", async () => {
        const config = fieldConfig("kpro5");
        (config["sglang-serve:service"] as { environment: Record<string, string> }).environment.DATABASE_URL = "postgres://u:Pw0rdXyz@h/db";
        const r = await preview("kpro5", config, null);
        assert.notEqual(r.code, 0, r.output);
        assert.match(r.output, /sglang-serve:service\.environment\.DATABASE_URL = "\[secret\]"/);
        assert.match(r.output, /its value looks like a URL with credentials .*move the name to sglang-serve:service\.secretEnvironment/);
        assert.ok(!r.output.includes("Pw0rdXyz"));
    });

    it("fails kpro5 when it requires no API key, naming requireApiKey, listenHost 0.0.0.0 and allowUnauthenticated", async () => {
        const config = fieldConfig("kpro5");
        delete (config["sglang-serve:service"] as Record<string, unknown>).requireApiKey;
        const r = await preview("kpro5", config, null);
        assert.notEqual(r.code, 0);
        assert.match(r.output, /sglang-serve:service\.requireApiKey = false/);
        assert.match(r.output, /service\.listenHost is 0\.0\.0\.0/);
        assert.match(r.output, /service\.allowUnauthenticated: true/);
    });

    it("previews kpro5 without an API key when service.allowUnauthenticated is true, with a warning", async () => {
        const config = fieldConfig("kpro5");
        (config["sglang-serve:service"] as Record<string, unknown>).allowUnauthenticated = true;
        delete (config["sglang-serve:service"] as Record<string, unknown>).requireApiKey;
        const r = await preview("kpro5", config, null);
        expectExit(r, 0, "preview kpro5 with allowUnauthenticated");
        assert.match(r.output, /without an API key \(sglang-serve:service\.allowUnauthenticated: true\)/);
    });

    it("refuses an API key stored as Pulumi config (an older version's way), naming the way out, never printing it", async () => {
        const d = await Deployment.create("kpro5", fieldConfig("kpro5"));
        deployments.push(d);
        const key = "older-version-api-key-0123456789";
        await d.setSecret("sglang-serve:apiKey", key);
        const r = await d.preview();
        assert.notEqual(r.code, 0);
        assert.match(r.output, /sglang-serve:apiKey = \[secret\]/);
        assert.match(r.output, /pulumi config rm sglang-serve:apiKey/);
        assert.ok(!r.output.includes(key));
    });
});
