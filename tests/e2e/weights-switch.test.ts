import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { HealthWatch } from "../../bench/lib/health-watch";
import { Deployment, expectExit } from "../../lab/deployment";
import { corruptBlob, CORRUPT_BYTES } from "../../lab/hf-mirror/faults";
import { filesAt, LAB_DRAFTER, labRepos } from "../../lab/hf-mirror/lab-repos";
import { accessLog, ensureHfMirrorInstalled, RunningMirror, startMirror, writeMirrorRepos } from "../../lab/hf-mirror/mirror";
import { labStackConfig, type StackConfigFile } from "../../lab/stack";
import { formatBytes } from "../../core/weights/disk";
import { manifestDigest } from "../../core/weights/manifest";
import { mainPid, onBox, serverInfoOnBox, service, serviceOutputsInState, UNIT, useLab } from "./lab-box";
import { assertServedWhileStaging } from "./served-while-staging";

const API_KEY = "e2e-weights-api-key-0123456789abcd";
const NET = 137;
/** The lab's Hugging Face mirror (olah offline behind its front, lab/hf-mirror) on a loopback address of this lab's own net: the container shares this machine's network. */
const MIRROR = { address: `127.0.${NET}.1`, port: 8090, olahPort: 8091 };
const ROOT = "/models/hub";
const SMALL_ROOT = "/models/hub-small";
const WEIGHTS_FILE = "model.safetensors";
const REPO_DIR = "sglang-lab--Tiny-Qwen3-DFlash";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const drafterRepo = () => labRepos().find((r) => r.id === LAB_DRAFTER)!;
/** The drafter's files at commit `index` (0: A, 1: B), from the repositories' definition. */
const drafterFiles = (index: number) => filesAt(drafterRepo(), index);
const totalBytes = (files: Map<string, Buffer>) => [...files.values()].reduce((s, b) => s + b.length, 0);
/** The manifest digest of the drafter at commit `index`, computed here from its bytes. */
const expectedDigest = (index: number) => manifestDigest([...drafterFiles(index)].map(([p, b]) => ({ path: p, size: b.length, sha256: sha256(b) })));
const re = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

