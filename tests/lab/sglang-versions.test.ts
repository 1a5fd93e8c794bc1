import * as assert from "node:assert/strict";
import { argparseTable } from "../../core/sglang/argparse";
import { compareVersions } from "../../core/sglang/rules";
import { FIELD_VENV, sglangVenvs } from "../../lab/sglang/venvs";
import { kpro5Config } from "../../lab/stack";
import { parseVersions, sglangVersions } from "../../sglang-release/oracle";

// sglang-release/VERSIONS is the one list of the releases run for real
// (sglang-release/README.md, "Adding a release"): what derives from it, and
// what it must hold, without running any release.

describe("sglang-release/VERSIONS: the releases run for real", () => {
    it("reads one release a line, in file order, skipping blank lines and # comments", () => {
        assert.deepEqual(parseVersions("# the releases\n0.5.9\n\n  0.5.10  \n# newest\n0.5.23\n"), ["0.5.9", "0.5.10", "0.5.23"]);
    });

    it("refuses a line that is not a release, and a release listed twice, naming the line", () => {
        assert.throws(() => parseVersions("0.5.9\nsglang==0.5.10\n"), /VERSIONS line 2: "sglang==0\.5\.10" is not a release/);
        assert.throws(() => parseVersions("0.5.9\n0.5.10\n0.5.9\n"), /VERSIONS line 3: 0\.5\.9 is listed twice/);
    });

    it("lists the releases oldest first, newest last, 0.5.9, 0.5.10 and the field's 0.5.11 first", () => {
        const versions = sglangVersions();
        assert.deepEqual(versions.slice(0, 3), ["0.5.9", "0.5.10", "0.5.11"]);
        for (let i = 1; i < versions.length; i++) assert.ok(compareVersions(versions[i - 1]!, versions[i]!) < 0, versions.join(" "));
    });

    it("has each release's argparse table (core/sglang/argparse-tables.json, written by sglang-release/argparse_table.py)", () => {
        for (const version of sglangVersions()) {
            assert.equal(
                argparseTable(version)?.version,
                version,
                `python3 sglang-release/argparse_table.py --version ${version} (writes core/sglang/argparse-tables.json)`,
            );
        }
    });

    it("gives the lab's container a venv for each release: the field's at its path, the others beside it", () => {
        const venvs = sglangVenvs(sglangVersions());
        assert.deepEqual(Object.keys(venvs), sglangVersions());
        for (const [version, venv] of Object.entries(venvs)) {
            assert.equal(venv, version === FIELD_VENV.release ? FIELD_VENV.path : `/opt/sglang/venv-${version}`);
        }
        assert.equal(new Set(Object.values(venvs)).size, Object.keys(venvs).length);
    });

    it("names as the field's venv the release and venv the kpro5 stack runs", () => {
        const service = kpro5Config()["sglang-serve:service"] as { sglangVersion: unknown; python: unknown };
        assert.equal(String(service.sglangVersion), FIELD_VENV.release);
        assert.equal(service.python, `${FIELD_VENV.path}/bin/python3`);
    });
});
