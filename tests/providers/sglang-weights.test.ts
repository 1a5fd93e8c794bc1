import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";
import { HUB_CLIENT_RELEASE } from "../../core/weights/hub-venv";
import { pinnedWeightsDigest } from "../../core/weights/manifest";
import { servedConfigKeyOf } from "../../providers/sglang-server/served-config";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import type { ServiceOutputs, ServiceProps } from "../../providers/sglang-server/props";
import { fixtureModelPath } from "../../lab/sglang/fixtures";
import { CONTAINER_CONF, declaredService, MODEL, ProviderBox, readinessSettings, serviceInputs } from "./provider-box";

// Weights as code at the provider seam (issue 33): a declared source is staged
// and verified on the fake box (its systemd-run runs the staging's part from
// the test's Hub, provider-box.ts SYSTEMD_RUN) before the rollout stops
// anything, and the state records each revision and its manifest's digest.

const ID = "127.0.0.1:129:sglang-qwen.service";
const REPO = "sglang-lab/Tiny-Qwen3";
const DRAFTER = "sglang-lab/Tiny-Qwen3-DFlash";
const A = "a".repeat(40);
const B = "b".repeat(40);
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * A drafter revision's files: no config.json, so SGLang's own verdict waits for it (a notice) and no release code runs here,
 * with the box's expectations given (withBox), which make the drafter part of the served config's key.
 */
const drafterFiles = (tag: string) => ({ "model.safetensors": `drafter weights ${tag}` });

/** A revision's files on the test's Hub. */
const files = (tag: string) => ({ "config.json": JSON.stringify({ architectures: ["Qwen3ForCausalLM"], tag }), "model.safetensors": `weights ${tag}` });

/**
 * The fake server at an address of this file's own and the field's port: the
 * declared service's unit, and so the key of each verdict its checks ask
 * SGLang for (providers/sglang-server/verdict.ts), are the same in every run,
 * and a later run reads them from the verdict cache. On a port the system
 * picked, each run asked the release again (three verdicts, one import of
 * it: about 3 CPU-s of the file's 11, and three more verdict files in the
 * cache; 2026-12-06).
 */
const SERVER = { host: "127.0.240.1", port: 30000 };

