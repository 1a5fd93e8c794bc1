import * as assert from "node:assert/strict";
import fc from "fast-check";
import { ArgparseOption, argparseTable, ArgparseTable, judgeExtraArgs } from "../../../core/sglang/argparse";
import { OWNED_FLAGS } from "../../../core/sglang/settings";
import { ensureInstalled, runOracle, sglangVersions } from "../../../sglang-release/oracle";
import { fixtureModelPath } from "../../../lab/sglang/fixtures";

// core/sglang/argparse.ts replays argparse over each release's table of
// options; here the real releases (their wheels, hardware stubbed) judge the
// same command lines, and the two must agree: the same refusal with the same
// text, or both let the line through argparse (what ServerArgs does after
// that is the other rules' business). Issue 18's commands first, then a
// fixed-seed sample of generated ones per release.
const MODEL = fixtureModelPath("qwen3.6-27b");
const CASES = 40;
const SEED = 20261202;

/** The acceptance's commands: three refused, two accepted. */
const NAMED: string[][] = [
    ["--enable-ep-moe"],
    ["--kv-cache-dtype=fp9"],
    ["--enable-metrics=true"],
    ["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'],
    ["--cuda-graph-bs", "1", "2", "4", "8"],
    ["--disable-log-requests"],
    ["--enable-met"],
    ["--cuda-graph-bs"],
    ["--reasoning-parser", "qwen3", "extra"],
];

/**
 * Fragments built from the release's own options: each option as it should be
 * given and given wrongly (a value outside the choices or of another type, a
 * value to a switch, values missing or surplus, an abbreviation), and flags
 * the release does not have. Left out: the options the stack owns (refused
 * before argparse: core/sglang/settings.ts OWNED_FLAGS) and those whose value
 * SGLang's own type function reads (JSON, sizes), which the replay leaves to
 * the release.
 */
function fragments(table: ArgparseTable): fc.Arbitrary<string[]> {
    const options = table.options.filter(
        (o) => o.flags[0]!.startsWith("--") && !o.flags.some((f) => f in OWNED_FLAGS) && [null, "int", "float", "str"].includes(o.type),
    );
    const anyValue = fc.oneof(fc.constantFrom("1", "16", "0.5", "-1", "abc", "fp9", "true", "auto"), fc.stringMatching(/^[a-z0-9_.]{1,8}$/));
    const validValue = (o: ArgparseOption): fc.Arbitrary<string> =>
        o.choices && o.choices.length > 0
            ? fc.constantFrom(...o.choices.map(String))
            : o.type === "int"
              ? fc.constantFrom("1", "16", "-2")
              : o.type === "float"
                ? fc.constantFrom("0.5", "2", "-1.5")
                : fc.stringMatching(/^[a-z0-9_.]{1,8}$/);
    const valid = fc.constantFrom(...options).chain((o) => {
        const count = o.nargs === 0 ? 0 : o.nargs === null || o.nargs === "?" ? 1 : typeof o.nargs === "number" ? o.nargs : 2;
        return fc.tuple(fc.constantFrom(...o.flags), fc.array(validValue(o), { minLength: count, maxLength: count })).map(([f, vs]) => [f, ...vs]);
    });
    const wrong = fc.constantFrom(...options).chain((o) => {
        const flag = fc.constantFrom(...o.flags);
        const value = fc.oneof(validValue(o), anyValue);
        return fc.oneof(
            flag.map((f) => [f]),
            fc.tuple(flag, value).map(([f, v]) => [f, v]),
            fc.tuple(flag, value).map(([f, v]) => [`${f}=${v}`]),
            fc.tuple(flag, fc.array(value, { minLength: 2, maxLength: 3 })).map(([f, vs]) => [f, ...vs]),
            fc.tuple(flag, fc.integer({ min: 3, max: 12 })).map(([f, n]) => [f.slice(0, Math.max(3, f.length - n))]),
        );
    });
    const unknown = fc.stringMatching(/^[a-z]{3,10}$/).map((w) => [`--no-such-${w}`]);
    return fc
        .array(fc.oneof({ weight: 4, arbitrary: valid }, { weight: 3, arbitrary: wrong }, { weight: 1, arbitrary: unknown }), { minLength: 1, maxLength: 3 })
        .map((parts) => parts.flat());
}

describe("extraArgs through each release's own argparse: core/sglang/argparse.ts against the real releases", function () {
    this.timeout(600_000);
    before(async () => {
        await ensureInstalled();
    });

    // Every release of sglang-release/VERSIONS.
    for (const version of sglangVersions()) {
        it(`agrees with SGLang ${version}'s argparse on issue 18's commands and ${CASES} generated fragments`, async () => {
            const table = argparseTable(version);
            assert.ok(table, `no table for ${version}`);
            const generated = fc.sample(fragments(table), { numRuns: CASES, seed: SEED });
            const all = [...NAMED, ...generated];
            const results = await runOracle(
                version,
                all.map((extra) => ({ argv: ["--model-path", MODEL, ...extra], entry: version === "0.5.9" ? "launch-server" : "sglang-serve" })),
            );
            const disagreements: string[] = [];
            let refusedBoth = 0;
            all.forEach((extra, i) => {
                const stack = judgeExtraArgs(table, extra);
                const real = results[i]!;
                const realRefuses = real.status === "argparse-error";
                const agree = stack === undefined ? !realRefuses : realRefuses && stack.error.endsWith(`error: ${real.message}`);
                if (stack && realRefuses) refusedBoth++;
                if (!agree)
                    disagreements.push(`${JSON.stringify(extra)}: stack ${stack ? stack.error : "lets it through"}; SGLang ${real.status}: ${real.message}`);
            });
            assert.deepEqual(disagreements, []);
            // Both verdicts are exercised.
            assert.ok(refusedBoth >= 5 && refusedBoth <= all.length - 5, `refused by both: ${refusedBoth} of ${all.length}`);
            if (version === "0.5.11") {
                assert.equal(judgeExtraArgs(table, NAMED[3]!), undefined);
                assert.equal(judgeExtraArgs(table, NAMED[4]!), undefined);
                assert.match(judgeExtraArgs(table, NAMED[0]!)!.error, /unrecognized arguments: --enable-ep-moe$/);
            }
        });
    }
});
