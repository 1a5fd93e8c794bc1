import * as assert from "node:assert/strict";
import { ensureInstalled, sglangVersions } from "../../../sglang-release/oracle";
import { boxOf, type DifferentialResult, runDifferential, startFailure } from "../sglang-differential";

/**
 * Configs per release: `npm test` runs a fixed-seed sample of 250 (the first
 * 250 of the full run's, as fast-check draws them in order from the seed);
 * `npm run differential` runs the full 1,000 (SGLANG_SERVE_DIFFERENTIAL_CASES).
 */
const CASES = Number(process.env.SGLANG_SERVE_DIFFERENTIAL_CASES ?? 250);
const SEED = 20261201;

// The stack's judgement at preview judged by the real releases: for each,
// CASES generated stack configs, the stack's verdict (its own SGLang rules,
// core/sglang/releases.ts and core/sglang/server-args.ts, then SGLang's own
// verdict on the rendered unit, filed under a stack key as the preview files
// it) against what that release's own `sglang serve` CLI, ServerArgs and
// check_server_args do with the command line the stack renders.
describe("the stack's SGLang rules against the real releases (differential)", function () {
    // About 10-50 s a release alone; several times that under a full run's load on 2 cores.
    this.timeout(900_000);
    // Every release of sglang-release/VERSIONS, judged side by side (each release's oracle its own processes), so the
    // file takes about as long as its slowest release, not their sum: on 2 cores it was a full run's longest file.
    const runs = new Map<string, Promise<DifferentialResult>>();
    before(async () => {
        await ensureInstalled();
        for (const version of sglangVersions()) {
            const run = runDifferential(version, CASES, SEED);
            run.catch(() => undefined); // failed in its own test below
            runs.set(version, run);
        }
    });

    for (const version of sglangVersions()) {
        it(`agrees with SGLang ${version} on accept/reject, and names the key SGLang's error is about, for ${CASES} generated configs`, async () => {
            const r = await runs.get(version)!;
            console.log(
                `      SGLang ${version}: ${r.compared} configs compared, ${r.agreed} agree (${((100 * r.agreed) / r.compared).toFixed(1)}%): ` +
                    `${r.acceptedBoth} accepted by both, ${r.rejectedBoth} rejected by both under SGLang's key ` +
                    `(${r.rejectedBothExtraArgsFirst} after SGLang's ServerArgs refused extraArgs first, ${r.rejectedBothAtStart} at the start: GPUs or memory, ` +
                    `${r.rejectedBothFitFirst} where the rules refused the fit and SGLang's code another setting first); ${r.disagreements.length} disagree`,
            );
            const shown = r.disagreements.slice(0, 5).map((d) =>
                JSON.stringify({
                    service: {
                        model: d.service.model,
                        tensorParallelSize: d.service.tensorParallelSize,
                        memFractionStatic: d.service.memFractionStatic,
                        speculative: d.service.speculative,
                        mambaSchedulerStrategy: d.service.mambaSchedulerStrategy,
                        disableRadixCache: d.service.disableRadixCache,
                        environment: d.service.environment,
                        extraArgs: d.service.extraArgs,
                    },
                    box: boxOf(d.service).name,
                    stack: d.stack.accepted ? "accepts" : `rejects ${d.stack.keys.join(", ")}`,
                    sglang: `${d.sglang.status} ${d.sglang.exceptionType ?? ""}: ${(d.sglang.message ?? startFailure(d.service, d.sglang)?.message ?? "").slice(0, 200)}`,
                }),
            );
            assert.deepEqual(shown, [], `${r.disagreements.length} disagreements, first ones:\n${shown.join("\n")}`);
            assert.equal(r.compared, CASES, "every generated config is one SGLang judges");
            // Both verdicts are exercised, not one side only.
            assert.ok(r.acceptedBoth >= CASES / 5 && r.rejectedBoth >= CASES / 5, JSON.stringify(r));
        });
    }
});
