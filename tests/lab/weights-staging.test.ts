// Weights as code on a real box (issue 33 items 2, 3, 4 and 6): the stack's
// staging (remote/weights-staging.ts) runs the box-side program
// (weights/sglang-serve-weights.py) in container 129 of the lab, as a
// transient unit of the container's real systemd 252, through the lab's
// Proxmox host (pct exec), with the container's huggingface_hub 1.33.0,
// downloading from the lab's real Hugging Face mirror (olah offline behind
// its front, lab/hf-mirror) on a loopback address: the container shares this
// machine's network. The expected bytes come from the repositories'
// definition (lab/hf-mirror/lab-repos.ts), the expected hashes are computed
// here from those bytes.
import assert from "node:assert/strict";
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as os from "os";
import { LabInfo } from "../../lab/control";
import { clearMirrorFaults, corruptBlob, CORRUPT_BYTES, setMirrorFaults } from "../../lab/hf-mirror/faults";
import { filesAt, LAB_DRAFTER, LAB_MODEL, LabRepo, labRepos } from "../../lab/hf-mirror/lab-repos";
import { accessLog, ensureHfMirrorInstalled, RunningMirror, startMirror, writeMirrorRepos } from "../../lab/hf-mirror/mirror";
import { manifestDigest } from "../../core/weights/manifest";
import { weightsPlansOf, WeightsPlan } from "../../core/weights/staging";
import { parseWeightsBoxRead, previewWeights, weightsBoxReadArgv } from "../../core/weights/preview";
import { ServiceSchema, VenvSchema } from "../../core/config/schema";
import { hubVenvPlan } from "../../core/weights/hub-venv";
import { stageVenv } from "../../remote/venv-staging";
import { RemoteHost } from "../../remote/remote-host";
import { SshPool } from "../../remote/ssh-pool";
import { checkStagedWeights, pruneWeights, stageWeights, WeightsStagingFailed, WeightsStageOptions } from "../../remote/weights-staging";
import { resolveRevision, readRevisionFiles } from "../../remote/weights-revision";
import { fieldConfig } from "../core/fixtures";
import { lab, labContainerRemote, labTestOctet, ok, LAB_WAIT_MS } from "./lab-fixture";

const MIRROR_ADDRESS = `127.${labTestOctet(__filename)}.141.1`;
/** Where the stack's huggingface_hub venv is staged in the container. */
const HUB_ROOT = "/opt/sglang-serve-hub";
const ROOT = "/models/hub";
const UNIT = "sglang-weights-test.service";
const OWNER = "sglang-serve/lab-weights";
const SHARD_1 = "model-00001-of-00002.safetensors";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const repoById = (id: string): LabRepo => labRepos().find((r) => r.id === id)!;