// Issue 33's acceptance on the lab box (a lab of its own, 127.0.137.x): the
// field's server with its DFLASH drafter pinned to a commit of the lab's
// Hugging Face mirror (sglang-lab/Tiny-Qwen3-DFlash, two commits), staged by
// the stack's huggingface_hub venv in the container (from service.weights.pip:
// the container's system site, no index; the lab has no PyPI) while the old
// server serves, verified against the mirror's hashes, then rolled out and
// judged by the serving gate. One deployment, the scenarios chained so that
// each costs one engine run.
describe("weights as code on the lab box: the DFLASH drafter switched between two pinned revisions of the lab's Hugging Face mirror", function () {
    // About 1.5-2 min alone (2026-12-06: nine engine runs, three rollouts, two stagings; 80-90 s the test, load 3.5-4); allow for a full run's load on 2 cores.
    this.timeout(1_500_000);
    const lab = useLab("weights", NET);
    let mirrorDir: string;
    let mirror: RunningMirror;
    let commits: string[];

    before(async function () {
        this.timeout(600_000);
        ensureHfMirrorInstalled();
        mirrorDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-weights-e2e-"));
        commits = writeMirrorRepos(path.join(mirrorDir, "mirror"))[LAB_DRAFTER]!;
        mirror = await startMirror({ dir: path.join(mirrorDir, "mirror"), ...MIRROR });
    });
    after(async () => {
        await mirror?.stop();
        if (mirrorDir) fs.rmSync(mirrorDir, { recursive: true, force: true });
    });

    /** The field's config with the DFLASH drafter from the mirror at commit `index` (or as `revision` says), staged under `root`. */
    function drafterAt(config: StackConfigFile, index: number, root = ROOT, revision = commits[index]): void {
        service(config).speculative = {
            algorithm: "DFLASH",
            numSteps: 1,
            eagleTopk: 1,
            numDraftTokens: 16,
            draftModelSource: { hf: LAB_DRAFTER, revision, endpoint: mirror.endpoint },
        };
        // The lab's box has no package index: the hub venv sees the container's system site, where huggingface_hub 1.33.0 is (lab/README.md).
        service(config).weights = { root, pip: { systemSitePackages: true, pipArgs: ["--no-index", "--no-deps"] } };
    }
    const dirOf = (index: number, root = ROOT) => `${root}/${REPO_DIR}/${commits[index]}`;
    const downloads = () => accessLog(mirror.paths).filter((e) => e.method === "GET" && e.url.includes("/resolve/"));
    const stagedInState = async (d: Deployment) => (await serviceOutputsInState(d))?.stagedWeights;

    it("A to B by changing one line: the preview says files, bytes and disk left; up stages B while /health answers 200, verifies it, rolls it out and the gate judges it; the state records B's manifest digest; a second up changes nothing; back to A fetches nothing; the branch main is refused at preview with the commit to pin; a disk too small fails the preview with the arithmetic; a corrupted blob fails up before the stop naming the file and both hashes; a byte changed in the staged revision is drift under --verify", async () => {
        const { labDir, info } = lab;
        const config = labStackConfig(info, "pct-exec");
        const d = await Deployment.create("lab", config);
        try {
            d.giveApiKey(API_KEY);
            drafterAt(config, 0);
            d.writeConfig(config);
            const first = await d.up();
            expectExit(first, 0, "up with the drafter at A (the hub venv and A staged)");
            assert.match(
                first.output,
                new RegExp(
                    `staged the drafter ${re(LAB_DRAFTER)}@${commits[0]!.slice(0, 12)} in ${re(dirOf(0))} in \\d+ s: ${drafterFiles(0).size} files, .*each verified against the Hub's hashes`,
                ),
            );
            assert.equal((await serverInfoOnBox(labDir, info, API_KEY)).speculative_algorithm, "DFLASH");
            assert.deepEqual(await stagedInState(d), [{ role: "drafter", hf: LAB_DRAFTER, revision: commits[0], manifestDigest: expectedDigest(0) }]);

            // One line: the revision. The preview says what up fetches, from the mirror's file list, and fetches no weights.
            drafterAt(config, 1);
            d.writeConfig(config);
            fs.rmSync(mirror.paths.accessLog, { force: true });
            const preview = await d.preview();
            expectExit(preview, 0, "preview of the drafter at B");
            const b = drafterFiles(1);
            const shown = new RegExp(
                `up stages the drafter ${re(LAB_DRAFTER)}@${commits[1]!.slice(0, 12)} in ${re(dirOf(1))} before the stop: ${b.size} files, ${re(formatBytes(totalBytes(b)))}; (\\S+ \\S+) free on ${re(ROOT)} after`,
            ).exec(preview.output);
            assert.ok(shown, preview.output);
            // Of B's files the preview reads config.json alone (a few KB, for the box facts and SGLang's verdict), no weights.
            assert.deepEqual(
                downloads().map((e) => e.url),
                [`/${LAB_DRAFTER}/resolve/${commits[1]}/config.json`],
                "the preview reads B's config.json and downloads nothing else",
            );
            assert.equal(await onBox(labDir, "container", `test -e ${dirOf(1)} && echo there || echo absent`), "absent");

            // up stages B while A's server serves, verifies it, then rolls out; the gate judges the drafter against A's figures.
            const pidA = await mainPid(labDir);
            const health = new HealthWatch(`http://${info.container.address}:30000/health`, 100, 10_000);
            health.start();
            const switched = await d.up();
            await health.stop();
            expectExit(switched, 0, "up to the drafter at B");
            assert.match(
                switched.output,
                new RegExp(
                    `staging the drafter ${re(LAB_DRAFTER)}@${commits[1]!.slice(0, 12)} in ${re(dirOf(1))} from ${re(mirror.endpoint)} while the running server serves`,
                ),
            );
            assert.match(
                switched.output,
                new RegExp(
                    `staged the drafter .* in ${re(dirOf(1))} in \\d+ s: ${b.size} files, .*each verified against the Hub's hashes; manifest ${expectedDigest(1).slice(0, 16)}`,
                ),
            );
            assert.ok(switched.output.indexOf(`staged the drafter`) < switched.output.indexOf("] rollout: "), "staged before the rollout began");
            assert.match(
                switched.output,
                /serving figures avg accept length [\d.]+ \(DFLASH\), .* against the last good config's avg accept length [\d.]+ \(DFLASH\)/,
            );
            // From the revision folder's marker (written first) to its manifest (written last). Polled every 100 ms; the staging
            // (a transient unit, huggingface_hub's download, every file hashed) took about 2 s alone (22 polls).
            await assertServedWhileStaging(
                labDir,
                {
                    what: "the drafter",
                    began: `${dirOf(1)}/.sglang-serve-weights/staged-by.json`,
                    staged: `${dirOf(1)}/.sglang-serve-weights/manifest.json`,
                    minPolls: 3,
                },
                health.samples,
            );
            assert.notEqual(await mainPid(labDir), pidA, "rolled out");
            assert.match(await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`), new RegExp(`--speculative-draft-model-path ${re(dirOf(1))}\\b`));
            assert.deepEqual(await stagedInState(d), [{ role: "drafter", hf: LAB_DRAFTER, revision: commits[1], manifestDigest: expectedDigest(1) }]);
            const pidB = await mainPid(labDir);
            expectExit(await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes"]), 0, "a second up changes nothing");
            assert.equal(await mainPid(labDir), pidB);

            // Back to A: kept by the prune (keepPrevious 1), so nothing is fetched; only the rollout.
            drafterAt(config, 0);
            d.writeConfig(config);
            fs.rmSync(mirror.paths.accessLog, { force: true });
            const back = await d.up();
            expectExit(back, 0, "up back to the drafter at A");
            assert.doesNotMatch(back.output, /staging the drafter/);
            assert.match(
                back.output,
                new RegExp(
                    `the drafter ${re(LAB_DRAFTER)}@${commits[0]!.slice(0, 12)} is staged already in ${re(dirOf(0))} \\(manifest ${expectedDigest(0).slice(0, 16)}\\): nothing to fetch`,
                ),
            );
            assert.deepEqual(downloads(), [], "nothing downloaded from the mirror");
            assert.notEqual(await mainPid(labDir), pidB, "rolled out");
            assert.deepEqual(await stagedInState(d), [{ role: "drafter", hf: LAB_DRAFTER, revision: commits[0], manifestDigest: expectedDigest(0) }]);
            const pidBack = await mainPid(labDir);

            // The branch main in place of the commit: the preview refuses it, naming the key, the value and the commit main is on the mirror now
            // (B, the newest) as the line to pin; nothing is fetched and nothing changes. Then the pinned line back.
            drafterAt(config, 1, ROOT, "main");
            d.writeConfig(config);
            const branch = await d.preview();
            assert.notEqual(branch.code, 0, branch.output);
            assert.match(
                branch.output,
                new RegExp(
                    `service\\.speculative\\.draftModelSource\\.revision is "main", a branch or tag name: [^\\n]*` +
                        `At ${re(mirror.endpoint)}, ${re(LAB_DRAFTER)} "main" is commit ${commits[1]} now: pin it with\\s+revision: ${commits[1]}\\b`,
                ),
            );
            assert.deepEqual(downloads(), [], "nothing downloaded from the mirror");
            // Nothing else is judged: a folder named after the branch is never one the stack stages, so it is not read.
            assert.doesNotMatch(branch.output, /verdict waits|\/main\/config\.json/);
            assert.equal(await mainPid(labDir), pidBack);
            drafterAt(config, 0);
            d.writeConfig(config);

            // A box disk too small: B under a 1 MiB models root (a size-limited mount, as a Proxmox mount point with size= would be).
            await onBox(labDir, "container", `mkdir -p ${SMALL_ROOT} && mount -t tmpfs -o size=1m sglang-lab-small-disk ${SMALL_ROOT}`);
            try {
                drafterAt(config, 1, SMALL_ROOT);
                d.writeConfig(config);
                const short = await d.preview();
                assert.notEqual(short.code, 0, short.output);
                const arithmetic = new RegExp(
                    `not enough disk for drafter ${re(LAB_DRAFTER)}@${commits[1]!.slice(0, 12)} in ${re(SMALL_ROOT)}: it needs ${re(formatBytes(totalBytes(b)))} \\(${totalBytes(b)} bytes\\), \\S+ \\S+ \\((\\d+) bytes\\) are free`,
                ).exec(short.output);
                assert.ok(arithmetic, short.output);
                assert.ok(Number(arithmetic[1]) <= 1024 * 1024, short.output);
                assert.equal(await onBox(labDir, "container", `ls -A ${SMALL_ROOT} | wc -l`), "0", "nothing fetched");
            } finally {
                await onBox(labDir, "container", `umount ${SMALL_ROOT} && rmdir ${SMALL_ROOT}`);
            }

            // A corrupted blob on the mirror: B again, its folder gone from the box, its weights' bytes changed on the mirror (same size).
            await onBox(labDir, "container", `rm -rf ${dirOf(1)}`);
            const corrupted = corruptBlob(mirror.paths, LAB_DRAFTER, commits[1]!, WEIGHTS_FILE);
            try {
                const bad = Buffer.from(b.get(WEIGHTS_FILE)!);
                for (let i = corrupted.offset; i < Math.min(bad.length, corrupted.offset + CORRUPT_BYTES); i++) bad[i] = bad[i]! ^ 0xff;
                drafterAt(config, 1);
                d.writeConfig(config);
                const refused = await d.up();
                assert.notEqual(refused.code, 0, refused.output);
                assert.ok(
                    refused.output.includes(
                        `${WEIGHTS_FILE}: the Hub's sha256 (LFS) is ${sha256(b.get(WEIGHTS_FILE)!)}, the downloaded file's is ${sha256(bad)}`,
                    ),
                    refused.output,
                );
                assert.doesNotMatch(refused.output, /\] rollout: /, "no rollout began");
                assert.equal(await mainPid(labDir), pidBack, "the old server's MainPID is unchanged");
                assert.equal(
                    await onBox(labDir, "container", `test -e ${dirOf(1)}/.sglang-serve-weights/manifest.json && echo there || echo absent`),
                    "absent",
                );
                assert.deepEqual(await stagedInState(d), [{ role: "drafter", hf: LAB_DRAFTER, revision: commits[0], manifestDigest: expectedDigest(0) }]);
            } finally {
                corrupted.restore();
            }

            // A byte changed in the staged revision that serves (A), its size and mtime kept: only a re-hash sees it.
            const file = `${dirOf(0)}/${WEIGHTS_FILE}`;
            await onBox(
                labDir,
                "container",
                `python3 -c 'import os, sys; p = sys.argv[1]; st = os.stat(p); f = open(p, "r+b"); f.seek(100); c = f.read(1); f.seek(100); f.write(bytes([c[0] ^ 1])); f.close(); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' ${file}`,
            );
            const changed = Buffer.from(drafterFiles(0).get(WEIGHTS_FILE)!);
            changed[100] = changed[100]! ^ 1;
            const verified = await d.npmScript("drift", ["--stack", "lab", "--json", "--verify"]);
            expectExit(verified, 7, "npm run drift -- --verify after a byte changed");
            const changes = (JSON.parse(verified.stdout) as { changes: { field: string; actual: unknown }[] }).changes;
            const named = `${file} has sha256 ${sha256(changed)}, the manifest says ${sha256(drafterFiles(0).get(WEIGHTS_FILE)!)}`;
            assert.ok(
                changes.some((c) => c.field === "weightsDrift" && JSON.stringify(c.actual).includes(named)),
                JSON.stringify(changes),
            );
        } finally {
            d.cleanup();
        }
    });
});
