import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { VenvSchema } from "../../core/config/schema";
import { installCheckArgv } from "../../core/venv/venv-layout";
import { HUB_CLIENT_RELEASE, hubVenvPlan } from "../../core/weights/hub-venv";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import { diskVerdict, fetchPlan, formatBytes } from "../../core/weights/disk";
import { INITIAL_PROGRESS, ProgressSnapshot, progressLine, progressStep, ProgressState } from "../../core/weights/progress";
import { parsePruneList, selectPrune, StagedFolder } from "../../core/weights/prune";
import { parseWeightsPoll, stageWeightsArgv, weightsPlansOf, weightsPollArgv } from "../../core/weights/staging";
import { parseWeightsBoxRead, previewWeights } from "../../core/weights/preview";
import { weightsProgramPath, weightsStateDir, weightsTokenFile, weightsUnitName } from "../../core/weights/weights-layout";
import { withField } from "./fixtures";

const A = "0123456789abcdef0123456789abcdef01234567";
const B = "89abcdef0123456789abcdef0123456789abcdef";
const GiB = 1024 ** 3;

describe("weights as code: the disk arithmetic (core/weights/disk.ts)", () => {
    it("counts what a download fetches: the expected files less those already there with their size", () => {
        const plan = fetchPlan(
            [
                { path: "a", size: 10 },
                { path: "b", size: 20 },
                { path: "c", size: 30 },
            ],
            [
                { path: "a", size: 10 },
                { path: "b", size: 7 },
            ],
        );
        assert.deepEqual(plan, { files: 3, bytes: 60, presentFiles: 1, presentBytes: 10, fetchFiles: 2, fetchBytes: 50 });
    });

    it("passes when the bytes fit, with what is left", () => {
        assert.deepEqual(diskVerdict({ what: "x", root: "/models", needBytes: 10, freeBytes: 25, prunable: [] }), { ok: true, leftBytes: 15 });
    });

    it("refuses a short disk with bytes needed, bytes free, and what the prune would free, folder by folder", () => {
        const v = diskVerdict({
            what: "drafter org/d@0123456789ab",
            root: "/models",
            needBytes: 52 * GiB,
            freeBytes: 40 * GiB,
            prunable: [
                { dir: `/models/org--m/${A}`, bytes: 8 * GiB },
                { dir: `/models/org--d/${B}`, bytes: 6 * GiB },
            ],
        });
        assert.equal(v.ok, false);
        assert.equal(
            v.ok ? "" : v.message,
            [
                `not enough disk for drafter org/d@0123456789ab in /models: it needs 52.0 GiB (${52 * GiB} bytes), 40.0 GiB (${40 * GiB} bytes) are free: 12.0 GiB short. Nothing was downloaded and nothing stopped.`,
                `Pruning would free 14.0 GiB (${14 * GiB} bytes), enough; the stack prunes only after a good rollout, so remove these now, or lower service.weights.keepPrevious:`,
                `    /models/org--m/${A} (8.0 GiB)`,
                `    /models/org--d/${B} (6.0 GiB)`,
            ].join("\n"),
        );
        const none = diskVerdict({ what: "m", root: "/models", needBytes: 3, freeBytes: 1, prunable: [] });
        assert.match(none.ok ? "" : none.message, /Pruning would free nothing .*: free 2 bytes on the box\.$/);
        assert.equal(formatBytes(1536), "1.5 KiB");
    });
});

