import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CONFIG_JSON_MAX_BYTES } from "../../core/box/box-facts";
import { filesAt, LAB_DRAFTER, LAB_MODEL, LabRepo, labRepos } from "../../lab/hf-mirror/lab-repos";
import { accessLog, ensureHfMirrorInstalled, RunningMirror, startMirror, writeMirrorRepos } from "../../lab/hf-mirror/mirror";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import { configFactsOf } from "../../providers/sglang-server/source-config";
import type { ServiceProps } from "../../providers/sglang-server/props";
import { readConfigJson } from "../../remote/weights-revision";
import { declaredService, ProviderBox, serviceInputs } from "../providers/provider-box";
import { labTestOctet } from "./lab-fixture";

// The preview of weights from a source (issue 33 items 1 and 5) against the
// lab's real Hugging Face mirror (olah offline behind its front, on
// loopback): a branch or tag is refused by the SglangService's check with the
// commit the mirror says it names now, as the line to pin; a mirror that
// cannot be reached still refuses it, saying why; a pinned revision's
// config.json is read from the mirror as the preview's verdict reads it. The
// box is the provider tests' fake box: nothing here downloads.
const address = `127.${labTestOctet(__filename)}.142.1`;

const repoById = (id: string): LabRepo => labRepos().find((r) => r.id === id)!;

describe("the weights' preview against the lab's Hugging Face mirror", function () {
    this.timeout(120_000);
    let dir: string;
    let commits: Record<string, string[]>;
    let mirror: RunningMirror;
    let box: ProviderBox;

    before(async function () {
        this.timeout(600_000); // install.sh from PyPI on a machine without the venvs
        ensureHfMirrorInstalled();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-weights-preview-"));
        commits = writeMirrorRepos(path.join(dir, "mirror"));
        mirror = await startMirror({ dir: path.join(dir, "mirror"), address, port: 8090, olahPort: 8091 });
    });
    after(async () => {
        await mirror?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });
    beforeEach(async () => {
        box = await ProviderBox.open();
    });
    afterEach(async () => {
        await box.close();
    });

    /** The field's server with its DFLASH drafter from the mirror at `revision` (of `endpoint`, the mirror's unless given). */
    const drafterAt = (revision: string, endpoint = mirror.endpoint): ServiceProps =>
        serviceInputs(
            box,
            declaredService(box, (raw) => {
                raw.speculative = {
                    algorithm: "DFLASH",
                    numSteps: 1,
                    eagleTopk: 1,
                    numDraftTokens: 16,
                    draftModelSource: { hf: LAB_DRAFTER, revision, endpoint },
                };
            }),
        );
    const check = (news: ServiceProps) => sglangServiceProvider(box.run).check!({} as ServiceProps, news);

    it("refuses the branch main and the tag v1 under the revision's key, each with the commit the mirror says it names now as the line to pin", async () => {
        const [first, newest] = commits[LAB_DRAFTER]!;
        for (const [revision, sha] of [
            ["main", newest],
            ["v1", first],
        ] as const) {
            const { failures } = await check(drafterAt(revision));
            assert.equal(failures?.length, 1, JSON.stringify(failures));
            assert.equal(failures![0]!.property, "service.speculative.draftModelSource.revision");
            assert.equal(
                failures![0]!.reason,
                `service.speculative.draftModelSource.revision is "${revision}", a branch or tag name: it moves, and the stack pins weights to one commit, ` +
                    `so that the same config always serves the same bytes. At ${mirror.endpoint}, ${LAB_DRAFTER} "${revision}" is commit ${sha} now: pin it with\n` +
                    `    revision: ${sha}`,
            );
        }
        assert.deepEqual(box.callsOf("systemd-run"), [], "nothing staged");
        assert.ok(!accessLog(mirror.paths).some((l) => l.url.includes("/resolve/")), "no file was fetched from the mirror");
    });

    it("still refuses a branch when the mirror cannot be reached, saying it could not be resolved and why", async () => {
        // The mirror's address, a port nothing listens on.
        const down = `http://${address}:8099`;
        const { failures } = await check(drafterAt("main", down));
        assert.equal(failures?.length, 1, JSON.stringify(failures));
        assert.equal(failures![0]!.property, "service.speculative.draftModelSource.revision");
        assert.match(
            failures![0]!.reason,
            new RegExp(
                `^service\\.speculative\\.draftModelSource\\.revision is "main", a branch or tag name: .*\\. Asking ${down.replace(/\./g, "\\.")} what it names failed ` +
                    `\\(GET ${down.replace(/\./g, "\\.")}/api/models/sglang-lab/Tiny-Qwen3-DFlash/revision/main failed: fetch failed \\(ECONNREFUSED\\)\\): pin its full 40-hex commit id`,
            ),
        );
    });

    it("takes a pinned commit, and says on a first deploy what up fetches from the mirror's list", async () => {
        const [, newest] = commits[LAB_DRAFTER]!;
        const { failures } = await check(drafterAt(newest!));
        assert.deepEqual(failures ?? [], []);
        const files = filesAt(repoById(LAB_DRAFTER), 1);
        const line = box.said.find((l) => l.includes("up stages the drafter"));
        assert.ok(line, box.said.join("\n"));
        assert.ok(line!.includes(`in /models/sglang-lab--Tiny-Qwen3-DFlash/${newest} before the stop: ${files.size} files, `), line);
        assert.deepEqual(box.callsOf("systemd-run"), [], "nothing staged");
    });

    it("reads a pinned revision's config.json from the mirror as the preview's verdict reads it: the drafter's architecture and its text", async () => {
        const [first] = commits[LAB_DRAFTER]!;
        const text = await readConfigJson(mirror.endpoint, LAB_DRAFTER, first!, CONFIG_JSON_MAX_BYTES);
        assert.equal(text, filesAt(repoById(LAB_DRAFTER), 0).get("config.json")!.toString());
        const facts = await configFactsOf(text);
        assert.equal(facts.model, "present");
        assert.equal(facts.architecture, "DFlashDraftModel");
        assert.equal(facts.configJson, text);
        const model = await configFactsOf(await readConfigJson(mirror.endpoint, LAB_MODEL, commits[LAB_MODEL]![1]!, CONFIG_JSON_MAX_BYTES));
        assert.deepEqual([model.architecture, model.contextLength, model.attentionHeads, model.kvHeads], ["Qwen3ForCausalLM", 8192, 6, 2]);
        await assert.rejects(readConfigJson(mirror.endpoint, LAB_DRAFTER, first!, 100), /config\.json is \d+ bytes, more than the 100 the preview reads/);
    });
});