describe("SglangService provider: weights from a declared source, against the fake box", function () {
    this.timeout(60_000);
    let box: ProviderBox;
    let provider: ReturnType<typeof sglangServiceProvider>;

    beforeEach(async () => {
        box = await ProviderBox.open(SERVER);
        provider = sglangServiceProvider(box.run);
        box.write("etc/pve/lxc/129.conf", CONTAINER_CONF, 0o640);
        // The stack's huggingface_hub venv, staged by an earlier up.
        box.write(`opt/sglang-serve/huggingface-hub-${HUB_CLIENT_RELEASE}/.sglang-serve-venv`, "{}\n");
        hub({});
    });
    afterEach(async () => {
        await box.close();
    });

    function hub(entries: Record<string, { files: Record<string, string>; corrupt?: Record<string, string> }>): void {
        fs.writeFileSync(box.fake.file("hub.json"), JSON.stringify(entries));
    }

    /** The field's server serving `revision` of REPO (service.model.source instead of model.path). */
    const fromSource = (revision: string): ServiceProps =>
        serviceInputs(
            box,
            declaredService(box, (raw) => {
                const { path: _path, ...model } = raw.model as Record<string, unknown>;
                raw.model = { ...model, source: { hf: REPO, revision } };
            }),
        );

    const stagings = () => box.callsOf("systemd-run");
    const starts = () => box.calls().filter((c) => c.startsWith("systemctl start")).length;

    it("stages the declared revision before the first start, serves its folder, and records its manifest digest", async () => {
        hub({ [`${REPO}@${A}`]: { files: files("A") } });
        const news = fromSource(A);
        assert.ok(news.unitText.includes(`/models/sglang-lab--Tiny-Qwen3/${A}`), "the unit serves the revision folder");
        const { outs } = await provider.create(news);
        const calls = box.calls();
        const staged = calls.findIndex((c) => c.startsWith("systemd-run"));
        const started = calls.findIndex((c) => c.startsWith("systemctl start"));
        assert.ok(staged >= 0 && staged < started, "staged before the start");
        assert.ok(fs.existsSync(box.root(`models/sglang-lab--Tiny-Qwen3/${A}/.sglang-serve-weights/manifest.json`)));
        const digest = sha256(
            [`${sha256(files("A")["config.json"])}  ${files("A")["config.json"].length}  config.json\n`, `${sha256("weights A")}  9  model.safetensors\n`].join(
                "",
            ),
        );
        assert.deepEqual((outs as ServiceOutputs).stagedWeights, [{ role: "model", hf: REPO, revision: A, manifestDigest: digest }]);
    });

    it("stages a missing huggingface_hub venv from service.weights.pip's sources (no service.venv: not PyPI) before anything starts; its failure stops the up there", async () => {
        fs.rmSync(box.root(`opt/sglang-serve/huggingface-hub-${HUB_CLIENT_RELEASE}`), { recursive: true, force: true });
        const news = serviceInputs(
            box,
            declaredService(box, (raw) => {
                const { path: _path, ...model } = raw.model as Record<string, unknown>;
                raw.model = { ...model, source: { hf: REPO, revision: A } };
                raw.weights = { pip: { systemSitePackages: true, findLinks: ["/srv/wheels"], pipArgs: ["--no-index", "--no-deps"] } };
            }),
        );
        // The fake box's systemd-run runs the weights' staging only: the venv's staging unit fails there, after its argv was recorded.
        await assert.rejects(provider.create(news));
        // Its argv, script lines and all, as the fake systemd-run recorded it.
        const recorded = fs.readFileSync(box.fake.file("calls"), "utf8");
        const venvStaging = recorded.slice(recorded.indexOf("systemd-run --unit=sglang-qwen-stage.service"));
        assert.ok(venvStaging.length > 0, recorded);
        assert.match(venvStaging, new RegExp(`/opt/sglang-serve/huggingface-hub-${HUB_CLIENT_RELEASE.replace(/\./g, "\\.")} /usr/bin/python3 1 `));
        assert.match(venvStaging, / --find-links=\/srv\/wheels --no-index --no-deps huggingface-hub==1\.33\.0\n/);
        assert.equal(starts(), 0, "nothing started");
    });

    it("switches to another revision by staging it while the old server runs, and back to a kept one without fetching", async () => {
        hub({ [`${REPO}@${A}`]: { files: files("A") }, [`${REPO}@${B}`]: { files: files("B") } });
        const first = (await provider.create(fromSource(A))).outs as ServiceOutputs;
        box.forget();
        const second = (await provider.update!(ID, first, fromSource(B))).outs as ServiceOutputs;
        assert.equal(stagings().length, 1, "B was fetched");
        const stop = box.calls().findIndex((c) => c.startsWith("systemctl stop"));
        assert.ok(box.calls().findIndex((c) => c.startsWith("systemd-run")) < stop, "B was staged before the stop");
        assert.equal(second.stagedWeights?.[0]?.revision, B);
        box.forget();
        const back = (await provider.update!(ID, second, fromSource(A))).outs as ServiceOutputs;
        assert.deepEqual(stagings(), [], "A is kept: nothing fetched");
        assert.equal(starts(), 1, "only rolled out");
        assert.equal(back.stagedWeights?.[0]?.revision, A);
        assert.ok(box.said.some((l) => /is staged already in .*: nothing to fetch/.test(l)));
    });

    it("stages a DFLASH drafter from its source, and keys the served config by its revision and manifest, not its folder", async () => {
        hub({ [`${DRAFTER}@${A}`]: { files: drafterFiles("A") } });
        const news = serviceInputs(
            box,
            declaredService(box, (raw) => {
                raw.speculative = { algorithm: "DFLASH", numSteps: 1, eagleTopk: 1, numDraftTokens: 16, draftModelSource: { hf: DRAFTER, revision: A } };
            }),
            // The fake server's accept length (1.83) under DFLASH's default floor: the gate is not what this test is about.
            { withBox: true, readiness: readinessSettings({ acceptLengthFloor: 1 }) },
        );
        assert.ok(news.unitText.includes(`/models/sglang-lab--Tiny-Qwen3-DFlash/${A}`), "the unit loads the drafter's revision folder");
        const outs = (await provider.create(news)).outs as ServiceOutputs;
        const [record] = outs.stagedWeights ?? [];
        assert.equal(record?.role, "drafter");
        assert.equal(record?.revision, A);
        const key = servedConfigKeyOf(news, pinnedWeightsDigest({ revision: A, digest: record!.manifestDigest }));
        assert.equal(outs.servingHistory?.[0]?.config, key);
        assert.notEqual(servedConfigKeyOf(news, outs.drafterDigest), key, "not the folder's digest");
    });

    it("never stages a revision that is not a full commit, should one get past the check: up fails before anything is fetched or started", async () => {
        await assert.rejects(provider.create(fromSource("main")), /service\.model\.source\.revision is "main", not a full commit id: nothing was staged/);
        assert.deepEqual(stagings(), []);
        assert.equal(starts(), 0);
    });

    it("prunes after a good rollout: keeps the serving revision and the service.weights.keepPrevious newest, removes older ones, never a folder it did not stage", async () => {
        const C = "c".repeat(40);
        hub({ [`${REPO}@${A}`]: { files: files("A") }, [`${REPO}@${B}`]: { files: files("B") }, [`${REPO}@${C}`]: { files: files("C") } });
        const byHand = `models/sglang-lab--Tiny-Qwen3/${"d".repeat(40)}/model.safetensors`;
        box.write(byHand, "copied by hand");
        const first = (await provider.create(fromSource(A))).outs as ServiceOutputs;
        const second = (await provider.update!(ID, first, fromSource(B))).outs as ServiceOutputs;
        const folder = (rev: string) => box.root(`models/sglang-lab--Tiny-Qwen3/${rev}`);
        assert.ok(fs.existsSync(folder(A)), "A is the one previous revision kept (keepPrevious 1)");
        box.forget();
        await provider.update!(ID, second, fromSource(C));
        assert.ok(!fs.existsSync(folder(A)), "A is removed");
        assert.ok(fs.existsSync(folder(B)) && fs.existsSync(folder(C)), "C serves, B is kept");
        assert.ok(fs.existsSync(box.root(byHand)), "a folder the stack did not stage is left");
        assert.ok(
            box.said.some((l) => l.includes(`removed the staged weights /models/sglang-lab--Tiny-Qwen3/${A}`) && l.includes("older than the 1 kept")),
            box.said.join("\n"),
        );
    });

    describe("refresh: the staged files against their manifest", () => {
        const folder = `models/sglang-lab--Tiny-Qwen3/${A}`;
        const deployedA = async (): Promise<ServiceOutputs> => {
            hub({ [`${REPO}@${A}`]: { files: files("A") } });
            const outs = (await provider.create(fromSource(A))).outs as ServiceOutputs;
            box.forget();
            return outs;
        };
        const refreshed = async (outs: ServiceOutputs) => (await provider.read!(ID, outs)).props as ServiceOutputs;

        it("finds nothing while the staged files are as verified", async () => {
            const outs = await deployedA();
            const now = await refreshed(outs);
            assert.equal(now.weightsDrift, undefined);
            assert.equal((await provider.diff!(ID, now, fromSource(A))).changes, false);
        });

        it("names a file changed in place as drift (by its size and mtime), and the next up refuses to serve over it before the stop", async () => {
            const outs = await deployedA();
            box.write(`${folder}/model.safetensors`, "weights A, then edited");
            const now = await refreshed(outs);
            assert.deepEqual(now.weightsDrift, [
                `/${folder}/model.safetensors is ${"weights A, then edited".length} bytes, the manifest says 9: changed since it was verified`,
            ]);
            assert.equal((await provider.diff!(ID, now, fromSource(A))).changes, true);
            box.forget();
            await assert.rejects(provider.update!(ID, now, fromSource(A)), /files changed since they were verified[\s\S]*model\.safetensors is 22 bytes/);
            assert.deepEqual(
                box.calls().filter((c) => /^systemctl (stop|start)/.test(c)),
                [],
            );
        });

        it("re-hashes under npm run drift -- --verify: a byte changed with its size and mtime kept is named by its sha256", async () => {
            const outs = await deployedA();
            const file = box.root(`${folder}/model.safetensors`);
            const { atime, mtime } = fs.statSync(file);
            fs.writeFileSync(file, "weights Z");
            fs.utimesSync(file, atime, mtime);
            const saved = process.env.SGLANG_SERVE_VERIFY_WEIGHTS;
            process.env.SGLANG_SERVE_VERIFY_WEIGHTS = "1";
            try {
                const now = await refreshed(outs);
                assert.ok(
                    now.weightsDrift?.includes(
                        `/${folder}/model.safetensors has sha256 ${sha256("weights Z")}, the manifest says ${sha256("weights A")}: its bytes changed since it was verified`,
                    ),
                    JSON.stringify(now.weightsDrift),
                );
            } finally {
                if (saved === undefined) delete process.env.SGLANG_SERVE_VERIFY_WEIGHTS;
                else process.env.SGLANG_SERVE_VERIFY_WEIGHTS = saved;
            }
        });

        it("names a staged revision folder that is gone", async () => {
            const outs = await deployedA();
            box.remove(folder);
            const now = await refreshed(outs);
            assert.match(now.weightsDrift?.[0] ?? "", new RegExp(`^/${folder}: the staged model revision is gone`));
        });
    });

    describe("check: the preview of a declared source", () => {
        let hubServer: http.Server;
        let endpoint: string;
        const requests: string[] = [];
        /** What the fake Hub lists per `<repo>@<revision>`: sizes as the Hub's metadata gives them (an LFS object's may be claimed larger than the file). */
        let listed: Record<string, Array<{ path: string; size: number }>> = {};
        /** What the fake Hub serves as `<repo>@<revision>`'s config.json (`/{repo}/resolve/{revision}/config.json`). */
        let configs: Record<string, string> = {};

        beforeEach(async () => {
            requests.length = 0;
            listed = {};
            configs = {};
            hubServer = http.createServer((req, res) => {
                requests.push(req.url ?? "");
                const config = /^\/([^/]+)\/([^/]+)\/resolve\/([0-9a-f]{40})\/config\.json$/.exec(req.url ?? "");
                if (config) {
                    const text = configs[`${config[1]}/${config[2]}@${config[3]}`];
                    if (text === undefined) res.writeHead(404, { "x-error-code": "EntryNotFound" }).end("{}");
                    else res.writeHead(200, { "content-type": "application/json" }).end(text);
                    return;
                }
                const m = /^\/api\/models\/([^/]+)\/([^/]+)\/revision\/([0-9a-f]{40})\?blobs=true$/.exec(req.url ?? "");
                const files = m ? listed[`${m[1]}/${m[2]}@${m[3]}`] : undefined;
                if (!m || !files) {
                    res.writeHead(404, { "x-error-code": "RevisionNotFound" }).end("{}");
                    return;
                }
                const siblings = files.map((f) => ({ rfilename: f.path, size: f.size, blobId: "0".repeat(40), lfs: { sha256: "1".repeat(64), size: f.size } }));
                res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ sha: m[3], siblings }));
            });
            await new Promise<void>((r) => hubServer.listen(0, "127.0.0.1", r));
            endpoint = `http://127.0.0.1:${(hubServer.address() as AddressInfo).port}`;
        });
        afterEach(async () => {
            await new Promise<void>((r) => hubServer.close(() => r()));
        });

        const mirrored = (revision: string): ServiceProps =>
            serviceInputs(
                box,
                declaredService(box, (raw) => {
                    const { path: _path, ...model } = raw.model as Record<string, unknown>;
                    raw.model = { ...model, source: { hf: REPO, revision, endpoint } };
                }),
            );
        const check = async (olds: ServiceProps, news: ServiceProps) => provider.check!(olds, news);

        it("says the files and bytes up will fetch and the disk left after, asking the Hub from here", async () => {
            listed[`${REPO}@${B}`] = [
                { path: "config.json", size: 1000 },
                { path: "model.safetensors", size: 3_000_000 },
            ];
            const { failures } = await check(mirrored(A), mirrored(B));
            assert.deepEqual(failures ?? [], []);
            assert.equal(requests.length, 1);
            const line = box.said.find((l) => l.includes("up stages the model"));
            assert.ok(line, box.said.join("\n"));
            assert.match(line!, new RegExp(`in /models/sglang-lab--Tiny-Qwen3/${B} before the stop: 2 files, .* free on /models after$`));
        });

        it("says a staged revision costs nothing, without asking the Hub", async () => {
            hub({ [`${REPO}@${A}`]: { files: files("A") } });
            const deployed = (await provider.create(mirrored(A))).outs as ServiceOutputs;
            box.forget();
            const { failures } = await check(deployed, mirrored(A));
            assert.deepEqual(failures ?? [], []);
            assert.deepEqual(requests, []);
            assert.ok(box.said.some((l) => l.includes(`is staged in /models/sglang-lab--Tiny-Qwen3/${A}: up fetches nothing`)));
        });

        it("refuses a disk too small under the source's key, with the bytes needed and free", async () => {
            listed[`${REPO}@${B}`] = [{ path: "model.safetensors", size: 2 ** 60 }];
            const { failures } = await check(mirrored(A), mirrored(B));
            assert.equal(failures?.length, 1);
            assert.equal(failures![0]!.property, "service.model.source");
            assert.match(
                failures![0]!.reason,
                new RegExp(`not enough disk for model ${REPO}@bbbbbbbbbbbb in /models: it needs .* \\(${2 ** 60} bytes\\), .* \\(\\d+ bytes\\) are free`),
            );
        });

        it("judges a model and a drafter under one models root against the disk together: the second gets what the first leaves", async () => {
            const free = Number(
                execFileSync("df", ["-B1", "--output=avail", box.root("models")], { encoding: "utf8" })
                    .trim()
                    .split("\n")
                    .pop(),
            );
            const each = Math.floor(free * 0.6);
            listed[`${REPO}@${B}`] = [{ path: "model.safetensors", size: each }];
            listed[`${DRAFTER}@${B}`] = [{ path: "model.safetensors", size: each }];
            const both = (revision: string) =>
                serviceInputs(
                    box,
                    declaredService(box, (raw) => {
                        const { path: _path, ...model } = raw.model as Record<string, unknown>;
                        raw.model = { ...model, source: { hf: REPO, revision, endpoint } };
                        raw.speculative = {
                            algorithm: "DFLASH",
                            numSteps: 1,
                            eagleTopk: 1,
                            numDraftTokens: 16,
                            draftModelSource: { hf: DRAFTER, revision, endpoint },
                        };
                    }),
                );
            const { failures } = await check(both(A), both(B));
            assert.deepEqual(
                (failures ?? []).map((f) => f.property),
                ["service.speculative.draftModelSource"],
            );
            assert.match(failures![0]!.reason, /\(free after the .* that the other declared source fetches there first\)$/);
            assert.ok(box.said.some((l) => l.includes("up stages the model")));
        });

        it("does not refuse a source whose folder the box will not read (a read-only key), and says so, with the files and bytes from the Hub's list", async () => {
            listed[`${REPO}@${B}`] = [
                { path: "config.json", size: 1000 },
                { path: "model.safetensors", size: 3_000_000 },
            ];
            box.failOn(/sglang-serve-weights-read/, { code: 1, stderr: "sglang-serve-read-gate: refused" });
            const { failures } = await check(mirrored(A), mirrored(B));
            assert.deepEqual(failures ?? [], []);
            assert.ok(
                box.said.some((l) => /is not known here: the box's read of .* failed \(exited 1: sglang-serve-read-gate: refused\)/.test(l)),
                box.said.join("\n"),
            );
            assert.ok(
                box.said.some((l) => l.includes(`up stages the model ${REPO}@bbbbbbbbbbbb in /models/sglang-lab--Tiny-Qwen3/${B} before the stop: 2 files, `)),
                box.said.join("\n"),
            );
        });

        it("does not refuse a source when neither the box nor the Hub can be read from here (a pull request's preview of a private repository), and says both", async () => {
            box.failOn(/sglang-serve-weights-read/, { code: 1, stderr: "sglang-serve-read-gate: refused" });
            const { failures } = await check(mirrored(A), mirrored(B));
            assert.deepEqual(failures ?? [], []);
            assert.ok(
                box.said.some((l) =>
                    /is not known here: the box's read of .* failed \(exited 1: sglang-serve-read-gate: refused\), and its files cannot be read from http:\/\/127\.0\.0\.1:\d+ \(from the machine running pulumi\): GET .* answered 404 RevisionNotFound/.test(
                        l,
                    ),
                ),
                box.said.join("\n"),
            );
        });

        it("says on a first deploy (no state yet) what up will fetch: the files, the bytes and the disk left after", async () => {
            listed[`${REPO}@${A}`] = [
                { path: "config.json", size: 1000 },
                { path: "model.safetensors", size: 3_000_000 },
            ];
            const { failures } = await check({} as ServiceProps, mirrored(A));
            assert.deepEqual(failures ?? [], []);
            const line = box.said.find((l) => l.includes("up stages the model"));
            assert.ok(line, box.said.join("\n"));
            assert.match(line!, new RegExp(`in /models/sglang-lab--Tiny-Qwen3/${A} before the stop: 2 files, 2\\.9 MiB; .* free on /models after$`));
            assert.deepEqual(stagings(), [], "nothing downloaded");
        });

        it("refuses a branch or tag name under the revision's key, with the commit the Hub says it names now as the line to pin", async () => {
            const { failures } = await check({} as ServiceProps, mirrored("main"));
            assert.equal(failures?.length, 1, JSON.stringify(failures));
            assert.equal(failures![0]!.property, "service.model.source.revision");
            // The fake Hub knows no branch: the refusal says why it could not resolve it, and still refuses.
            assert.match(
                failures![0]!.reason,
                /^service\.model\.source\.revision is "main", a branch or tag name: .* Asking http:\/\/127\.0\.0\.1:\d+ what it names failed \(GET .*\/revision\/main answered 404 RevisionNotFound/,
            );
            assert.deepEqual(stagings(), []);
        });

        it("judges a drafter revision not on the box yet by its config.json from the Hub: a block size the release refuses fails the preview naming the revision, before anything downloads", async function () {
            this.timeout(300_000);
            // A model SGLang 0.5.11 serves (the fake box's stand-in has four layers), and a DFLASH drafter whose block size comes from its config.json.
            box.write(`${MODEL}/config.json`, fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8"));
            const dflash = (blockSize: number) =>
                JSON.stringify({
                    architectures: ["DFlashDraftModel"],
                    model_type: "qwen3",
                    num_hidden_layers: 1,
                    hidden_size: 384,
                    num_attention_heads: 6,
                    num_key_value_heads: 2,
                    block_size: blockSize,
                    num_target_layers: 2,
                    dflash_config: { block_size: blockSize, target_layer_ids: [0, 1], mask_token_id: 100 },
                });
            const drafterAt = (revision: string) =>
                serviceInputs(
                    box,
                    declaredService(box, (raw) => {
                        raw.speculative = { algorithm: "DFLASH", numSteps: 1, eagleTopk: 1, draftModelSource: { hf: DRAFTER, revision, endpoint } };
                        raw.extraArgs = [...((raw.extraArgs as string[] | undefined) ?? []), "--speculative-dflash-draft-window-size", "16"];
                    }),
                    { withBox: true, readiness: readinessSettings({ acceptLengthFloor: 1 }) },
                );
            hub({ [`${DRAFTER}@${A}`]: { files: drafterFiles("A") } });
            const deployed = (await provider.create(drafterAt(A))).outs as ServiceOutputs;
            const refreshed = (await provider.read!(ID, deployed)).props as ServiceOutputs;
            box.forget();
            const C = "c".repeat(40);
            for (const rev of [B, C])
                listed[`${DRAFTER}@${rev}`] = [
                    { path: "config.json", size: 400 },
                    { path: "model.safetensors", size: 1_000_000 },
                ];
            configs[`${DRAFTER}@${B}`] = dflash(32);
            configs[`${DRAFTER}@${C}`] = dflash(16);

            const refused = await check(refreshed, drafterAt(B));
            const reasons = (refused.failures ?? []).map((f) => f.reason);
            assert.ok(reasons.length > 0, box.said.join("\n"));
            for (const reason of reasons) {
                assert.match(reason, /window_size=16, block_size=32/);
                assert.ok(reason.endsWith(`(judged with the drafter ${DRAFTER}@bbbbbbbbbbbb's config.json from ${endpoint})`), reason);
            }
            assert.ok(requests.includes(`/${DRAFTER}/resolve/${B}/config.json`), requests.join("\n"));
            assert.deepEqual(stagings(), [], "nothing downloaded");

            // A drafter folder the box will not read (the read-only key's gate pins only the deployed folders): judged by the Hub's copy too.
            box.forget();
            box.failOn(new RegExp(`box-facts: [\\s\\S]*sglang-lab--Tiny-Qwen3-DFlash/${B}`), { code: 1, stderr: "sglang-serve-read-gate: refused" });
            // A run of its own: the earlier check's read of the folder is kept for the rest of its run.
            const unread = await sglangServiceProvider(box.newRun()).check!(refreshed, drafterAt(B));
            assert.ok((unread.failures ?? []).length > 0, box.said.join("\n"));
            for (const f of unread.failures ?? []) assert.match(f.reason, /window_size=16, block_size=32.*\(judged with the drafter .*'s config\.json from /);
            assert.ok(
                box.said.some((l) => l.includes(`@bbbbbbbbbbbb cannot be read on the box here (`)),
                box.said.join("\n"),
            );

            // The same drafter with the block size the window holds: accepted.
            const accepted = await check(refreshed, drafterAt(C));
            assert.deepEqual(accepted.failures ?? [], []);
            assert.ok(requests.includes(`/${DRAFTER}/resolve/${C}/config.json`), requests.join("\n"));
            assert.ok(
                box.said.some(
                    (l) => l.includes(`the drafter ${DRAFTER}@cccccccccccc is not on the box yet: `) && l.endsWith("is judged before anything is downloaded"),
                ),
                box.said.join("\n"),
            );
        });

        it("judges a model revision not on the box yet by its config.json from the Hub: an architecture the config contradicts fails the preview naming the revision", async () => {
            configs[`${REPO}@${B}`] = JSON.stringify({ architectures: ["Qwen3ForCausalLM"], num_attention_heads: 6, num_key_value_heads: 2 });
            // 10 GB of weights by the Hub's list, where the field declares 52.
            listed[`${REPO}@${B}`] = [
                { path: "config.json", size: 100 },
                { path: "model.safetensors", size: 10_000_000_000 },
            ];
            const news = serviceInputs(
                box,
                declaredService(box, (raw) => {
                    const { path: _path, ...model } = raw.model as Record<string, unknown>;
                    raw.model = { ...model, source: { hf: REPO, revision: B, endpoint } };
                }),
                { withBox: true },
            );
            // What a refresh read of the box: its release, and the declared revision's folder not there yet.
            const olds = { ...news, boxFacts: { sglangVersion: news.expectBox!.sglangVersion, model: "missing" } } as ServiceOutputs;
            const { failures } = await check(olds, news);
            // The field's NEXTN drafts with the checkpoint's MTP layers, which this config.json has none of: refused too.
            assert.deepEqual(
                (failures ?? []).map((f) => f.property),
                ["service.model.architecture", "service.model.weightsGB", "service.speculative.algorithm"],
            );
            assert.match(
                failures![1]!.reason,
                new RegExp(
                    `^service\\.model\\.weightsGB is 52 but the weights in /models/sglang-lab--Tiny-Qwen3/${B} are 10\\.0 GB: .* \\(judged with the model `,
                ),
            );
            assert.match(failures![2]!.reason, /has none \(no mtp_num_hidden_layers or num_nextn_predict_layers\).* \(judged with the model /);
            assert.match(
                failures![0]!.reason,
                new RegExp(
                    `^service\\.model\\.architecture is Qwen3_5ForConditionalGeneration but /models/sglang-lab--Tiny-Qwen3/${B}/config\\.json says Qwen3ForCausalLM: .* ` +
                        `\\(judged with the model ${REPO}@bbbbbbbbbbbb's config\\.json from http://127\\.0\\.0\\.1:\\d+\\)$`,
                ),
            );
            assert.deepEqual(stagings(), [], "nothing downloaded");
        });

        describe("a model revision whose folder the box will not read (a pull request's preview: the read-only key's gate pins only the deployed folders)", () => {
            /** The field's server with REPO's revision `revision` from the test's Hub, with the box's expectations; `edit` changes the raw service block. */
            const modelAt = (revision: string, edit: (raw: Record<string, unknown>) => void = () => undefined) =>
                serviceInputs(
                    box,
                    declaredService(box, (raw) => {
                        const { path: _path, ...model } = raw.model as Record<string, unknown>;
                        raw.model = { ...model, source: { hf: REPO, revision, endpoint } };
                        edit(raw);
                    }),
                    { withBox: true },
                );
            /** What the refresh read with A deployed: the box's release, A's folder there. */
            const deployedAt = (olds: ServiceProps) =>
                ({
                    ...olds,
                    boxFacts: { sglangVersion: olds.expectBox!.sglangVersion, model: "present", architecture: "Qwen3_5ForConditionalGeneration" },
                }) as ServiceOutputs;
            /** The gate refuses the box-facts read of B's folder and the weights read (neither is a folder the key's line pins). */
            const gateRefusesB = () => {
                box.failOn(new RegExp(`box-facts: [\\s\\S]*sglang-lab--Tiny-Qwen3/${B}`), { code: 1, stderr: "sglang-serve-read-gate: refused" });
                box.failOn(/sglang-serve-weights-read/, { code: 1, stderr: "sglang-serve-read-gate: refused" });
            };
            /** The preview's line: B's folder unread, judged by the Hub's config.json with the python the refresh read. */
            const unreadLine = () =>
                box.said.some(
                    (l) =>
                        l.includes(`the model ${REPO}@bbbbbbbbbbbb cannot be read on the box here (`) &&
                        l.includes("sglang-serve-read-gate: refused") &&
                        l.includes(
                            `, with the box's python and release as the refresh read them: the model ${REPO}@bbbbbbbbbbbb's config.json from ${endpoint}`,
                        ),
                );

            it("judges it by its config.json from the Hub, with the box's python as the refresh read it: a contradicting architecture fails naming the revision, not the gate", async () => {
                configs[`${REPO}@${B}`] = JSON.stringify({ architectures: ["Qwen3ForCausalLM"], num_attention_heads: 6, num_key_value_heads: 2 });
                listed[`${REPO}@${B}`] = [
                    { path: "config.json", size: 100 },
                    { path: "model.safetensors", size: 3_000_000 },
                ];
                gateRefusesB();
                const { failures } = await check(deployedAt(modelAt(A)), modelAt(B));
                assert.deepEqual(
                    (failures ?? []).map((f) => f.property),
                    ["service.model.architecture", "service.model.weightsGB", "service.speculative.algorithm"],
                    JSON.stringify(failures),
                );
                for (const f of failures!) {
                    assert.doesNotMatch(f.reason, /read-gate/);
                    assert.ok(f.reason.endsWith(`(judged with the model ${REPO}@bbbbbbbbbbbb's config.json from ${endpoint})`), f.reason);
                }
                assert.ok(unreadLine(), box.said.join("\n"));
                assert.ok(requests.includes(`/${REPO}/resolve/${B}/config.json`), requests.join("\n"));
                // What up fetches, from the Hub's list: the box's read of the folder was refused too.
                assert.ok(
                    box.said.some((l) =>
                        l.includes(`up stages the model ${REPO}@bbbbbbbbbbbb in /models/sglang-lab--Tiny-Qwen3/${B} before the stop: 2 files, `),
                    ),
                    box.said.join("\n"),
                );
                assert.deepEqual(stagings(), [], "nothing downloaded");
            });

            it("takes one its config.json and the declared server agree on, and says what up fetches", async function () {
                this.timeout(300_000);
                // The field's own config.json (Qwen3.6-27B), its weights' size left to the box's (the Hub's list here): SGLang's verdict runs on it.
                configs[`${REPO}@${B}`] = fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8");
                listed[`${REPO}@${B}`] = [
                    { path: "config.json", size: 5_000 },
                    { path: "model.safetensors", size: 3_000_000 },
                ];
                const noWeightsGB = (raw: Record<string, unknown>) => {
                    const { weightsGB: _gb, ...model } = raw.model as Record<string, unknown>;
                    raw.model = model;
                };
                gateRefusesB();
                const { failures } = await check(deployedAt(modelAt(A, noWeightsGB)), modelAt(B, noWeightsGB));
                assert.deepEqual(failures ?? [], [], box.said.join("\n"));
                assert.ok(unreadLine(), box.said.join("\n"));
                assert.ok(
                    box.said.some((l) => l.includes("SGLang 0.5.11's own code accepts this server")),
                    box.said.join("\n"),
                );
                assert.ok(
                    box.said.some((l) =>
                        l.includes(`up stages the model ${REPO}@bbbbbbbbbbbb in /models/sglang-lab--Tiny-Qwen3/${B} before the stop: 2 files, `),
                    ),
                    box.said.join("\n"),
                );
                assert.deepEqual(stagings(), [], "nothing downloaded");
            });
        });

        it("refuses a revision the Hub does not know under the source's key, naming where it asked from", async () => {
            const { failures } = await check(mirrored(A), mirrored(B));
            assert.equal(failures?.[0]?.property, "service.model.source");
            assert.match(
                failures![0]!.reason,
                /cannot be read from http:\/\/127\.0\.0\.1:\d+ \(from the machine running pulumi\): GET .* answered 404 RevisionNotFound/,
            );
        });
    });

    it("says at preview that a return to a drafter revision served before is held to its own earlier figures", async () => {
        hub({ [`${DRAFTER}@${A}`]: { files: drafterFiles("A") }, [`${DRAFTER}@${B}`]: { files: drafterFiles("B") } });
        const drafterAt = (revision: string) =>
            serviceInputs(
                box,
                declaredService(box, (raw) => {
                    raw.speculative = { algorithm: "DFLASH", numSteps: 1, eagleTopk: 1, numDraftTokens: 16, draftModelSource: { hf: DRAFTER, revision } };
                }),
                { withBox: true, readiness: readinessSettings({ acceptLengthFloor: 1 }) },
            );
        const first = (await provider.create(drafterAt(A))).outs as ServiceOutputs;
        const second = (await provider.update!(ID, first, drafterAt(B))).outs as ServiceOutputs;
        const { inputs } = await provider.check!(second, drafterAt(A));
        assert.match(inputs!.restart!, /held to its own earlier avg accept length .* \(a return to an earlier config\)/);
    });

    it("fails before the stop on a file that does not match the Hub's hash, naming it and both hashes; the running server is untouched", async () => {
        hub({ [`${REPO}@${A}`]: { files: files("A") }, [`${REPO}@${B}`]: { files: files("B"), corrupt: { "model.safetensors": "weights X" } } });
        const first = (await provider.create(fromSource(A))).outs as ServiceOutputs;
        const pidBefore = JSON.parse(fs.readFileSync(box.fake.file("systemd.json"), "utf8")).units["sglang-qwen.service"].pid as number;
        box.forget();
        await assert.rejects(provider.update!(ID, first, fromSource(B)), (e: Error) => {
            assert.match(e.message, /Nothing was stopped: the running server serves on/);
            assert.ok(
                e.message.includes(`model.safetensors: the Hub's sha256 (LFS) is ${sha256("weights B")}, the downloaded file's is ${sha256("weights X")}`),
            );
            return true;
        });
        assert.deepEqual(
            box.calls().filter((c) => /^systemctl (stop|start|restart)/.test(c)),
            [],
        );
        const pidAfter = JSON.parse(fs.readFileSync(box.fake.file("systemd.json"), "utf8")).units["sglang-qwen.service"].pid as number;
        assert.equal(pidAfter, pidBefore, "MainPID unchanged");
        assert.ok(!fs.existsSync(box.root(`models/sglang-lab--Tiny-Qwen3/${B}/.sglang-serve-weights/manifest.json`)), "no manifest for B");
    });
});
