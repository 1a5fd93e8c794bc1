import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Manifest, MANIFEST_CHECK_SCRIPT, manifestDigest } from "../../core/weights/manifest";
import { WEIGHTS_POLL_SCRIPT, WeightsPlan } from "../../core/weights/staging";
import type { RemoteRunner } from "../../remote/remote-host";
import type { ExecOptions, ExecResult } from "../../remote/ssh-target";
import { stageWeights, WeightsStagingFailed } from "../../remote/weights-staging";

const REV = "0123456789abcdef0123456789abcdef01234567";
const UNIT = "sglang-qwen.service";
const TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123";
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const SEP = "---sglang-serve-weights---";

const PLAN: WeightsPlan = {
    role: "drafter",
    hf: "org/drafter",
    revision: REV,
    endpoint: "https://huggingface.co",
    dir: `/models/org--drafter/${REV}`,
    root: "/models",
    keepPrevious: 1,
    downloadTimeoutSeconds: 3600,
};

function manifest(): Manifest {
    const files = [{ path: "model.safetensors", size: 5, sha256: sha256("abcde"), mtimeNs: "1796528797096016963" }];
    return { format: 1, repo: PLAN.hf, revision: REV, stagedBy: "sglang-serve/kpro5", stagedAt: 1, files, digest: manifestDigest(files) };
}

const ok = (stdout = ""): ExecResult => ({ code: 0, stdout, stderr: "" });
const poll = (o: { progress?: object; log?: string[]; exit?: number; result?: object; target?: string; state: string }): ExecResult =>
    ok(
        [o.progress ? JSON.stringify(o.progress) : "", (o.log ?? []).join("\n"), o.exit ?? "", o.result ? JSON.stringify(o.result) : "", o.target ?? PLAN.dir]
            .map((p) => `${p}\n${SEP}\n`)
            .join("") + `${o.state}\n`,
    );
const snap = (at: number, filesDone: number, bytesDone: number, phase = "downloading") => ({
    phase,
    files: 2,
    filesDone,
    bytes: 100 * 1024 * 1024,
    bytesDone,
    at,
});

/**
 * A box that answers the staging's commands from a script: whether the
 * folder is staged, the look at the unit before anything starts (`running`;
 * default: none), the polls in turn.
 */
class WeightsBox implements RemoteRunner {
    readonly calls: Array<{ argv: string[]; stdin?: string }> = [];
    staged = false;
    /** What `systemctl stop` answers, and the look at the unit after a stop that failed. */
    stop: ExecResult = ok();
    afterStop: ExecResult = poll({ state: "inactive" });
    constructor(
        private readonly polls: ExecResult[],
        private readonly running: ExecResult = poll({ state: "inactive" }),
    ) {}
    describe(): string {
        return "weights box";
    }
    async run(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
        this.calls.push({ argv, ...(opts.stdin !== undefined ? { stdin: String(opts.stdin) } : {}) });
        if (argv[2] === MANIFEST_CHECK_SCRIPT) {
            if (!this.staged) return { code: 3, stdout: "", stderr: `sglang-serve: no manifest in ${PLAN.dir}\n` };
            const m = manifest();
            return ok(`${JSON.stringify(m)}\n\n---sglang-serve-manifest---\n5 1796528797.0960169630 model.safetensors\0`);
        }
        if (argv[0] === "systemctl") return argv[1] === "stop" ? this.stop : ok();
        if (argv[2] === WEIGHTS_POLL_SCRIPT) {
            if (!this.started() && this.calls.some((c) => c.argv[1] === "stop")) return this.afterStop;
            // What is left running from before is looked at before the stack's own staging starts; only the first look follows one.
            if (!this.started() && this.calls.filter((c) => c.argv[2] === WEIGHTS_POLL_SCRIPT).length === 1) return this.running;
            const next = this.polls.shift() ?? poll({ state: "inactive" });
            // The program wrote its manifest before its exit status 0.
            if (next.stdout.includes(`${SEP}\n0\n${SEP}`)) this.staged = true;
            return next;
        }
        return ok();
    }
    started(): boolean {
        return this.calls.some((c) => c.argv.includes("systemd-run"));
    }
}

