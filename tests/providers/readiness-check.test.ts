import * as assert from "node:assert/strict";
import { PROVIDER_VERSION } from "../../components/dynamic-provider";
import { readinessCheckProvider } from "../../providers/readiness-check";
import type { ReadinessOutputs, ReadinessProps } from "../../providers/readiness-check-props";
import { API_KEY, CONTAINER_CONF, declaredService, ProviderBox, readinessSettings, serviceInputs } from "./provider-box";

// The ReadinessCheck provider's decisions, driven directly against the fake
// box (provider-box.ts): the readiness wait polls the fake systemctl and journal in
// container 129 through `pct exec`, probes the fake SGLang server over HTTP,
// and a refresh reads /server_info on the box (python3, the key from the
// unit's environment file).

type Inputs = ReadinessProps;
type Outputs = ReadinessOutputs;

/** The provider for the box's run (set when the box opens). */
let provider: ReturnType<typeof readinessCheckProvider>;

/** create, with the outputs it must return. */
async function create(news: Inputs): Promise<{ id: string; outs: Outputs }> {
    const r = await provider.create(news);
    assert.ok(r.outs, "create returns outputs");
    return { id: r.id, outs: r.outs };
}

let revisions = 0;
/** A revision no rollout of this process has verified serving (the fast path is tested on its own). */
const freshRevision = () => `rev-${process.pid}-${++revisions}`;