describe("weights as code: which staged revisions the prune removes (core/weights/prune.ts)", () => {
    const folder = (repo: string, rev: string, startedAt: number, o: Partial<StagedFolder> = {}): StagedFolder => ({
        dir: `/models/${repo}/${rev}`,
        repoFolder: repo,
        revision: rev,
        stagedBy: "sglang-serve/kpro5",
        startedAt,
        staged: true,
        named: false,
        bytes: 100,
        ...o,
    });
    const revs = ["1", "2", "3", "4"].map((c) => c.repeat(40));

    it("keeps the serving revision, the named ones and per repository the keepPrevious newest; removes the rest, each with why", () => {
        const folders = [
            folder("org--m", revs[0]!, 1),
            folder("org--m", revs[1]!, 2),
            folder("org--m", revs[2]!, 3, { named: true }),
            folder("org--m", revs[3]!, 4),
            folder("org--d", revs[0]!, 1),
            folder("org--d", revs[1]!, 2),
        ];
        const s = selectPrune({ folders, serving: [`/models/org--m/${revs[3]}`, `/models/org--d/${revs[1]}`], owner: "sglang-serve/kpro5", keepPrevious: 1 });
        assert.deepEqual(s.keep.map((c) => [c.dir.slice(8, 14) + c.dir.slice(-1), c.why]).sort(), [
            ["org--d1", "one of the 1 newest previous revisions (service.weights.keepPrevious)"],
            ["org--d2", "serving"],
            ["org--m2", "one of the 1 newest previous revisions (service.weights.keepPrevious)"],
            ["org--m3", "a unit on the box (or its .previous) names it"],
            ["org--m4", "serving"],
        ]);
        assert.deepEqual(
            s.remove.map((c) => c.dir),
            [`/models/org--m/${revs[0]}`],
        );
    });

    it("never removes another stack's folder, and removes this stack's unfinished staging that nothing serves", () => {
        const s = selectPrune({
            folders: [folder("org--m", revs[0]!, 1, { stagedBy: "sglang-serve/other" }), folder("org--m", revs[1]!, 2, { staged: false })],
            serving: [],
            owner: "sglang-serve/kpro5",
            keepPrevious: 5,
        });
        assert.deepEqual(
            s.keep.map((c) => c.why),
            ["staged by sglang-serve/other, not by this stack"],
        );
        assert.deepEqual(
            s.remove.map((c) => c.why),
            ["its staging never finished (no manifest)"],
        );
    });

    it("reads the box's listing, leaving out a line whose marker does not parse (its folder is never removed)", () => {
        const out =
            `/models/org--m/${revs[0]}\t1\t0\t1234\t{"repo": "org/m", "revision": "${revs[0]}", "stagedBy": "sglang-serve/kpro5", "startedAt": 17.5}\n` +
            `/models/org--m/${revs[1]}\t0\t1\t99\tnot json\n`;
        assert.deepEqual(parsePruneList(out), [
            {
                dir: `/models/org--m/${revs[0]}`,
                repoFolder: "org--m",
                revision: revs[0],
                stagedBy: "sglang-serve/kpro5",
                startedAt: 17.5,
                staged: true,
                named: false,
                bytes: 1234,
            },
        ]);
    });
});

describe("weights as code: the progress lines (core/weights/progress.ts)", () => {
    const snap = (at: number, bytesDone: number, o: Partial<ProgressSnapshot> = {}): ProgressSnapshot => ({
        phase: "downloading",
        files: 9,
        filesDone: 0,
        bytes: 10 * GiB,
        bytesDone,
        at,
        ...o,
    });

    it("says files, bytes done of the total, rate and ETA", () => {
        assert.equal(
            progressLine(snap(0, 2 * GiB, { filesDone: 3 }), 100 * 1024 * 1024),
            "downloading 3/9 files, 2.0 GiB of 10.0 GiB (20.0%), 100.0 MiB/s, ETA 1 min 22 s",
        );
        assert.equal(
            progressLine(snap(0, 2 * GiB, { phase: "verifying" }), 0),
            "verifying 2.0 GiB of 10.0 GiB against the Hub's hashes (20.0%), 0 bytes/s, stalled",
        );
    });

    it("says a line at the first snapshot, at each phase, for completed files at most every 5 s, and at least every 15 s, with the rate of the box's own clock", () => {
        let state: ProgressState = INITIAL_PROGRESS;
        const said: Array<[number, string]> = [];
        // A poll every second (the driver's clock) of a box that writes 50 MiB/s; a file completes at 3 s, 4 s and 30 s.
        for (let t = 0; t <= 40; t++) {
            const filesDone = t >= 30 ? 3 : t >= 4 ? 2 : t >= 3 ? 1 : 0;
            const step = progressStep(state, snap(1000 + t, t * 50 * 1024 * 1024, { filesDone }), t * 1000);
            state = step.state;
            if (step.line) said.push([t, step.line]);
        }
        // 3 and 4 s are too soon after the first line; the files done by then are said at 5 s; then 15 s of silence; the third file at 30 s.
        assert.deepEqual(
            said.map(([t]) => t),
            [0, 5, 20, 30],
        );
        assert.match(said[1]![1], /^downloading 2\/9 files, 250\.0 MiB of 10\.0 GiB \(2\.4%\), 50\.0 MiB\/s, ETA 3 min 20 s$/);
        const verify = progressStep(state, snap(1041, 0, { phase: "verifying" }), 41_000);
        assert.match(verify.line ?? "", /^verifying 0 bytes of 10\.0 GiB/);
    });
});

