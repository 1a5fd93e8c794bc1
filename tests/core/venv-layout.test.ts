import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { validateStackConfig } from "../../core/config/config";
import type { ServiceConfig } from "../../core/config/schema";
import { renderArgv } from "../../core/sglang/args";
import {
    parseStagePoll,
    parserArgvOf,
    PRUNE_SCRIPT,
    servicePython,
    STAGE_NOT_OURS_EXIT,
    STAGE_POLL_SCRIPT,
    STAGE_SCRIPT,
    STAGED_MARKER,
    STAGING_MARKER,
    venvPlanOf,
} from "../../core/venv/venv-layout";
import { withField } from "./fixtures";

function venvService(venv: Record<string, unknown>, version = "0.5.23"): ServiceConfig {
    const result = validateStackConfig(
        withField((raw) => {
            delete raw.service.python;
            raw.service.sglangVersion = version;
            raw.service.venv = venv;
        }),
    );
    assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
    return result.config.servers[0]!;
}

describe("the venvs the stack owns (core/venv/venv-layout.ts)", () => {
    it("puts a release's venv under the root unless it is adopted; service.python, when set, is used as it is", () => {
        assert.equal(servicePython(venvService({ root: "/opt/sglang/" })), "/opt/sglang/venv-0.5.23/bin/python3");
        assert.equal(servicePython(venvService({ root: "/opt/sglang", adopt: { "0.5.11": "/opt/sglang/venv" } }, "0.5.11")), "/opt/sglang/venv/bin/python3");
        assert.equal(servicePython(venvService({ root: "/opt/sglang", adopt: { "0.5.11": "/opt/sglang/venv" } })), "/opt/sglang/venv-0.5.23/bin/python3");
        assert.equal(servicePython({ python: "/srv/py/bin/python3.11", sglangVersion: "0.5.11" }), "/srv/py/bin/python3.11");
    });

    it("plans pip with the sources, the pins and the options in that order, and gives the release's parser the flags without --config", () => {
        const service = venvService({
            root: "/opt/sglang",
            indexUrl: "https://pypi.example/simple",
            extraIndexUrls: ["https://download.pytorch.org/whl/cu128"],
            findLinks: ["/srv/wheels"],
            pins: ["torch==2.9.1", "flashinfer-python==0.5.3"],
            pipArgs: ["--prefer-binary"],
        });
        const argv = [...renderArgv(service), "--config", "/etc/sglang/qwen.yaml"];
        const plan = venvPlanOf(service, argv)!;
        assert.deepEqual(plan.pipOptions, [
            "--index-url=https://pypi.example/simple",
            "--extra-index-url=https://download.pytorch.org/whl/cu128",
            "--find-links=/srv/wheels",
            "--prefer-binary",
        ]);
        assert.deepEqual(plan.requirements, ["sglang==0.5.23", "torch==2.9.1", "flashinfer-python==0.5.3"]);
        assert.equal(plan.dir, "/opt/sglang/venv-0.5.23");
        assert.equal(plan.keepPrevious, 1);
        assert.equal(plan.parserArgv[0], "--model-path");
        assert.ok(!plan.parserArgv.includes("--config") && !plan.parserArgv.includes("/etc/sglang/qwen.yaml"));
        assert.deepEqual(parserArgvOf(["/v/bin/python3", "-m", "sglang.launch_server", "--config=/x.yaml", "--tp", "2"]), ["--tp", "2"]);
        assert.equal(venvPlanOf({ ...service, venv: undefined, python: "/opt/v/bin/python3" }, argv), undefined);
    });

    it("refuses pip sources with credentials, pins that are not name==version, and python with venv both set or neither, each naming the key and the fix", () => {
        const refused = (edit: (service: Record<string, unknown>) => void) => {
            const result = validateStackConfig(withField((raw) => edit(raw.service as unknown as Record<string, unknown>)));
            assert.ok(!result.ok);
            return result.issues.map((i) => `${i.path}: ${i.message}`).join("\n");
        };
        assert.match(
            refused((s) => (s.venv = { root: "/opt/sglang", indexUrl: "https://user:secret@pypi.example/simple" })),
            /service\.venv\.indexUrl: .*without credentials \(put them in pip\.conf or ~\/\.netrc on the box\)/,
        );
        assert.match(
            refused((s) => (s.venv = { root: "/opt/sglang", pins: ["torch>=2"] })),
            /service\.venv\.pins\[0\]: .*name==version/,
        );
        assert.match(
            refused((s) => (s.venv = { root: "/opt/sglang" })),
            /service\.python: .*service\.python and sglang-serve:service\.venv are both set: keep one.*adopt it \(service\.venv\.adopt: \{"0\.5\.11": \/opt\/sglang\/venv\}\)/,
        );
        assert.match(
            refused((s) => delete s.python),
            /service\.python: .*is not set: set it to the python of the venv that has SGLang 0\.5\.11.*or set service\.venv/,
        );
    });

    it("reads a poll of the staging: the log's lines, the exit status once written, the unit's state", () => {
        assert.deepEqual(parseStagePoll("sglang-serve: creating\nCollecting x\n\n---sglang-serve-stage---\n\nactive\n"), {
            lines: ["sglang-serve: creating", "Collecting x"],
            unitState: "active",
        });
        assert.deepEqual(parseStagePoll("a\n\n---sglang-serve-stage---\n1\ninactive\n"), { lines: ["a"], exitStatus: 1, unitState: "inactive" });
    });
});

