import * as assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { renderArgv } from "../../core/sglang/args";
import { DISCARD_STAGING_SCRIPT, MARK_STAGED_SCRIPT, RELEASE_PARSER_SCRIPT, STAGE_POLL_SCRIPT, VenvPlan, venvPlanOf } from "../../core/venv/venv-layout";
import type { RemoteRunner } from "../../remote/remote-host";
import type { ExecResult } from "../../remote/ssh-target";
import { pruneVenvs, stageVenv, StagingFailed } from "../../remote/venv-staging";
import { withField } from "../core/fixtures";

const UNIT = "sglang-qwen.service";

function plan(): VenvPlan {
    const result = validateStackConfig(
        withField((raw) => {
            delete raw.service.python;
            raw.service.sglangVersion = "0.5.23";
            raw.service.venv = { root: "/opt/sglang", pins: ["torch==2.9.1"] };
        }),
    );
    assert.ok(result.ok);
    return venvPlanOf(result.config.servers[0]!, renderArgv(result.config.servers[0]!))!;
}

const ok = (stdout = ""): ExecResult => ({ code: 0, stdout, stderr: "" });
const poll = (log: string[], exit: number | undefined, state: string): ExecResult =>
    ok(`${log.join("\n")}\n\n---sglang-serve-stage---\n${exit ?? ""}\n${state}\n`);

/** A box that answers the staging's commands from a script: the polls in turn, the parser's answer. */
class StagingBox implements RemoteRunner {
    readonly calls: string[][] = [];
    constructor(
        private readonly polls: ExecResult[],
        private readonly parser: ExecResult = ok("0.5.23\n"),
        private readonly start: ExecResult = ok(),
    ) {}
    describe(): string {
        return "staging box";
    }
    async run(argv: string[]): Promise<ExecResult> {
        this.calls.push(argv);
        if (argv[0] === "systemd-run") return this.start;
        if (argv[0] === "env") return this.parser;
        if (argv[2] === STAGE_POLL_SCRIPT) return this.polls.shift() ?? poll([], undefined, "inactive");
        return ok();
    }
    ran(script: string): boolean {
        return this.calls.some((c) => c[2] === script);
    }
}

async function staged(box: StagingBox): Promise<{ said: string[]; error?: Error }> {
    const said: string[] = [];
    let clock = 0;
    const options = { say: (m: string) => said.push(m), sleep: async (ms: number) => void (clock += ms), now: () => clock, quietProgressMs: 3000 };
    try {
        await stageVenv(box, plan(), UNIT, "sglang-serve/kpro5", options);
        return { said };
    } catch (e) {
        return { said, error: e as Error };
    }
}