/** A DFLASH drafter from the source org/d at B, through a mirror on loopback. */
function dflashFromMirror(): Record<string, unknown> {
    return {
        algorithm: "DFLASH",
        numSteps: 1,
        eagleTopk: 1,
        numDraftTokens: 16,
        draftModelSource: { hf: "org/d", revision: B, endpoint: "http://127.0.0.1:8090/" },
    };
}

describe("weights as code: the staging's unit and poll (core/weights/staging.ts)", () => {
    function plans() {
        const r = validateStackConfig(
            withField((raw) => {
                const s = raw.service as unknown as Record<string, Record<string, unknown>>;
                s.model = { servedName: "tiny", source: { hf: "org/m", revision: A, allowPatterns: ["*.json", "*.safetensors"] } };
                s.speculative = dflashFromMirror();
                s.weights = { root: "/srv/models", keepPrevious: 2 };
            }),
        );
        assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.issues));
        return weightsPlansOf(r.config.servers[0]!);
    }

    it("plans each declared source, the model first, with its folder, endpoint and the service's budget", () => {
        const [model, drafter] = plans();
        assert.deepEqual(model, {
            role: "model",
            hf: "org/m",
            revision: A,
            allowPatterns: ["*.json", "*.safetensors"],
            endpoint: "https://huggingface.co",
            dir: `/srv/models/org--m/${A}`,
            root: "/srv/models",
            keepPrevious: 2,
            downloadTimeoutSeconds: 86400,
        });
        assert.equal(drafter!.endpoint, "http://127.0.0.1:8090");
        assert.equal(drafter!.dir, `/srv/models/org--d/${B}`);
    });

    it("starts the program in a transient unit after emptying its state folder; the token only as a file's path, never in argv", () => {
        const [model] = plans();
        const argv = stageWeightsArgv(model!, {
            unitName: "sglang-qwen.service",
            owner: "sglang-serve/kpro5",
            python: "/opt/hub/bin/python3",
            programPath: weightsProgramPath("ab".repeat(32)),
            tokenFile: weightsTokenFile("sglang-qwen.service", "model"),
        });
        assert.deepEqual(argv.slice(0, 7), [
            "sh",
            "-c",
            'rm -rf -- "$1" && mkdir -p -m 0700 -- "$1" && printf "%s\\n" "$2" > "$1/target" && shift 2 && exec "$@"',
            "sh",
            "/run/sglang-serve/sglang-qwen-weights-model",
            model!.dir,
            "systemd-run",
        ]);
        assert.ok(argv.includes("--unit=sglang-qwen-weights-model.service"));
        assert.ok(argv.includes("--property=RuntimeMaxSec=86400"));
        assert.ok(argv.includes("--setenv=HF_HOME=/run/sglang-serve/sglang-qwen-weights-model/hf-home"));
        const program = argv.indexOf("/opt/hub/bin/python3");
        assert.deepEqual(argv.slice(program, program + 4), [
            "/opt/hub/bin/python3",
            "-I",
            "/var/lib/sglang-serve/weights/sglang-serve-weights-abababababababab.py",
            "stage",
        ]);
        assert.deepEqual(argv.slice(argv.indexOf("--allow")), [
            "--allow",
            "*.json",
            "--allow",
            "*.safetensors",
            "--env-file",
            "/run/sglang-serve/sglang-qwen-weights-model.env",
        ]);
        assert.equal(weightsUnitName("sglang-qwen.service", "drafter"), "sglang-qwen-weights-drafter.service");
        assert.equal(weightsStateDir("sglang-qwen.service", "drafter"), "/run/sglang-serve/sglang-qwen-weights-drafter");
        assert.deepEqual(weightsPollArgv(model!, "sglang-qwen.service").slice(3), [
            "sh",
            "/run/sglang-serve/sglang-qwen-weights-model",
            "sglang-qwen-weights-model.service",
        ]);
    });

    it("reads a poll: the progress snapshot, the log's lines, the exit status and result once written, the folder staged, the unit's state", () => {
        const sep = "---sglang-serve-weights---";
        const running = parseWeightsPoll(
            `{"phase": "downloading", "files": 9, "filesDone": 2, "bytes": 100, "bytesDone": 40, "at": 5.5}\n${sep}\nline one\nline two\n\n${sep}\n\n${sep}\n\n${sep}\n/models/m/abc\n${sep}\nactive\n`,
        );
        assert.deepEqual(running, {
            progress: { phase: "downloading", files: 9, filesDone: 2, bytes: 100, bytesDone: 40, at: 5.5 },
            lines: ["line one", "line two"],
            target: "/models/m/abc",
            unitState: "active",
        });
        const ended = parseWeightsPoll(`\n${sep}\n\n${sep}\n66\n\n${sep}\n{"exitStatus": 66, "error": "mismatch"}\n${sep}\n\n${sep}\ninactive\n`);
        assert.deepEqual(ended, { lines: [], exitStatus: 66, result: { exitStatus: 66, error: "mismatch" }, unitState: "inactive" });
    });
});