describe("the staging and pruning scripts, run by sh on a scratch tree", () => {
    let dir: string;
    /** A stand-in for the box's python3: `-m venv [--system-site-packages] DIR` makes DIR/bin/python3, whose `-m pip` logs its arguments and exits $PIP_EXIT. */
    let base: string;
    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "venv-layout-"));
        base = path.join(dir, "python3");
        fs.writeFileSync(
            base,
            `#!/bin/sh
for last; do :; done
mkdir -p "$last/bin"
echo "$*" > "$last/venv-args"
printf '#!/bin/sh\\necho "pip $*"\\nexit \${PIP_EXIT:-0}\\n' > "$last/bin/python3"
chmod +x "$last/bin/python3"
`,
            { mode: 0o755 },
        );
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const stage = (venv: string, env: Record<string, string> = {}) => {
        const log = path.join(dir, "run", "stage.log");
        const r = spawnSync("sh", ["-c", STAGE_SCRIPT, "sh", venv, base, "1", log, "--no-index", "sglang==0.5.23"], {
            encoding: "utf8",
            env: { ...process.env, ...env },
        });
        return { status: r.status, log: fs.readFileSync(log, "utf8"), exit: fs.readFileSync(`${log}.exit`, "utf8").trim() };
    };

    it("makes the venv (with the system site when asked), runs its pip with the arguments, leaves the staging marker for the checks, and records exit 0", () => {
        const venv = path.join(dir, "releases", "venv-0.5.23");
        const r = stage(venv);
        assert.equal(r.exit, "0", r.log);
        assert.match(r.log, /^pip -m pip install --no-input --disable-pip-version-check --progress-bar off --no-index sglang==0\.5\.23$/m);
        assert.match(fs.readFileSync(path.join(venv, "venv-args"), "utf8"), /^-m venv --system-site-packages /);
        assert.ok(fs.existsSync(path.join(venv, STAGING_MARKER)));
    });

    it("records pip's failure as the exit status", () => {
        const r = stage(path.join(dir, "venv-0.5.23"), { PIP_EXIT: "3" });
        assert.equal(r.exit, "3", r.log);
    });

    it("never touches a directory at the venv's path that it did not begin staging; stages again over one it did", () => {
        const theirs = path.join(dir, "venv-theirs");
        fs.mkdirSync(path.join(theirs, "bin"), { recursive: true });
        fs.writeFileSync(path.join(theirs, "bin", "keep"), "x");
        const refused = stage(theirs);
        assert.equal(refused.exit, String(STAGE_NOT_OURS_EXIT));
        assert.match(refused.log, /exists and was not staged by sglang-serve: remove it, or adopt it \(service\.venv\.adopt\)/);
        assert.ok(fs.existsSync(path.join(theirs, "bin", "keep")));
        const interrupted = path.join(dir, "venv-interrupted");
        fs.mkdirSync(interrupted);
        fs.writeFileSync(path.join(interrupted, STAGING_MARKER), "");
        fs.writeFileSync(path.join(interrupted, "half-written"), "x");
        assert.equal(stage(interrupted).exit, "0");
        assert.ok(!fs.existsSync(path.join(interrupted, "half-written")));
    });

    it("a poll that catches the install ending between its reads gets the exit status, not a unit ended without one", () => {
        // The box's systemctl, for this poll: the staging script finishes (its last line, then its exit status) just as its unit's state is asked.
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        const log = path.join(dir, "stage.log");
        fs.writeFileSync(log, "Successfully installed sglang-0.5.23\n");
        fs.writeFileSync(
            path.join(bin, "systemctl"),
            `#!/bin/sh\necho "sglang-serve: pip finished" >>"${log}"\necho 0 >"${log}.exit"\necho inactive\nexit 3\n`,
            { mode: 0o755 },
        );
        const r = spawnSync("sh", ["-c", STAGE_POLL_SCRIPT, "sh", log, "sglang-qwen-stage.service"], {
            encoding: "utf8",
            env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        });
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(parseStagePoll(r.stdout), {
            lines: ["Successfully installed sglang-0.5.23", "sglang-serve: pip finished"],
            exitStatus: 0,
            unitState: "inactive",
        });
    });

    it("prunes this owner's staged venvs beyond keep, newest kept, never the serving one, one a unit names, another owner's or an unmarked one", () => {
        const root = path.join(dir, "releases");
        const units = path.join(dir, "units");
        fs.mkdirSync(units, { recursive: true });
        const make = (version: string, owner: string | undefined, age: number) => {
            const venv = path.join(root, `venv-${version}`);
            fs.mkdirSync(venv, { recursive: true });
            if (owner !== undefined) {
                const marker = path.join(venv, STAGED_MARKER);
                fs.writeFileSync(marker, `${JSON.stringify({ release: version, stagedBy: owner })}\n`);
                const t = new Date(Date.now() - age * 60_000);
                fs.utimesSync(marker, t, t);
            }
            return venv;
        };
        const serving = make("0.5.23", "p/s", 1);
        make("0.5.22", "p/s", 2);
        const named = make("0.5.21", "p/s", 3);
        make("0.5.20", "p/s", 4);
        make("0.5.19", "p/s", 5);
        make("0.5.18", "p/other", 6);
        make("0.5.17", undefined, 7);
        fs.writeFileSync(path.join(units, "sglang-qwen.service.previous"), `ExecStart=${named}/bin/sglang serve\n`);
        const r = spawnSync("sh", ["-c", PRUNE_SCRIPT, "sh", root, serving, "1", "p/s", units], { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(r.stdout.trim().split("\n"), [path.join(root, "venv-0.5.20"), path.join(root, "venv-0.5.19")]);
        assert.deepEqual(fs.readdirSync(root).sort(), ["venv-0.5.17", "venv-0.5.18", "venv-0.5.21", "venv-0.5.22", "venv-0.5.23"]);
    });
});
