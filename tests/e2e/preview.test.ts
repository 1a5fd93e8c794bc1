/**
 * Previews of the field stacks with the real engine, contacting no host: one
 * engine run per output path (7: three plain `pulumi` previews, four through
 * scripts/pulumi.sh). The per-row judgements (kpro5 with one edit, judged as
 * SGLang 0.5.11 judges it) are the program's config validation: every row is
 * judged under Pulumi mocks (tests/components/stack.test.ts) and, for those
 * that start, by the SglangService's check (tests/providers/sglang-service.test.ts);
 * here one row that starts and one that fails go through the engine, and the
 * program's refusals share one preview, since it names every bad key at once.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { Deployment, EngineResult, expectExit } from "../../lab/deployment";
import { RawServiceBlock, refusedKeyPattern, sglangRow } from "../core/fixtures";
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

    /** The field stacks require an API key: a deploy's environment gives it (`apiKey`). */
    async function preview(stack: string, config: Record<string, unknown>, apiKey = "field-preview-api-key-0123456789") {
        const d = await Deployment.create(stack, config);
        deployments.push(d);
        d.giveApiKey(apiKey);
        return d.preview();
    }

    // One plain run for two facts: the tree, and a preview without the key's value (the key changes no resource).
    it("runs under a plain `pulumi` with the official launcher, listing the GpuHost, LxcContainer, SglangService and ReadinessCheck tree for kpro5 without the key's value (as a pull request's job does: the config declares it, the deploy gives it), and runs the edited source on the next run", async () => {
        const d = await Deployment.create("kpro5", fieldConfig("kpro5"));
        deployments.push(d);
        expectExit(await d.plainPulumi(["stack", "init"]), 0, "stack init");
        const first = await d.plainPulumi(["preview"]);
        expectExit(first, 0, "plain preview kpro5 without SGLANG_SERVE_API_KEY");
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

    // One accepted preview for three facts: a number set with `config set --path`, the warning for an open endpoint, and a row
    // SGLang 0.5.11 starts (every row is judged under mocks, tests/components/stack.test.ts, and by the check, tests/providers).
    it("previews kpro5 without an API key when service.allowUnauthenticated is true, with a warning; takes a number set with `pulumi config set --path` (stored as a string); judges as SGLang 0.5.11 does: DFLASH with a drafter starts", async () => {
        const config = fieldConfig("kpro5");
        const service = config["sglang-serve:service"] as RawServiceBlock;
        service.allowUnauthenticated = true;
        delete service.requireApiKey;
        const row = sglangRow("DFLASH with a drafter, steps 1, topk 1, draft tokens 16 starts");
        row.edit(service);
        const d = await Deployment.create("kpro5", config);
        deployments.push(d);
        const set = await d.run(["config", "set", "--path", "sglang-serve:service.memFractionStatic", "0.87"]);
        expectExit(set, 0, "config set --path");
        const stored = await d.run(["config", "get", "--path", "sglang-serve:service.memFractionStatic", "--json"]);
        assert.match(stored.stdout, /"value": "0\.87"/, "the CLI stores --path values as strings");
        const r = await d.preview();
        expectExit(r, 0, `preview kpro5 with allowUnauthenticated, the string 0.87 and ${row.row}`);
        assert.match(r.stdout, /--mem-fraction-static.*0\.87/);
        assert.match(r.output, /without an API key \(sglang-serve:service\.allowUnauthenticated: true\)/);
    });

    it("previews ct129 (direct topology) without a container resource", async () => {
        const r = await preview("ct129", fieldConfig("ct129"));
        expectExit(r, 0, "preview ct129");
        assert.match(r.stdout, /sglang-serve:index:SglangService/);
        assert.doesNotMatch(r.stdout, /sglang-serve:index:LxcContainer/);
    });

    it("fails kpro5 given a short SGLANG_SERVE_API_KEY, naming the key's rule as the deploy would, never the key (issue 34, finding 9)", async () => {
        const r = await preview("kpro5", fieldConfig("kpro5"), "Zq9short");
        assert.notEqual(r.code, 0, r.output);
        assert.match(r.output, /the deploy's secrets: SGLANG_SERVE_API_KEY is 8 characters long but must be 16-256: set a longer key/);
        assert.ok(!r.output.includes("Zq9short"));
    });

    // The program validates the config once and reports every problem (core/config/config.ts): one preview for five refusals,
    // each asserted on its own numbered issue, so that none is found in another's text. The other rows SGLang refuses are
    // judged under mocks (tests/components/stack.test.ts).
    describe("kpro5 with five bad keys: one preview, every refusal named, no secret printed", () => {
        let r: EngineResult;
        const apiKey = "older-version-api-key-0123456789";
        const row = sglangRow("extra_buffer with disableRadixCache fails (ValueError, 0.5.10+)");
        before(async () => {
            const config = fieldConfig("kpro5");
            const service = config["sglang-serve:service"] as RawServiceBlock;
            (service.speculative as { algorithm: string }).algorithm = "MTP";
            service.environment.DATABASE_URL = "postgres://u:Pw0rdXyz@h/db";
            delete service.requireApiKey;
            row.edit(service);
            const d = await Deployment.create("kpro5", config);
            deployments.push(d);
            // An API key stored as Pulumi config (an older version's way); no key in the run's environment.
            await d.setSecret("sglang-serve:apiKey", apiKey);
            r = await d.preview();
            assert.notEqual(r.code, 0, r.output);
        });

        it(`judges as SGLang 0.5.11 does: ${row.row}`, () => {
            const issue = issueAt(r.output, row.fails!.key);
            assert.match(issue, refusedKeyPattern(row.fails!.key));
            assert.match(issue, row.fails!.text);
        });

        it("fails naming the allowed values when the algorithm is MTP", () => {
            const issue = issueAt(r.output, "service.speculative.algorithm");
            assert.match(issue, /service\.speculative\.algorithm/);
            for (const allowed of ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]) {
                assert.match(issue, new RegExp(`\\b${allowed}\\b`));
            }
        });

        it("fails kpro5 with DATABASE_URL: postgres://u:pw@h/db in the plain environment, pointing at secretEnvironment, never printing it (issue 34, finding 7)", () => {
            const issue = issueAt(r.output, "service.environment.DATABASE_URL");
            assert.match(issue, /sglang-serve:service\.environment\.DATABASE_URL = "\[secret\]"/);
            assert.match(issue, /its value looks like a URL with credentials .*move the name to sglang-serve:service\.secretEnvironment/);
            assert.ok(!r.output.includes("Pw0rdXyz"));
        });

        it("fails kpro5 when it requires no API key, naming requireApiKey, listenHost 0.0.0.0 and allowUnauthenticated", () => {
            const issue = issueAt(r.output, "service.requireApiKey");
            assert.match(issue, /sglang-serve:service\.requireApiKey = false/);
            assert.match(issue, /service\.listenHost is 0\.0\.0\.0/);
            assert.match(issue, /service\.allowUnauthenticated: true/);
        });

        it("refuses an API key stored as Pulumi config (an older version's way), naming the way out, never printing it", () => {
            const issue = issueAt(r.output, "apiKey");
            assert.match(issue, /sglang-serve:apiKey = \[secret\]/);
            assert.match(issue, /pulumi config rm sglang-serve:apiKey/);
            assert.ok(!r.output.includes(apiKey));
        });
    });
});

/**
 * The numbered issue at `key` in a config refusal the engine printed: from its
 * `N. sglang-serve:<key> =` line up to the next issue or the first line not
 * indented under it.
 */
function issueAt(output: string, key: string): string {
    const lines = output.split("\n");
    const head = /^(\s*)\d+\. sglang-serve:(\S+) =/;
    const start = lines.findIndex((l) => head.exec(l)?.[2] === key);
    assert.ok(start >= 0, `no issue at sglang-serve:${key} in:\n${output}`);
    const indent = head.exec(lines[start]!)![1]!.length;
    const rest = lines.slice(start + 1);
    const end = rest.findIndex((l) => head.test(l) || l.length - l.trimStart().length <= indent);
    return [lines[start], ...(end < 0 ? rest : rest.slice(0, end))].join("\n");
}