describe("weights as code: the stack's huggingface_hub venv (core/weights/hub-venv.ts)", () => {
    it("pins the huggingface_hub release sglang-release/DEPS gives the SGLang venvs", () => {
        const deps = fs.readFileSync(path.join(__dirname, "..", "..", "sglang-release", "DEPS"), "utf8");
        assert.match(deps, new RegExp(`^all huggingface-hub==${HUB_CLIENT_RELEASE.replace(/\./g, "\\.")}$`, "m"));
    });

    it("stages it beside the SGLang venvs with their sources (not their pins), as huggingface-hub-<release> (not a venv-* folder: their prune never takes it), checked by its package metadata", () => {
        const plan = hubVenvPlan({ venv: VenvSchema.parse({ root: "/opt/sglang", indexUrl: "https://pypi.example/simple", pins: ["torch==2.9.1"] }) });
        assert.equal(plan.dir, "/opt/sglang/huggingface-hub-1.33.0");
        assert.equal(plan.python, "/opt/sglang/huggingface-hub-1.33.0/bin/python3");
        assert.deepEqual(plan.requirements, ["huggingface-hub==1.33.0"]);
        assert.deepEqual(plan.pipOptions, ["--index-url=https://pypi.example/simple"]);
        assert.deepEqual(installCheckArgv(plan), [plan.python, "-I", "-c", `import importlib.metadata as md; print(md.version("huggingface-hub"))`]);
        assert.equal(hubVenvPlan({}).dir, "/opt/sglang-serve/huggingface-hub-1.33.0");
    });

    /** The field config (service.python, no venv section) serving a drafter from a source, with service.weights as given. */
    function withWeights(weights: Record<string, unknown>, venv?: Record<string, unknown>) {
        return withField((raw) => {
            const s = raw.service as unknown as Record<string, Record<string, unknown>>;
            s.speculative = dflashFromMirror();
            s.weights = weights;
            if (venv) {
                delete s.python;
                s.venv = venv;
            }
        });
    }
    const hubPlanOf = (raw: unknown) => {
        const r = validateStackConfig(raw);
        assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.issues));
        return hubVenvPlan(r.config.servers[0]!);
    };

    it("installs from service.weights.pip without a venv section: a box without PyPI names its wheelhouse (or index) there, under /opt/sglang-serve", () => {
        const plan = hubPlanOf(withWeights({ pip: { systemSitePackages: true, findLinks: ["/srv/wheels"], pipArgs: ["--no-index", "--no-deps"] } }));
        assert.equal(plan.dir, "/opt/sglang-serve/huggingface-hub-1.33.0");
        assert.equal(plan.systemSitePackages, true);
        assert.deepEqual(plan.pipOptions, ["--find-links=/srv/wheels", "--no-index", "--no-deps"]);
        assert.deepEqual(plan.requirements, ["huggingface-hub==1.33.0"]);
        assert.deepEqual(hubPlanOf(withWeights({ pip: { indexUrl: "https://pypi.example/simple" } })).pipOptions, ["--index-url=https://pypi.example/simple"]);
    });

    it("without service.weights.pip takes service.venv's sources, and without either the box's pip configuration", () => {
        const venv = { root: "/opt/sglang", indexUrl: "https://pypi.example/simple", findLinks: ["/srv/wheels"], systemSitePackages: true };
        const fromVenv = hubPlanOf(withWeights({}, venv));
        assert.equal(fromVenv.dir, "/opt/sglang/huggingface-hub-1.33.0");
        assert.deepEqual(fromVenv.pipOptions, ["--index-url=https://pypi.example/simple", "--find-links=/srv/wheels"]);
        assert.equal(fromVenv.systemSitePackages, true);
        const bare = hubPlanOf(withWeights({}));
        assert.deepEqual(bare.pipOptions, []);
        assert.equal(bare.systemSitePackages, false);
    });

    it("service.weights.pip replaces service.venv's sources as a whole (its index is not merged in), in service.venv's root", () => {
        const plan = hubPlanOf(
            withWeights(
                { pip: { findLinks: ["/srv/hub-wheels"] } },
                { root: "/opt/sglang", indexUrl: "https://pypi.example/simple", systemSitePackages: true, pipArgs: ["--no-deps"] },
            ),
        );
        assert.equal(plan.dir, "/opt/sglang/huggingface-hub-1.33.0");
        assert.deepEqual(plan.pipOptions, ["--find-links=/srv/hub-wheels"]);
        assert.equal(plan.systemSitePackages, false);
    });

    it("holds service.weights.pip to the rules of service.venv's sources, each refusal naming its field", () => {
        for (const [pip, key, reason] of [
            [{ indexUrl: "http://pypi.example/simple" }, "service.weights.pip.indexUrl", /is plain http:\/\/ to pypi\.example, which is not a loopback host/],
            [{ findLinks: ["/srv/wheels", "/srv/wheel house"] }, "service.weights.pip.findLinks[1]", /must be an absolute path .*or an https:\/\/ URL/],
            [{ pipArgs: ["--index-url=https://pypi.example/simple"] }, "service.weights.pip.pipArgs[0]", /is --index-url, which pipArgs may not carry/],
            [{ extraIndexUrls: ["https://deploy:Pw0rdXyz@pypi.example/simple"] }, "service.weights.pip.extraIndexUrls[0]", /must be a URL without credentials/],
            [{ index: "https://pypi.example/simple" }, "service.weights.pip", /index/],
        ] as const) {
            const r = validateStackConfig(withWeights({ pip }));
            assert.ok(!r.ok, `${key} was taken`);
            const text = formatConfigIssues(r.issues, "kpro5");
            assert.match(text, new RegExp(`${key.replace(/[.[\]]/g, "\\$&")}[ :.]`), text);
            assert.match(text, reason, text);
            assert.doesNotMatch(text, /Pw0rdXyz/);
        }
    });
});