async function staged(box: WeightsBox, extra: { token?: string; prunable?: Array<{ dir: string; bytes: number }> } = {}) {
    const said: string[] = [];
    let clock = 0;
    try {
        const r = await stageWeights(box, PLAN, {
            unitName: UNIT,
            owner: "sglang-serve/kpro5",
            python: "/opt/hub/bin/python3",
            programText: "print('program')\n",
            say: (m) => said.push(m),
            sleep: async (ms) => void (clock += ms),
            now: () => clock,
            ...extra,
        });
        return { said, result: r };
    } catch (e) {
        return { said, error: e as Error };
    }
}

describe("staging weights on the box (remote/weights-staging.ts)", () => {
    it("writes the program, starts it in a transient unit, says progress with rate and ETA at least every 15 s, and returns the manifest once the program wrote it", async () => {
        const MiB = 1024 * 1024;
        const polls = [poll({ progress: snap(100, 0, 0, "listing"), log: ["sglang-serve: org/drafter@x: 2 files"], state: "active" })];
        for (let t = 1; t <= 20; t++)
            polls.push(poll({ progress: snap(100 + t, t >= 18 ? 1 : 0, t * 4 * MiB), log: ["sglang-serve: org/drafter@x: 2 files"], state: "active" }));
        polls.push(
            poll({
                progress: snap(121, 2, 100 * MiB, "done"),
                log: ["sglang-serve: org/drafter@x: 2 files", "sglang-serve: staged"],
                exit: 0,
                result: { exitStatus: 0, staged: true },
                state: "inactive",
            }),
        );
        const box = new WeightsBox(polls);
        const { said, result, error } = await staged(box);
        assert.equal(error, undefined);
        assert.equal(result!.manifest.digest, manifest().digest);
        assert.equal(result!.fetched, true);
        const write = box.calls.find((c) => c.stdin === "print('program')\n")!;
        assert.match(write.argv[2]!, /^mkdir -p "\$\(dirname "\$0"\)" \|\| exit 1; umask 077;/);
        assert.equal(write.argv[3], `/var/lib/sglang-serve/weights/sglang-serve-weights-${sha256("print('program')\n").slice(0, 16)}.py`);
        assert.deepEqual(said.slice(0, 4), [
            `[${UNIT}] staging the drafter org/drafter@0123456789ab in ${PLAN.dir} from https://huggingface.co while the running server serves`,
            `[${UNIT}] drafter: org/drafter@x: 2 files`,
            `[${UNIT}] drafter org/drafter@0123456789ab: asking the Hub for the revision's files`,
            `[${UNIT}] drafter org/drafter@0123456789ab: downloading 0/2 files, 4.0 MiB of 100.0 MiB (4.0%)`,
        ]);
        // The first line, then 15 s later; the file done at 18 s comes less than 5 s after that line, and the download ends first.
        assert.deepEqual(
            said.filter((l) => /downloading/.test(l)).map((l) => l.replace(/^.*: downloading/, "downloading")),
            ["downloading 0/2 files, 4.0 MiB of 100.0 MiB (4.0%)", "downloading 0/2 files, 64.0 MiB of 100.0 MiB (64.0%), 4.0 MiB/s, ETA 9 s"],
        );
        assert.match(
            said[said.length - 1]!,
            /staged the drafter org\/drafter@0123456789ab in .* in 22 s: 1 files, 5 bytes, each verified against the Hub's hashes; manifest [0-9a-f]{16}$/,
        );
    });

    it("sends the token through stdin to a 0600 file named on the command line, and removes the file when the staging ends", async () => {
        const box = new WeightsBox([poll({ exit: 0, result: { exitStatus: 0 }, state: "inactive" })]);
        await staged(box, { token: TOKEN });
        const tokenWrite = box.calls.find((c) => c.stdin?.includes(TOKEN))!;
        assert.equal(tokenWrite.stdin, `HF_TOKEN=${TOKEN}\n`);
        assert.match(tokenWrite.argv[2]!, /chmod 0600/);
        assert.equal(tokenWrite.argv[3], "/run/sglang-serve/sglang-qwen-weights-drafter.env");
        for (const c of box.calls) assert.ok(!c.argv.join(" ").includes(TOKEN), c.argv.join(" "));
        assert.ok(box.calls.some((c) => c.argv.includes("--env-file") && c.argv.includes("/run/sglang-serve/sglang-qwen-weights-drafter.env")));
        assert.deepEqual(box.calls[box.calls.length - 2]!.argv, ["rm", "-f", "--", "/run/sglang-serve/sglang-qwen-weights-drafter.env"]);
    });

    it("fails on a mismatch naming the file and both hashes and where it was quarantined, saying nothing was stopped", async () => {
        const result = {
            exitStatus: 66,
            error: "mismatch",
            mismatches: [{ path: "model.safetensors", algorithm: "sha256", expected: "a".repeat(64), actual: "b".repeat(64) }],
            quarantined: [{ path: "model.safetensors", to: `/models/org--drafter/.quarantine/${REV}/model.safetensors` }],
        };
        const box = new WeightsBox([poll({ exit: 66, result, state: "inactive" })]);
        const { error } = await staged(box);
        assert.ok(error instanceof WeightsStagingFailed);
        assert.equal(
            error.message,
            `[${UNIT}] staging the drafter org/drafter@0123456789ab in ${PLAN.dir} failed: 1 file(s) do not match the Hub's hashes; no manifest was written. ` +
                `Nothing was stopped: the running server serves on.\n` +
                `    model.safetensors: the Hub's sha256 (LFS) is ${"a".repeat(64)}, the downloaded file's is ${"b".repeat(64)}\n` +
                `    quarantined model.safetensors to /models/org--drafter/.quarantine/${REV}/model.safetensors`,
        );
    });

    it("refuses a short disk with the arithmetic: bytes needed, bytes free, and what the prune would free", async () => {
        const box = new WeightsBox([poll({ exit: 67, result: { exitStatus: 67, needBytes: 3000, freeBytes: 1000 }, state: "inactive" })]);
        const { error } = await staged(box, { prunable: [{ dir: "/models/org--drafter/old", bytes: 2500 }] });
        assert.match(
            error!.message,
            /not enough disk for drafter org\/drafter@0123456789ab in \/models: it needs 2\.9 KiB \(3000 bytes\), 1000 bytes \(1000 bytes\) are free/,
        );
        assert.match(error!.message, /Pruning would free 2\.4 KiB \(2500 bytes\), enough/);
        assert.match(error!.message, /\/models\/org--drafter\/old \(2\.4 KiB\)/);
    });

    it("fails a unit that ended without an exit status (killed, or past downloadTimeoutSeconds), saying the next up resumes it", async () => {
        const box = new WeightsBox([poll({ log: ["sglang-serve: downloading"], state: "failed" })]);
        const { error } = await staged(box);
        assert.match(
            error!.message,
            /ended without an exit status after 1 s \(unit sglang-qwen-weights-drafter\.service is failed; service\.weights\.downloadTimeoutSeconds is 3600\); the next up resumes it/,
        );
    });

    it("follows a staging already running for the server (left by a run whose session dropped) instead of starting another", async () => {
        const box = new WeightsBox([poll({ exit: 0, result: { exitStatus: 0 }, state: "inactive" })], poll({ state: "active" }));
        const { said, error } = await staged(box);
        assert.equal(error, undefined);
        assert.equal(box.started(), false);
        assert.equal(
            box.calls.some((c) => c.argv[0] === "systemctl"),
            false,
        );
        assert.match(
            said[0]!,
            /a staging of the drafter org\/drafter@0123456789ab is running already \(sglang-qwen-weights-drafter\.service, left by an earlier run\): following it/,
        );
        // The token file the earlier run wrote goes once the staging ended.
        assert.ok(box.calls.some((c) => c.argv.join(" ") === "rm -f -- /run/sglang-serve/sglang-qwen-weights-drafter.env"));
    });

    it("stops a staging left running for another folder (a revision declared before this run) and starts its own, never reading the other's state as its own", async () => {
        const other = "/models/org--drafter/ffffffffffffffffffffffffffffffffffffffff";
        const box = new WeightsBox([poll({ exit: 0, result: { exitStatus: 0 }, state: "inactive" })], poll({ target: other, state: "active" }));
        const { said, error } = await staged(box);
        assert.equal(error, undefined);
        const stop = box.calls.findIndex((c) => c.argv.join(" ") === "systemctl stop sglang-qwen-weights-drafter.service");
        assert.ok(stop >= 0 && stop < box.calls.findIndex((c) => c.argv.includes("systemd-run")), box.calls.map((c) => c.argv[0]).join(" "));
        assert.match(
            said.join("\n"),
            new RegExp(`a staging of ${other} is running \\(sglang-qwen-weights-drafter\\.service\\), not of ${PLAN.dir}: stopping it`),
        );
    });

    it("does not follow a staging of the same folder that wrote its exit status and is ending: its result is not this run's; it starts its own", async () => {
        // The first look finds the earlier staging's exit 67 (disk short) while its unit still ends; this run's own staging succeeds.
        const box = new WeightsBox(
            [poll({ exit: 0, result: { exitStatus: 0 }, state: "inactive" })],
            poll({ exit: 67, result: { exitStatus: 67, needBytes: 10, freeBytes: 1 }, state: "active" }),
        );
        const { error, result } = await staged(box);
        assert.equal(error, undefined);
        assert.equal(result!.fetched, true);
        assert.ok(box.calls.some((c) => c.argv.join(" ") === "systemctl stop sglang-qwen-weights-drafter.service"));
        assert.equal(box.started(), true);
    });

    it("takes a staging that ended between the look and the stop (systemctl: not loaded) as stopped, and starts its own", async () => {
        const box = new WeightsBox(
            [poll({ exit: 0, result: { exitStatus: 0 }, state: "inactive" })],
            poll({ exit: 0, result: { exitStatus: 0 }, state: "active" }),
        );
        box.stop = {
            code: 5,
            stdout: "",
            stderr: "Failed to stop sglang-qwen-weights-drafter.service: Unit sglang-qwen-weights-drafter.service not loaded.\n",
        };
        const { error, result } = await staged(box);
        assert.equal(error, undefined);
        assert.equal(result!.fetched, true);
        assert.equal(box.started(), true);
    });

    it("refuses to start its own while a staging it could not stop still runs, naming the unit and systemctl's answer", async () => {
        const other = "/models/org--drafter/ffffffffffffffffffffffffffffffffffffffff";
        const box = new WeightsBox([], poll({ target: other, state: "active" }));
        box.stop = { code: 1, stdout: "", stderr: "Failed to stop sglang-qwen-weights-drafter.service: Access denied\n" };
        box.afterStop = poll({ target: other, state: "active" });
        const { error } = await staged(box);
        assert.ok(error instanceof WeightsStagingFailed);
        assert.match(error.message, /systemctl stop sglang-qwen-weights-drafter\.service exited 1 \(Failed to stop .*: Access denied\)/);
        assert.equal(box.started(), false);
    });

    it("does nothing for a revision already staged whose files agree with its manifest", async () => {
        const box = new WeightsBox([]);
        box.staged = true;
        const { said, result } = await staged(box);
        assert.equal(result!.fetched, false);
        assert.equal(box.started(), false);
        assert.equal(box.calls.length, 1);
        assert.match(said[0]!, /is staged already in .*: nothing to fetch/);
    });
});