describe("staging a release's venv on the box (remote/venv-staging.ts)", () => {
    it("starts pip in a transient unit, says each new log line and a progress line while pip is quiet, checks with the release's own parser without GPUs, then marks it staged", async () => {
        const box = new StagingBox([
            poll(["sglang-serve: creating the venv with /usr/bin/python3"], undefined, "active"),
            poll(["sglang-serve: creating the venv with /usr/bin/python3", "Collecting sglang==0.5.23"], undefined, "active"),
            poll(["sglang-serve: creating the venv with /usr/bin/python3", "Collecting sglang==0.5.23"], undefined, "active"),
            poll(["sglang-serve: creating the venv with /usr/bin/python3", "Collecting sglang==0.5.23"], undefined, "active"),
            poll(["sglang-serve: creating the venv with /usr/bin/python3", "Collecting sglang==0.5.23"], undefined, "active"),
            poll(["sglang-serve: creating the venv with /usr/bin/python3", "Collecting sglang==0.5.23", "Successfully installed sglang-0.5.23"], 0, "inactive"),
        ]);
        const { said, error } = await staged(box);
        assert.equal(error, undefined);
        assert.deepEqual(said, [
            "[sglang-qwen.service] staging SGLang 0.5.23 in /opt/sglang/venv-0.5.23 while the running server serves: pip install sglang==0.5.23 torch==2.9.1 (the box's pip configuration)",
            "[sglang-qwen.service] pip: sglang-serve: creating the venv with /usr/bin/python3",
            "[sglang-qwen.service] pip: Collecting sglang==0.5.23",
            "[sglang-qwen.service] staging SGLang 0.5.23: pip still running (5 s elapsed)",
            "[sglang-qwen.service] pip: Successfully installed sglang-0.5.23",
            "[sglang-qwen.service] staged SGLang 0.5.23 in /opt/sglang/venv-0.5.23 in 6 s; its own parser takes the server's flags",
        ]);
        const start = box.calls[0]!;
        assert.deepEqual(start.slice(0, 3), ["systemd-run", "--unit=sglang-qwen-stage.service", "--collect"]);
        assert.ok(start.includes("--property=RuntimeMaxSec=1800"));
        assert.ok(start.includes("--setenv=PIP_ROOT_USER_ACTION=ignore"), "pip's warning about root, off for any pip release");
        const parser = box.calls.find((c) => c[0] === "env")!;
        assert.deepEqual(parser.slice(0, 6), ["env", "CUDA_VISIBLE_DEVICES=", "/opt/sglang/venv-0.5.23/bin/python3", "-I", "-c", RELEASE_PARSER_SCRIPT]);
        assert.equal(parser[6], "--model-path");
        const mark = box.calls.find((c) => c[2] === MARK_STAGED_SCRIPT)!;
        assert.deepEqual(mark.slice(4), ["/opt/sglang/venv-0.5.23", '{"release":"0.5.23","stagedBy":"sglang-serve/kpro5"}']);
        assert.ok(!box.ran(DISCARD_STAGING_SCRIPT));
    });

    it("fails naming pip's exit status and its last lines, removes the half-made venv, and says the running server was not stopped", async () => {
        const box = new StagingBox([poll(["Looking in links: /srv/wheels", "ERROR: No matching distribution found for sglang==0.5.23"], 1, "failed")]);
        const { error } = await staged(box);
        assert.ok(error instanceof StagingFailed);
        assert.match(
            error.message,
            /^\[sglang-qwen\.service\] staging SGLang 0\.5\.23 in \/opt\/sglang\/venv-0\.5\.23 failed: the install exited 1 after 1 s\. Nothing was stopped: the running server serves on, and the half-made venv was removed\.\n {4}Looking in links: \/srv\/wheels\n {4}ERROR: No matching distribution found for sglang==0\.5\.23$/,
        );
        assert.ok(box.ran(DISCARD_STAGING_SCRIPT));
        assert.ok(!box.ran(MARK_STAGED_SCRIPT));
    });

    it("leaves a directory it did not stage as it is", async () => {
        const box = new StagingBox([poll(["sglang-serve: /opt/sglang/venv-0.5.23 exists and was not staged by sglang-serve"], 65, "failed")]);
        const { error } = await staged(box);
        assert.match(error!.message, /the install exited 65 .*Nothing was stopped: the running server serves on\.\n/s);
        assert.ok(!box.ran(DISCARD_STAGING_SCRIPT));
    });

    it("fails naming the budget when the install's unit ended without an exit status (killed at installTimeoutSeconds)", async () => {
        const { error } = await staged(new StagingBox([poll(["Collecting torch==2.9.1"], undefined, "failed")]));
        assert.match(
            error!.message,
            /ended without an exit status after 1 s \(unit sglang-qwen-stage\.service is failed; service\.venv\.installTimeoutSeconds is 1800\)/,
        );
    });

    it("fails when an install of the same unit still runs, removing nothing", async () => {
        const box = new StagingBox([], ok(), {
            code: 1,
            stdout: "",
            stderr: "Failed to start transient service unit: Unit sglang-qwen-stage.service already exists.",
        });
        const { error } = await staged(box);
        assert.match(
            error!.message,
            /systemd-run exited 1 \(Failed to start transient service unit: Unit sglang-qwen-stage\.service already exists\.\); an earlier install may still run/,
        );
        assert.ok(!box.ran(DISCARD_STAGING_SCRIPT));
    });

    it("fails with argparse's own error line when the installed release's parser refuses the flags, and when pip installed another release", async () => {
        const refused = new StagingBox([poll(["done"], 0, "inactive")], {
            code: 2,
            stdout: "",
            stderr: "usage: sglang serve [-h] --model-path MODEL_PATH\n  [--tp-size TP_SIZE]\nsglang serve: error: unrecognized arguments: --speculative-draft-model-revision\n",
        });
        const { error } = await staged(refused);
        assert.match(
            error!.message,
            /SGLang 0\.5\.23's own parser refuses the server's flags \(exit 2\)\. Nothing was stopped: the running server serves on, and the half-made venv was removed\.\n {4}sglang serve: error: unrecognized arguments: --speculative-draft-model-revision$/,
        );
        assert.ok(refused.ran(DISCARD_STAGING_SCRIPT));
        const other = await staged(new StagingBox([poll(["done"], 0, "inactive")], ok("0.5.22\n")));
        assert.match(other.error!.message, /pip installed SGLang 0\.5\.22, not 0\.5\.23/);
    });

    it("after a rollout, says each venv the prune removed", async () => {
        const said: string[] = [];
        const box: RemoteRunner = { describe: () => "box", run: async () => ok("/opt/sglang/venv-0.5.20\n") };
        assert.deepEqual(await pruneVenvs(box, plan(), UNIT, "sglang-serve/kpro5", (m) => said.push(m)), ["/opt/sglang/venv-0.5.20"]);
        assert.deepEqual(said, ["[sglang-qwen.service] removed the old venv /opt/sglang/venv-0.5.20 (service.venv.keepPrevious: 1)"]);
    });
});
