import * as assert from "node:assert/strict";
import { argparseTable, argparseVersions, type ArgparseOption, type ArgparseTable } from "../../core/sglang/argparse";
import { normalizeServerInfo, parseArgv, renderArgv } from "../../core/sglang/args";
import { flagOf, OWNED_FLAGS, OWNED_SETTINGS, SERVER_INFO_FIELDS, settingFlag, settingSpellings } from "../../core/sglang/settings";
import { compareVersions } from "../../core/sglang/rules";
import { fieldService } from "./fixtures";

/** The option argparse reads `name` as: its own flag, or (allow_abbrev) the one option it is a prefix of. */
function optionOf(table: ArgparseTable, name: string): ArgparseOption | undefined {
    const exact = table.options.find((o) => o.flags.includes(name));
    if (exact || !table.allowAbbrev) return exact;
    const prefixed = table.options.filter((o) => o.flags.some((f) => f.startsWith(name)));
    return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** The argparse shape a setting's kind needs: one value of the type, or none. */
function takesKind(option: ArgparseOption, kind: string): boolean {
    if (kind === "switch") return option.nargs === 0;
    const type = { string: ["str", null], int: ["int"], float: ["float"] }[kind] ?? [];
    return option.nargs === null && type.includes(option.type);
}

// The table (core/sglang/settings.ts) against each release's own argparse,
// dumped from its wheel (core/sglang/argparse-tables.json).
describe("the owned SGLang settings table, against each release's argparse", () => {
    const versions = argparseVersions().sort(compareVersions);

    it("has a dumped argparse for every release from 0.5.9 to 0.5.23", () => {
        assert.ok(versions.includes("0.5.9") && versions.includes("0.5.23"), versions.join(", "));
    });

    for (const version of argparseVersions().sort(compareVersions)) {
        it(`${version}: the flag rendered for each setting is one of the release's options, of the setting's kind, and every other spelling the release knows reads as that option`, () => {
            const table = argparseTable(version)!;
            for (const setting of OWNED_SETTINGS) {
                const flag = settingFlag(setting, version);
                const option = optionOf(table, flag);
                assert.ok(option, `${setting.key}: ${version} has no ${flag}`);
                assert.ok(option.flags.includes(flag), `${setting.key}: ${flag} is only an abbreviation in ${version}`);
                assert.ok(takesKind(option, setting.kind), `${setting.key}: ${version}'s ${flag} is ${JSON.stringify(option)}, not a ${setting.kind}`);
                for (const alias of setting.aliases) {
                    assert.equal(optionOf(table, alias), option, `${setting.key}: ${version} reads ${alias} as another option than ${flag}`);
                }
                for (const other of setting.flags.map((f) => f.flag).filter((f) => f !== flag)) {
                    const read = optionOf(table, other);
                    assert.ok(read === undefined || read === option, `${setting.key}: ${version} reads its former name ${other} as another option`);
                }
                if (setting.auto !== undefined) {
                    assert.ok(option.choices?.includes("auto"), `${setting.key}: ${version}'s ${flag} has no auto`);
                    assert.ok(option.choices?.includes(setting.auto), `${setting.key}: ${version}'s ${flag} has no ${setting.auto}`);
                }
            }
        });
    }

    it("renders the mamba strategy under its name in each release: --mamba-scheduler-strategy to 0.5.13, --mamba-radix-cache-strategy from 0.5.14", () => {
        assert.equal(flagOf("service.mambaSchedulerStrategy", "0.5.13"), "--mamba-scheduler-strategy");
        assert.equal(flagOf("service.mambaSchedulerStrategy", "0.5.14"), "--mamba-radix-cache-strategy");
        const service = fieldService();
        const old = renderArgv({ ...service, sglangVersion: "0.5.11", mambaSchedulerStrategy: "extra_buffer" });
        const renamed = renderArgv({ ...service, sglangVersion: "0.5.23", mambaSchedulerStrategy: "extra_buffer" });
        assert.ok(old.includes("--mamba-scheduler-strategy") && !old.includes("--mamba-radix-cache-strategy"), old.join(" "));
        assert.ok(renamed.includes("--mamba-radix-cache-strategy") && !renamed.includes("--mamba-scheduler-strategy"), renamed.join(" "));
    });

    it("reads every spelling of every setting back to that setting's key, and a unit keeps the name it was written with", () => {
        for (const setting of OWNED_SETTINGS) {
            for (const spelling of settingSpellings(setting)) assert.equal(OWNED_FLAGS[spelling], setting.key, spelling);
        }
        const argv = ["/opt/sglang/venv/bin/sglang", "serve", "--model", "/m", "--tp", "2", "--mamba-radix-cache-strategy", "extra_buffer"];
        const fields = parseArgv(argv);
        assert.equal(fields.modelPath, "/m");
        assert.equal(fields.tensorParallelSize, 2);
        assert.equal(fields.mambaStrategyFlag, "--mamba-radix-cache-strategy");
    });

    it("reads each setting /server_info reports from its key, the newer name winning where a release reports both", () => {
        for (const setting of OWNED_SETTINGS) {
            for (const key of setting.serverInfo) assert.ok(key in SERVER_INFO_FIELDS, key);
        }
        const live = normalizeServerInfo({
            model_path: "/m",
            tp_size: 2,
            mamba_scheduler_strategy: "no_buffer",
            mamba_radix_cache_strategy: "extra_buffer",
            disable_radix_cache: false,
            version: "0.5.23",
        });
        assert.deepEqual(live, { modelPath: "/m", tensorParallelSize: 2, mambaSchedulerStrategy: "extra_buffer", disableRadixCache: false, version: "0.5.23" });
    });
});
