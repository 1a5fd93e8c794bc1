import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { validateStackConfig } from "../../../core/config/config";
import { argvFieldsOf, liveArgsDrift, normalizeServerInfo, renderArgv } from "../../../core/sglang/args";
import { ensureInstalled, type OracleCase, type OracleResult, runOracle } from "../../../sglang-release/oracle";
import { fixtureModelPath } from "../../../lab/sglang/fixtures";
import { FieldRaw, withField } from "../../core/fixtures";

type Edit = (r: FieldRaw) => void;

// The one comparison of declared and live args (core/sglang/args.ts
// liveArgsDrift) against /server_info documents the real SGLang 0.5.11
// builds for the field config and the rows of the issue's table: no declared
// field shows drift forever.
describe("declared vs live server args, on /server_info from the real SGLang 0.5.11", function () {
    this.timeout(180_000);
    let models: string;
    before(async () => {
        await ensureInstalled();
        models = fs.mkdtempSync(path.join(os.tmpdir(), "live-args-"));
        fs.copyFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), path.join(models, "config.json"));
    });
    after(() => fs.rmSync(models, { recursive: true, force: true }));

    const rows: Array<[string, Edit]> = [
        ["the field config (NEXTN, one step, extra_buffer)", () => undefined],
        [
            "auto strategy without speculation (auto resolves to no_buffer)",
            (r) => {
                delete (r.service as Record<string, unknown>).speculative;
                r.service.mambaSchedulerStrategy = "auto";
            },
        ],
        [
            "no strategy and no speculation",
            (r) => {
                delete (r.service as Record<string, unknown>).speculative;
                delete (r.service as Record<string, unknown>).mambaSchedulerStrategy;
            },
        ],
        [
            "steps 3 and topk 1 with a draft-token count SGLang adjusts",
            (r) => (r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 1, numDraftTokens: 2 } as typeof r.service.speculative),
        ],
        ["EAGLE without a draft path (the model's own head)", (r) => (r.service.speculative = { ...r.service.speculative, algorithm: "EAGLE" })],
        ["NEXTN with SGLang's own step settings", (r) => (r.service.speculative = { algorithm: "NEXTN" } as typeof r.service.speculative)],
        [
            "topk 2 (spec v1 fallback)",
            (r) => (r.service.speculative = { algorithm: "NEXTN", numSteps: 3, eagleTopk: 2, numDraftTokens: 6 } as typeof r.service.speculative),
        ],
    ];

    /** The row's declared server, on this test's model folder (undefined where the config does not validate: its test says why). */
    const declared = (edit: Edit) => {
        const result = validateStackConfig(withField(edit));
        if (!result.ok) return { issues: result.issues };
        return { service: { ...result.config.servers[0]!, model: { ...result.config.servers[0]!.model, path: models } } };
    };
    const argvOf = (rendered: string[]) => rendered.slice(rendered.findIndex((a) => a.startsWith("--")));
    const CHANGED_FLAG = "a changed flag";
    // One run of the release for every row (its import is most of a run's cost), each row's case in a process of its own.
    const answers = new Map<string, OracleResult>();
    before(async () => {
        const asked: Array<[string, OracleCase]> = [];
        for (const [row, edit] of rows) {
            const { service } = declared(edit);
            if (service) asked.push([row, { argv: argvOf(renderArgv(service)), entry: "sglang-serve", env: service.environment }]);
        }
        const { service } = declared(() => undefined);
        if (service) asked.push([CHANGED_FLAG, { argv: argvOf(renderArgv({ ...service, memFractionStatic: 0.8 })), entry: "sglang-serve" }]);
        const results = await runOracle(
            "0.5.11",
            asked.map(([, c]) => c),
        );
        asked.forEach(([row], i) => answers.set(row, results[i]!));
    });

    for (const [row, edit] of rows) {
        it(`finds no drift between the declared config and what SGLang reports running: ${row}`, () => {
            const { service, issues } = declared(edit);
            assert.ok(service, JSON.stringify(issues));
            const r = answers.get(row)!;
            assert.equal(r.status, "ok", `${r.exceptionType}: ${r.message}`);
            const live = normalizeServerInfo(r.serverInfo);
            assert.deepEqual(liveArgsDrift(argvFieldsOf(service), live), []);
        });
    }

    it("does find a changed flag in a real /server_info", () => {
        const { service, issues } = declared(() => undefined);
        assert.ok(service, JSON.stringify(issues));
        assert.deepEqual(liveArgsDrift(argvFieldsOf(service), normalizeServerInfo(answers.get(CHANGED_FLAG)!.serverInfo)), [
            { field: "service.memFractionStatic", declared: 0.88, actual: 0.8 },
        ]);
    });
});