describe("weights as code: the preview's look at a source (core/weights/preview.ts)", () => {
    const plan = {
        role: "model" as const,
        hf: "org/m",
        revision: A,
        allowPatterns: ["*.json", "*.safetensors"],
        endpoint: "https://huggingface.co",
        dir: `/models/org--m/${A}`,
        root: "/models",
        keepPrevious: 1,
        downloadTimeoutSeconds: 86400,
    };
    const hub = [
        { path: "config.json", size: 1000, blobId: "x" },
        { path: "model.safetensors", size: 5 * GiB, blobId: "y", lfs: { sha256: "z", size: 5 * GiB } },
        { path: "original/consolidated.pth", size: 5 * GiB, blobId: "w" },
    ];

    it("reads the box's answer: free bytes, whether staged, the files already there", () => {
        const sep = "---sglang-serve-weights-read---";
        assert.deepEqual(parseWeightsBoxRead(`123456\n${sep}\nabsent\n${sep}\n1000 config.json\0` + "7 odd name\n.bin\0"), {
            freeBytes: 123456,
            staged: false,
            present: [
                { path: "config.json", size: 1000 },
                { path: "odd name\n.bin", size: 7 },
            ],
        });
    });

    it("says what up fetches after the patterns and what is there, and the disk left after; refuses a short disk; nothing for a staged revision", () => {
        const fetch = previewWeights(plan, hub, { freeBytes: 8 * GiB, staged: false, present: [{ path: "config.json", size: 1000 }] });
        assert.equal(
            fetch.kind === "fetch" ? fetch.line : "",
            `up stages the model org/m@0123456789ab in /models/org--m/${A} before the stop: 1 files, 5.0 GiB (1 of 2 already there); 3.0 GiB free on /models after`,
        );
        const short = previewWeights(plan, hub, { freeBytes: 4 * GiB, staged: false, present: [] });
        assert.match(
            short.kind === "short" ? short.message : "",
            /^not enough disk for model org\/m@0123456789ab in \/models: it needs 5\.0 GiB \(\d+ bytes\), 4\.0 GiB \(\d+ bytes\) are free/,
        );
        assert.equal(previewWeights(plan, hub, { freeBytes: 0, staged: true, present: [] }).kind, "staged");
    });
});