describe("ReadinessCheck provider against the fake box", function () {
    this.timeout(30_000);
    let box: ProviderBox;

    /** The check's inputs as components/readiness-check.ts gives them, for the server `install` put on the box. */
    let inputs: (edit?: Partial<Inputs>) => Inputs;

    /** Puts the declared server on the box, running and ready, as a rollout leaves it. */
    const install = async (edit: (raw: Record<string, unknown>) => void = () => undefined): Promise<void> => {
        const service = serviceInputs(box, declaredService(box, edit));
        await box.install(service.unitName, service.unitText, service.environmentFile, service.serverConfigFile);
    };

    beforeEach(async () => {
        box = await ProviderBox.open();
        provider = readinessCheckProvider(box.run);
        box.write("etc/pve/lxc/129.conf", CONTAINER_CONF, 0o640);
        const service = serviceInputs(box, declaredService(box));
        inputs = (edit = {}) => ({
            providerVersion: PROVIDER_VERSION,
            connection: service.connection,
            unitName: service.unitName,
            endpoint: service.endpoint,
            revision: freshRevision(),
            requireApiKey: true,
            servedModelName: service.servedModelName,
            speculativeAlgorithm: service.speculativeAlgorithm,
            readiness: readinessSettings(),
            ...edit,
        });
    });
    afterEach(async () => {
        await box.close();
    });

    describe("create", () => {
        it("passes a server that serves: health, the key enforced, a real chat answer, speculation active", async () => {
            await install();
            box.forget();
            const { id, outs } = await create(inputs());
            assert.equal(id, `http://127.0.0.1:${box.server.port}#sglang-qwen.service`);
            assert.equal(outs.ready, true);
            assert.equal(outs.speculativeActive, true);
            assert.equal(outs.liveServerArgs!.modelPath, "/models/Qwen3.6-27B");
            assert.deepEqual(outs.liveServerArgs!.speculative, { algorithm: "NEXTN", numSteps: 1, eagleTopk: 1, numDraftTokens: 2 });
            const asked = box.server.requests.map((r) => `${r.method} ${r.path} ${r.authorized ? "with key" : "without key"}`);
            assert.ok(asked.includes("GET /v1/models without key"), asked.join("\n"));
            assert.ok(asked.includes("POST /v1/chat/completions with key"), asked.join("\n"));
            // The readiness wait polls the unit and its journal in the container.
            assert.ok(
                box.commands.every((c) => c.startsWith("pct exec 129 -- ")),
                box.commands.join("\n"),
            );
            assert.deepEqual(
                box.callsOf("systemctl").filter((c) => !c.startsWith("systemctl show")),
                [],
                "the check starts and stops nothing",
            );
        });

        it("confirms a revision the rollout verified serving in this run without polling the box", async () => {
            await install();
            box.forget();
            const revision = freshRevision();
            const { outs } = await create(inputs({ revision, servingVerified: { revision, run: box.run.id } }));
            assert.equal(outs.ready, true);
            assert.deepEqual(box.commands, []);
        });

        it("waits on the box again for a revision verified serving in an earlier run", async () => {
            await install();
            const revision = freshRevision();
            const earlier = box.run.id;
            provider = readinessCheckProvider(box.newRun());
            box.forget();
            const { outs } = await create(inputs({ revision, servingVerified: { revision, run: earlier } }));
            assert.equal(outs.ready, true);
            assert.ok(box.commands.length > 0, "the readiness wait polls the unit and its journal");
        });

        it("waits on the box again when another revision was verified serving", async () => {
            await install();
            box.forget();
            const { outs } = await create(inputs({ revision: freshRevision(), servingVerified: { revision: freshRevision(), run: box.run.id } }));
            assert.equal(outs.ready, true);
            assert.ok(box.commands.length > 0, "the readiness wait polls the unit and its journal");
        });

        it("fails naming the unit, the endpoint, the unit's state and the journal when the server is stopped", async () => {
            await install();
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            box.fake.appendJournal(["[2026-05-02 11:00:00] Received sigquit from a child process. It usually means the child failed."]);
            await assert.rejects(create(inputs()), (e: Error) => {
                assert.match(e.message, new RegExp(`^sglang-qwen\\.service at http://127\\.0\\.0\\.1:${box.server.port} is not serving: `));
                assert.match(e.message, /is not serving: the unit is inactive\/dead\n {2}Last journal lines:\n/);
                assert.match(e.message, /\n {4}\[2026-05-02 11:00:00\] Received sigquit from a child process/);
                return true;
            });
        });

        it("fails naming the chat check when the server answers garbage to the test completion", async () => {
            await install();
            box.server.behaviour.chat = "!!!!!!!!!!!!!!!!";
            await assert.rejects(create(inputs()), /is not serving: .*chat.*only whitespace and punctuation/s);
        });

        it("fails naming speculative decoding when the server runs without it", async () => {
            await install((raw) => {
                delete raw.speculative;
                delete raw.mambaSchedulerStrategy;
            });
            await assert.rejects(create(inputs()), /is not serving: .*\/server_info has no speculative_algorithm, expected NEXTN/s);
        });

        it("fails naming /server_info when the server answers it with something that is not JSON", async () => {
            await install();
            box.server.behaviour.info = "not-json";
            await assert.rejects(create(inputs()), /is not serving: .*GET \/server_info did not answer a JSON object/s);
        });

        it("fails naming the API key check when the server serves without its key", async () => {
            await install();
            // SGLang's config file lost its key: SGLang serves without authentication.
            box.write("etc/sglang/qwen.yaml", "# emptied by hand\n", 0o600);
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            await box.fake.run(["systemctl", "start", "sglang-qwen.service"]);
            await assert.rejects(create(inputs()), /is not serving: .*GET \/v1\/models without the key answered HTTP 200, not 401/s);
        });

        it("never shows the API key in its error, even where the journal echoes it", async () => {
            await install();
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            box.fake.appendJournal([`[2026-05-02 10:00:01] server_args=ServerArgs(model_path='/models/Qwen3.6-27B', api_key='${API_KEY}', port=30000)`]);
            await assert.rejects(create(inputs()), (e: Error) => {
                assert.doesNotMatch(e.message, new RegExp(API_KEY));
                assert.match(e.message, /api_key='\[secret\]'/);
                return true;
            });
        });
    });

    describe("read", () => {
        it("records no API key a state of an older version held, in the outputs or the inputs", async () => {
            await install();
            const { outs } = await create(inputs());
            const { requireApiKey: _r, ...older } = { ...outs, apiKey: API_KEY };
            const read = await provider.read!("ready", older as Outputs);
            assert.ok(!JSON.stringify(read.props).includes(API_KEY));
            assert.ok(!JSON.stringify(read.inputs).includes(API_KEY));
            assert.equal(read.inputs!.requireApiKey, true);
        });

        it("records no gatePassed a state of an older version held (servingVerified's earlier name), in the outputs or the inputs", async () => {
            await install();
            const { outs } = await create(inputs());
            const older = { ...outs, gatePassed: { revision: outs.revision, run: box.run.id } };
            const read = await provider.read!("ready", older as Outputs);
            assert.equal("gatePassed" in read.props!, false);
            assert.equal("gatePassed" in read.inputs!, false);
        });

        it("reads readiness and the live args with /server_info asked on the box, without the API key", async () => {
            await install();
            const { outs } = await create(inputs());
            box.forget();
            box.server.requests.length = 0;
            const { apiKey: _key, ...withoutKey } = outs;
            const read = await provider.read!("ready", withoutKey as Outputs);
            assert.equal(read.id, "ready");
            assert.equal(read.props!.ready, true);
            assert.equal(read.props!.liveServerArgs!.servedName, "qwen3.6-27b");
            assert.equal(read.props!.speculativeActive, true);
            assert.equal(box.commands.length, 1, box.commands.join("\n"));
            assert.match(box.commands[0]!, /^pct exec 129 -- python3 -I -c /);
            // The box's own read used the key from the unit's environment file.
            assert.deepEqual(
                box.server.requests.filter((r) => r.path === "/server_info").map((r) => r.authorized),
                [true],
            );
        });

        it("records a stopped server as not ready, for diff to report, without failing the refresh", async () => {
            await install();
            const { outs } = await create(inputs());
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            const read = await provider.read!("ready", outs);
            assert.equal(read.props!.ready, false);
            assert.equal(read.props!.liveServerArgs, null);
            assert.equal((await provider.diff!("ready", read.props!, inputs({ revision: outs.revision }))).changes, true);
        });

        it("records the args the server really runs, so a server on other args is drift for the service to show", async () => {
            await install();
            const { outs } = await create(inputs());
            await install((raw) => {
                raw.memFractionStatic = 0.8;
            });
            const read = await provider.read!("ready", outs);
            assert.equal(read.props!.liveServerArgs!.memFractionStatic, 0.8);
        });

        it("fails the refresh naming /server_info and the fields when the server answers it in another shape", async () => {
            await install();
            const { outs } = await create(inputs());
            box.server.behaviour.info = "wrong-shape";
            await assert.rejects(provider.read!("ready", outs), /\/server_info is not the expected JSON object: .*tp_size/);
        });

        it("reports a /server_info answer that is not JSON as the box's read says it, naming the unit", async () => {
            await install();
            const { outs } = await create(inputs());
            box.server.behaviour.info = "not-json";
            await assert.rejects(provider.read!("ready", outs), /sglang-qwen\.service.*not a JSON object/s);
        });

        it("fails naming the box and python3 when the /server_info read cannot run there", async () => {
            await install();
            const { outs } = await create(inputs());
            box.failOn(/python3 -I -c/, { code: 127, stderr: "sh: 1: python3: not found" });
            await assert.rejects(
                provider.read!("ready", outs),
                /cannot read \/server_info of sglang-qwen\.service on root@127\.0\.0\.1:22 \(pct exec 129\) \(exit 127\): sh: 1: python3: not found; python3 is missing where the server runs/,
            );
        });

        it("fails naming the id when there is no state to read from", async () => {
            await assert.rejects(provider.read!("ready"), /^Error: ready: no state to read from$/);
        });
    });

    describe("diff", () => {
        it("reports no change for the same inputs on a server that serves", async () => {
            await install();
            const { outs } = await create(inputs());
            assert.deepEqual(await provider.diff!("ready", outs, inputs({ revision: outs.revision })), { changes: false, replaces: [] });
        });

        it("reports a change, never a replacement, for each input: a new revision, endpoint, served name, algorithm, readiness, key", async () => {
            await install();
            const { outs } = await create(inputs());
            const same = { revision: outs.revision };
            for (const edit of [
                { revision: "rev-next" },
                { ...same, providerVersion: "sglang-serve/2" },
                { ...same, connection: { ...outs.connection, vmid: 130 } },
                { ...same, unitName: "sglang-other.service" },
                { ...same, endpoint: "http://127.0.0.1:1" },
                { ...same, servedModelName: "qwen" },
                { ...same, speculativeAlgorithm: undefined },
                { ...same, readiness: readinessSettings({ chatCheck: false }) },
                { ...same, requireApiKey: false },
            ]) {
                assert.deepEqual(await provider.diff!("ready", outs, inputs(edit)), { changes: true, replaces: [] }, JSON.stringify(edit));
            }
        });

        it("reports a change when the last check found the server not ready or speculation inactive", async () => {
            await install();
            const { outs } = await create(inputs());
            const news = inputs({ revision: outs.revision });
            assert.equal((await provider.diff!("ready", { ...outs, ready: false }, news)).changes, true);
            assert.equal((await provider.diff!("ready", { ...outs, speculativeActive: false }, news)).changes, true);
        });
    });

    describe("update", () => {
        it("checks the server again for a new revision", async () => {
            await install();
            const { outs: olds } = await create(inputs());
            box.forget();
            const { outs } = await provider.update!("ready", olds, inputs({ revision: "after-rollout" }));
            assert.equal(outs!.ready, true);
            assert.equal(outs!.revision, "after-rollout");
            assert.ok(box.commands.length > 0, "the readiness wait polled the box");
        });
    });

    describe("delete", () => {
        it("runs nothing on the box: a check owns nothing there", async () => {
            await install();
            const { outs } = await create(inputs());
            box.forget();
            await provider.delete!("ready", outs);
            assert.deepEqual(box.commands, []);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
        });
    });
});