describe("weights as code on the lab's box: staged, verified and checked against the lab's Hugging Face mirror", function () {
    this.timeout(4 * LAB_WAIT_MS);
    let info: LabInfo;
    let pool: SshPool;
    let remote: RemoteHost;
    let dir: string;
    let commits: Record<string, string[]>;
    let mirror: RunningMirror;
    let hubPython: string;
    const mirrorOptions = () => ({ dir: path.join(dir, "mirror"), address: MIRROR_ADDRESS, port: 8090, olahPort: 8091 });

    before(async function () {
        this.timeout(600_000);
        ensureHfMirrorInstalled();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-weights-"));
        commits = writeMirrorRepos(path.join(dir, "mirror"));
        [mirror, info] = await Promise.all([startMirror(mirrorOptions()), lab()]);
        pool = new SshPool({ log: () => undefined });
        remote = labContainerRemote(info, pool);
        // The stack's huggingface_hub venv, staged as the stack stages venvs (pip in a transient unit, checked, marked). The lab has no
        // package index: the venv sees the container's system site, whose .pth names the deps site of the SGLang venvs, where
        // huggingface_hub 1.33.0 and its dependencies are installed, so pip finds the requirement satisfied (--no-index; --no-deps
        // since that site lacks hf-xet, which huggingface_hub requires on x86_64 and a box's pip installs from PyPI).
        await ok("container", `rm -rf ${HUB_ROOT} ${ROOT}`);
        const hubPlan = hubVenvPlan({ venv: VenvSchema.parse({ root: HUB_ROOT, systemSitePackages: true, pipArgs: ["--no-index", "--no-deps"] }) });
        hubPython = hubPlan.python;
        await stageVenv(remote, hubPlan, UNIT, OWNER, { say: () => undefined, pollIntervalMs: 250 });
        assert.equal((await ok("container", `${hubPython} -I -c 'import huggingface_hub; print(huggingface_hub.__version__)'`)).trim(), "1.33.0");
    });
    after(async () => {
        await pool?.closeAll();
        await mirror?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });
    afterEach(() => clearMirrorFaults(mirror.paths));

    /** The plans of a server serving `model` at commit `m`, with the drafter at commit `d`. */
    function plans(m: number, d: number): { model: WeightsPlan; drafter: WeightsPlan } {
        const raw = fieldConfig().service as unknown as Record<string, Record<string, unknown>>;
        const service = ServiceSchema.parse({
            ...raw,
            model: { servedName: "tiny", source: { hf: LAB_MODEL, revision: commits[LAB_MODEL]![m], endpoint: mirror.endpoint } },
            speculative: {
                algorithm: "DFLASH",
                numSteps: 1,
                eagleTopk: 1,
                numDraftTokens: 16,
                draftModelSource: { hf: LAB_DRAFTER, revision: commits[LAB_DRAFTER]![d], endpoint: mirror.endpoint },
            },
            weights: { root: ROOT, keepPrevious: 0 },
        });
        const [model, drafter] = weightsPlansOf(service);
        return { model: model!, drafter: drafter! };
    }

    function options(said: string[], extra: Partial<WeightsStageOptions> = {}): WeightsStageOptions {
        return { unitName: UNIT, owner: OWNER, python: hubPython, say: (m) => said.push(m), pollIntervalMs: 250, everyMs: 2000, ...extra };
    }

    /** The manifest digest of a revision, computed from the repository's definition. */
    const expectedDigest = (repo: string, index: number) =>
        manifestDigest([...filesAt(repoById(repo), index)].map(([p, b]) => ({ path: p, size: b.length, sha256: sha256(b) })));

    const downloads = () => accessLog(mirror.paths).filter((e) => e.method === "GET" && e.url.includes("/resolve/"));
    const fileOf = (url: string) => decodeURIComponent(url.slice(url.lastIndexOf("/") + 1));

    it("the preview's reads: a branch and a tag resolve to their commits, and a commit's files come with sizes and hashes", async () => {
        const [a, b] = commits[LAB_MODEL]!;
        assert.equal(await resolveRevision(mirror.endpoint, LAB_MODEL, "main"), b);
        assert.equal(await resolveRevision(mirror.endpoint, LAB_MODEL, "v1"), a);
        const files = await readRevisionFiles(mirror.endpoint, LAB_MODEL, a!);
        const expected = filesAt(repoById(LAB_MODEL), 0);
        assert.deepEqual(
            files.files.map((f) => [f.path, f.size, f.lfs?.sha256]),
            [...expected].map(([p, bytes]) => [p, bytes.length, p.endsWith(".safetensors") ? sha256(bytes) : undefined]),
        );
        await assert.rejects(resolveRevision(mirror.endpoint, LAB_MODEL, "no-such-branch"), /answered 404 RevisionNotFound/);
    });

    it("stages the model's revision A in a transient unit: downloaded, every file verified, the manifest written last with the repository's digest; progress said", async () => {
        const { model } = plans(0, 0);
        const said: string[] = [];
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const staged = await stageWeights(remote, model, options(said));
        assert.equal(staged.fetched, true);
        assert.equal(staged.manifest.digest, expectedDigest(LAB_MODEL, 0));
        assert.equal(staged.manifest.revision, commits[LAB_MODEL]![0]);
        assert.equal(model.dir, `${ROOT}/sglang-lab--Tiny-Qwen3/${commits[LAB_MODEL]![0]}`);
        assert.deepEqual(
            staged.manifest.files.map((f) => f.path),
            [...filesAt(repoById(LAB_MODEL), 0).keys()],
        );
        // The files where the unit will read them, byte for byte.
        const onBox = await ok("container", `cd ${model.dir} && sha256sum ${SHARD_1} config.json`);
        assert.match(onBox, new RegExp(sha256(filesAt(repoById(LAB_MODEL), 0).get(SHARD_1)!)));
        assert.ok(
            said.some((l) => l.includes("staging the model sglang-lab/Tiny-Qwen3@") && l.includes("while the running server serves")),
            said.join("\n"),
        );
        assert.ok(
            said.some((l) => /verified against the Hub's hashes; manifest [0-9a-f]{16}/.test(l)),
            said.join("\n"),
        );
        assert.equal(downloads().length, filesAt(repoById(LAB_MODEL), 0).size);
        // The unit was transient: collected once it ended.
        assert.match((await remote.run(["systemctl", "is-active", "sglang-weights-test-weights-model.service"])).stdout, /inactive|unknown/);
    });

    it("the preview's look: what up will fetch for a revision not staged (files, bytes, disk left after), nothing for one staged", async () => {
        const { model: a } = plans(0, 0);
        const { model: b } = plans(1, 0);
        const look = async (plan: WeightsPlan) => {
            const hub = await readRevisionFiles(plan.endpoint, plan.hf, plan.revision);
            return previewWeights(plan, hub.files, parseWeightsBoxRead((await remote.run(weightsBoxReadArgv(plan))).stdout));
        };
        assert.deepEqual(await look(a), {
            kind: "staged",
            line: `the model sglang-lab/Tiny-Qwen3@${a.revision.slice(0, 12)} is staged in ${a.dir}: up fetches nothing`,
        });
        const preview = await look(b);
        assert.equal(preview.kind, "fetch");
        assert.match(
            preview.kind === "fetch" ? preview.line : "",
            new RegExp(
                `^up stages the model sglang-lab/Tiny-Qwen3@${b.revision.slice(0, 12)} in ${b.dir} before the stop: 9 files, 15\\.0 MiB; [0-9.]+ GiB free on /models/hub after$`,
            ),
        );
    });

    it("a revision already staged costs nothing: no unit, no download", async () => {
        const { model } = plans(0, 0);
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const said: string[] = [];
        const staged = await stageWeights(remote, model, options(said));
        assert.equal(staged.fetched, false);
        assert.deepEqual(downloads(), []);
        assert.match(said.join("\n"), /is staged already in .* nothing to fetch/);
    });

    it("a byte changed in a staged revision is found by the manifest's cheap check (its mtime) and, with the mtime put back, by the full re-hash, naming the file", async () => {
        const { model } = plans(0, 0);
        const file = `${model.dir}/${SHARD_1}`;
        const mtime = (await ok("container", `stat -c %.9Y ${file}`)).trim();
        await ok("container", `printf '\\377' | dd of=${file} bs=1 seek=1000000 conv=notrunc status=none`);
        const cheap = await checkStagedWeights(remote, model.dir, { rehash: false });
        assert.equal(cheap.kind, "staged");
        assert.deepEqual(cheap.kind === "staged" ? cheap.drift.map((d) => [d.path, d.what]) : [], [[SHARD_1, "mtime"]]);
        await ok("container", `touch -d @${mtime} ${file}`);
        const again = await checkStagedWeights(remote, model.dir, { rehash: false });
        assert.deepEqual(again.kind === "staged" ? again.drift : ["absent"], []);
        const full = await checkStagedWeights(remote, model.dir, { rehash: true });
        const good = sha256(filesAt(repoById(LAB_MODEL), 0).get(SHARD_1)!);
        assert.deepEqual(full.kind === "staged" ? full.drift.map((d) => [d.path, d.what, d.expected]) : [], [[SHARD_1, "sha256", good]]);
        // A staging of a changed revision refuses to stage over it, naming the file.
        await ok("container", `printf 'x' >> ${file}`);
        await assert.rejects(stageWeights(remote, model, options([])), (e: Error) => {
            assert.match(e.message, new RegExp(`files changed since they were verified.*\\n.*${SHARD_1} is \\d+ bytes, the manifest says`, "s"));
            return true;
        });
        await ok("container", `rm -rf ${model.dir}`);
    });

    it("a corrupted blob on the mirror fails the staging naming the file and both hashes, quarantines it, writes no manifest; once the mirror is right, only that file is fetched again", async () => {
        const { drafter } = plans(0, 1);
        const b = commits[LAB_DRAFTER]![1]!;
        const corrupt = corruptBlob(mirror.paths, LAB_DRAFTER, b, "model.safetensors");
        const good = filesAt(repoById(LAB_DRAFTER), 1).get("model.safetensors")!;
        const bad = Buffer.from(good);
        for (let i = corrupt.offset; i < corrupt.offset + CORRUPT_BYTES; i++) bad[i] = bad[i]! ^ 0xff;
        try {
            const said: string[] = [];
            await assert.rejects(stageWeights(remote, drafter, options(said)), (e: Error) => {
                assert.ok(e instanceof WeightsStagingFailed);
                assert.match(e.message, /1 file\(s\) do not match the Hub's hashes; no manifest was written\. Nothing was stopped/);
                assert.ok(
                    e.message.includes(`model.safetensors: the Hub's sha256 (LFS) is ${corrupt.oid}, the downloaded file's is ${sha256(bad)}`),
                    e.message,
                );
                assert.ok(
                    e.message.includes(`quarantined model.safetensors to ${ROOT}/sglang-lab--Tiny-Qwen3-DFlash/.quarantine/${b}/model.safetensors`),
                    e.message,
                );
                return true;
            });
            assert.equal(corrupt.oid, sha256(good));
            assert.equal((await checkStagedWeights(remote, drafter.dir, { rehash: false })).kind, "absent");
            assert.equal(
                (await ok("container", `sha256sum < ${ROOT}/sglang-lab--Tiny-Qwen3-DFlash/.quarantine/${b}/model.safetensors`)).split(" ")[0],
                sha256(bad),
            );
        } finally {
            corrupt.restore();
        }
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const staged = await stageWeights(remote, drafter, options([]));
        assert.equal(staged.manifest.digest, expectedDigest(LAB_DRAFTER, 1));
        assert.deepEqual(
            downloads().map((e) => fileOf(e.url)),
            ["model.safetensors"],
        );
    });

    it("a mirror that dies mid-download and stays down fails the staging; the next staging resumes: the files the first completed are not fetched again", async () => {
        const { model } = plans(1, 0);
        setMirrorFaults(mirror.paths, { dieMidDownload: { file: SHARD_1, afterBytes: 11 * 1024 * 1024 } });
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const said: string[] = [];
        await assert.rejects(stageWeights(remote, model, options(said)), (e: Error) => {
            assert.match(e.message, /the staging exited 1 .*the next up resumes it \(complete files are kept\)/);
            return true;
        });
        const first = downloads().filter((e) => !e.died && e.status === 200);
        mirror = await startMirror(mirrorOptions());
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const staged = await stageWeights(remote, model, options([]));
        assert.equal(staged.manifest.digest, expectedDigest(LAB_MODEL, 1));
        const second = downloads().map((e) => fileOf(e.url));
        assert.ok(second.includes(SHARD_1), second.join(", "));
        // Each file came in exactly one of the runs.
        assert.deepEqual([...first.map((e) => fileOf(e.url)), ...second].sort(), [...filesAt(repoById(LAB_MODEL), 1).keys()].sort());
    });

    it("the staging outlives the run that started it: a run that stops polling leaves the unit downloading, and the next run finds it staged or follows it to its end", async () => {
        const { drafter } = plans(0, 0);
        const said: string[] = [];
        // The first run gives up after its first poll, as a deploy whose SSH session dropped would.
        const gaveUp = new Error("the deploy went away");
        let polls = 0;
        await assert.rejects(
            stageWeights(
                remote,
                drafter,
                options(said, {
                    sleep: async (ms) => {
                        if (++polls > 1) throw gaveUp;
                        await new Promise((r) => setTimeout(r, ms));
                    },
                }),
            ),
            (e) => e === gaveUp,
        );
        const staged = await stageWeights(remote, drafter, options(said));
        assert.equal(staged.manifest.digest, expectedDigest(LAB_DRAFTER, 0));
        assert.equal(said.filter((l) => /staging the drafter .* while the running server serves/.test(l)).length, 1, said.join("\n"));
    });

    it("a disk too small for the revision is refused before anything is fetched, with bytes needed and bytes free", async function () {
        const small = "/models/hub-small";
        // A size-limited mount on the models root, as a Proxmox mount point with size= would be (lab/README.md, the fault knobs).
        const mounted = await remote.run(["sh", "-c", `mkdir -p ${small} && mount -t tmpfs -o size=4m sglang-lab-small-disk ${small}`]);
        if (mounted.code !== 0) this.skip(); // the container may not mount (no CAP_SYS_ADMIN): the refusal's arithmetic is tested in tests/remote
        try {
            const { model } = plans(0, 0);
            const plan = { ...model, root: small, dir: `${small}/sglang-lab--Tiny-Qwen3/${commits[LAB_MODEL]![0]}` };
            fs.rmSync(mirror.paths.accessLog, { force: true });
            await assert.rejects(stageWeights(remote, plan, options([])), (e: Error) => {
                assert.match(
                    e.message,
                    new RegExp(
                        `not enough disk for model sglang-lab/Tiny-Qwen3@[0-9a-f]{12} in ${small}: it needs 15\\.0 MiB \\(15740152 bytes\\), .* \\((\\d+) bytes\\) are free`,
                    ),
                );
                const free = Number(/\((\d+) bytes\) are free/.exec(e.message)![1]);
                assert.ok(free <= 4 * 1024 * 1024, e.message);
                return true;
            });
            assert.deepEqual(downloads(), []);
        } finally {
            await remote.run(["sh", "-c", `umount ${small}; rmdir ${small}`]);
        }
    });

    it("the prune keeps the serving revisions and those a unit names, removes this stack's others saying each, and never touches a folder it did not stage", async () => {
        const { model: a } = plans(0, 0);
        const { model: b, drafter } = plans(1, 0);
        const { drafter: drafterB } = plans(0, 1);
        await stageWeights(remote, a, options([]));
        await stageWeights(remote, b, options([]));
        const handMade = `${ROOT}/sglang-lab--Tiny-Qwen3/by-hand`;
        await ok("container", `mkdir -p ${handMade} && echo x > ${handMade}/config.json`);
        const said: string[] = [];
        const removed = await pruneWeights(remote, {
            root: ROOT,
            owner: OWNER,
            serving: [b.dir, drafter.dir],
            keepPrevious: 0,
            unitName: UNIT,
            say: (m) => said.push(m),
        });
        // The drafter's revision B (staged by the corrupted-blob test) goes too: the drafter serves A.
        assert.deepEqual(removed.sort(), [a.dir, drafterB.dir].sort());
        assert.match(said.join("\n"), new RegExp(`removed the staged weights ${a.dir} \\(.*\\): older than the 0 kept`));
        assert.match(await ok("container", `ls -a ${ROOT}/sglang-lab--Tiny-Qwen3-DFlash/.quarantine`), /^\.\n\.\.\n$/);
        const left = (await ok("container", `ls ${ROOT}/sglang-lab--Tiny-Qwen3`)).split("\n").filter(Boolean).sort();
        assert.deepEqual(left, [commits[LAB_MODEL]![1]!, "by-hand"].sort());
        // A unit that names B keeps it even when it is not serving.
        await ok("container", `printf '[Service]\\nExecStart=/bin/true --model-path ${b.dir}\\n' > /etc/systemd/system/${UNIT}.previous`);
        try {
            assert.deepEqual(await pruneWeights(remote, { root: ROOT, owner: OWNER, serving: [], keepPrevious: 0, unitName: UNIT, say: () => undefined }), [
                drafter.dir,
            ]);
            assert.equal((await checkStagedWeights(remote, b.dir, { rehash: false })).kind, "staged");
        } finally {
            await ok("container", `rm -f /etc/systemd/system/${UNIT}.previous`);
        }
    });
    it("the Hub client runs with none of the deploy run's secrets, and its token only from the 0600 file (issue 34)", async () => {
        // A probe in front of the client: the staging unit runs it as the venv's python, and it writes down the environment it was given.
        const probe = "/opt/sglang-serve-hub-probe";
        const seen = "/tmp/sglang-serve-hub-probe.env";
        await ok(
            "container",
            `rm -f ${seen} && printf '#!/bin/sh\\ntr "\\\\000" "\\\\n" < /proc/$$/environ > ${seen}\\nexec ${hubPython} "$@"\\n' > ${probe} && chmod 755 ${probe}`,
        );
        await ok("container", `rm -rf ${ROOT}/sglang-lab--Tiny-Qwen3-DFlash`);
        const planted = {
            SSH_AUTH_SOCK: "/tmp/ssh-planted/agent.1",
            AWS_SECRET_ACCESS_KEY: "planted-aws-secret",
            PULUMI_CONFIG_PASSPHRASE: "planted-passphrase",
        };
        const token = "hf_planted0123456789abcdefghijklmnopq";
        const before = { ...process.env };
        Object.assign(process.env, planted);
        try {
            const { drafter } = plans(0, 1);
            const staged = await stageWeights(remote, drafter, options([], { python: probe, token }));
            assert.equal(staged.manifest.digest, expectedDigest(LAB_DRAFTER, 1));
        } finally {
            for (const name of Object.keys(planted)) {
                if (before[name] === undefined) delete process.env[name];
                else process.env[name] = before[name];
            }
            await ok("container", `rm -f ${probe}`);
        }
        const environ = await ok("container", `cat ${seen}`);
        assert.ok(environ.length > 0, "the probe ran");
        for (const [name, value] of Object.entries({ ...planted, HF_TOKEN: token })) {
            assert.ok(!environ.includes(name) && !environ.includes(value), `the Hub client's environment holds ${name}: ${environ}`);
        }
    });
});
