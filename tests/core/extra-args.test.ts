import assert from "node:assert/strict";
import { extraFlagValues, repeatedExtraFlags } from "../../core/sglang/extra-args";
import { argparseOption, argparseTable, argparseVersions } from "../../core/sglang/argparse";

describe("extraArgs: repeated flags (issue 37)", () => {
    const table = argparseTable("0.5.11")!;

    it("groups a flag's occurrences, in order, in either form", () => {
        const groups = repeatedExtraFlags(["--log-level", "info", "--enable-metrics", "--log-level=debug"]);
        assert.deepEqual(
            groups.map((g) => g.map((f) => [f.index, f.values])),
            [
                [
                    [0, ["info"]],
                    [3, ["debug"]],
                ],
            ],
        );
    });

    it("reads the last occurrence as the one SGLang runs with", () => {
        assert.deepEqual(extraFlagValues(["--log-level", "info", "--log-level=debug"], "--log-level")?.values, ["debug"]);
    });

    it("groups spellings of one option, and leaves out an option that accumulates", () => {
        const option = (flag: string) => argparseOption(table, flag)?.flags[0];
        assert.equal(repeatedExtraFlags(["--pp-size", "2", "--pipeline-parallel-size", "1"]).length, 0);
        assert.equal(repeatedExtraFlags(["--pp-size", "2", "--pipeline-parallel-size", "1"], option).length, 1);
        assert.deepEqual(
            repeatedExtraFlags(["--x", "--x"], () => undefined),
            [],
        );
    });

    it("finds the option argparse would: an alias, --no-x, an unambiguous abbreviation; none for an ambiguous one or an unknown flag", () => {
        assert.deepEqual(argparseOption(table, "--pp-size")?.flags, ["--pipeline-parallel-size", "--pp-size"]);
        assert.deepEqual(argparseOption(table, "--no-lora-strict-loading")?.flags, ["--lora-strict-loading", "--no-lora-strict-loading"]);
        assert.deepEqual(argparseOption(table, "--reasoning-pars")?.flags, ["--reasoning-parser"]);
        assert.equal(argparseOption(table, "--log-lev"), undefined);
        assert.equal(argparseOption(table, "--no-such-flag"), undefined);
    });

    it("finds that no option of the known releases accumulates when repeated", () => {
        // Every release with a table: those of sglang-release/VERSIONS and any other dumped (tests/lab/sglang-versions.test.ts).
        for (const version of argparseVersions()) {
            assert.deepEqual(
                argparseTable(version)!
                    .options.filter((o) => o.append)
                    .map((o) => o.flags[0]),
                [],
                version,
            );
        }
    });
});
