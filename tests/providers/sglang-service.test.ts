import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { BoxFacts, boxExpectations } from "../../core/box/box-facts";
import { ENVIRONMENT_DIFFERS } from "../../core/unit/unit-read";
import { assertBoxServes } from "../../providers/sglang-server/facts";
import { readinessCheckProvider } from "../../providers/readiness-check";
import { SECRETS_AS_DECLARED } from "../../providers/sglang-server/secrets";
import { SHIPPED_SERVING_PROMPTS } from "../../core/serving/serving-prompts";
import { SERVING_MEASURED_PASSES, SERVING_WARMUP_PASSES } from "../../core/serving/serving-figures";
import { sglangServiceProvider } from "../../providers/sglang-server/verbs";
import type { ServiceOutputs, ServiceProps } from "../../providers/sglang-server/props";
import { RawServiceBlock, SGLANG_0511_ROWS } from "../core/fixtures";
import { API_KEY, CONTAINER_CONF, declaredService, deployWith, MODEL, ProviderBox, readinessSettings, SELF, serviceInputs } from "./provider-box";

// The SglangService provider's decisions, driven directly against the fake
// box (provider-box.ts): the unit read, the rollout's steps (keep the
// previous unit, stop, GPU release, write, daemon-reload, enable, start, the
// readiness wait) and delete run their real commands in container 129 through `pct
// exec`, against a fake systemd whose started "process" the loopback SGLang
// server answers for.

const ID = "127.0.0.1:129:sglang-qwen.service";
const UNIT = "etc/systemd/system/sglang-qwen.service";
const ENV = "etc/sglang/qwen.env";
const CONFIG = "etc/sglang/qwen.yaml";
const OTHER = { project: "sglang-serve", stack: "ct129" };

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** A thrown half-done create/update, as the SDK's dynamic provider passes it to the engine. */
type PartialFailure = Error & { id?: string; properties?: ServiceOutputs; reasons?: string[] };

describe("SglangService provider against the fake box", function () {
    this.timeout(60_000);
    let box: ProviderBox;
    let provider: ReturnType<typeof sglangServiceProvider>;
    let readinessCheck: ReturnType<typeof readinessCheckProvider>;

    beforeEach(async () => {
        box = await ProviderBox.open();
        provider = sglangServiceProvider(box.run);
        readinessCheck = readinessCheckProvider(box.run);
        box.write("etc/pve/lxc/129.conf", CONTAINER_CONF, 0o640);
    });
    afterEach(async () => {
        await box.close();
    });

    /** The declared server's inputs (components/sglang-service.ts), with `edit` applied to the service block. */
    const declared = (edit: (raw: Record<string, unknown>) => void = () => undefined, opts: Parameters<typeof serviceInputs>[2] = {}): ServiceProps =>
        serviceInputs(box, declaredService(box, edit), opts);

    /** create, with the outputs it must return. */
    const create = async (news: ServiceProps): Promise<{ id: string; outs: ServiceOutputs }> => {
        const r = await provider.create(news);
        assert.ok(r.outs, "create returns outputs");
        return { id: r.id, outs: r.outs };
    };

    const update = async (olds: ServiceOutputs, news: ServiceProps): Promise<ServiceOutputs> => {
        const r = await provider.update!(ID, olds, news);
        assert.ok(r.outs, "update returns outputs");
        return r.outs;
    };

    /** The declared server deployed by a first `up`; the set-up's commands are forgotten. */
    const deployed = async (news: ServiceProps = declared()): Promise<ServiceOutputs> => {
        const { outs } = await create(news);
        box.forget();
        return outs;
    };

    /** The systemctl calls that change something (not the reads). */
    const systemctlChanges = () => box.callsOf("systemctl").filter((c) => !c.startsWith("systemctl show"));

    describe("check", () => {
        const check = async (olds: Partial<ServiceProps>, news: ServiceProps) => {
            const r = await provider.check!(olds as ServiceProps, news);
            assert.ok(r.inputs, "check returns inputs");
            return { inputs: r.inputs, failures: r.failures };
        };

        it("says a first deploy starts a new server", async () => {
            const { inputs, failures } = await check({}, declared());
            assert.equal(inputs.restart, "yes: new server");
            assert.equal(failures, undefined);
        });

        // tests/e2e/preview.test.ts previews one of these with the real engine; the program's side is tests/components/stack.test.ts.
        it("accepts, at a first preview with no box facts yet, each of kpro5's rows SGLang 0.5.11 starts, contacting no box: SGLang's own verdict waits for the rollout", async () => {
            for (const { row, edit } of SGLANG_0511_ROWS.filter((r) => !r.fails)) {
                const { inputs, failures } = await check(
                    {},
                    declared((raw) => edit(raw as RawServiceBlock), { withBox: true }),
                );
                assert.equal(failures, undefined, row);
                assert.equal(inputs.restart, "yes: new server", row);
            }
            assert.deepEqual(box.commands, []);
            assert.ok(
                box.said.some((s) => /SGLang 0\.5\.11's own verdict comes at the rollout/.test(s)),
                box.said.join("\n"),
            );
        });

        it("names the changed flags and environment variables that restart the server", async () => {
            const news = declared((raw) => {
                raw.memFractionStatic = 0.85;
                raw.environment = { SGLANG_ENABLE_SPEC_V2: "1", NCCL_P2P_DISABLE: "1" };
            });
            const { inputs } = await check(declared(), news);
            assert.equal(inputs.restart, "yes: --mem-fraction-static, NCCL_P2P_DISABLE changed");
        });

        it("says what a restart of a speculative server is held to: the last good config's figures and the drop limits", async () => {
            const news = declared((raw) => (raw.memFractionStatic = 0.85));
            const recorded = { ...declared(), servingFigures: { algorithm: "NEXTN", acceptLength: 1.7 } };
            const { inputs } = await check(recorded, news);
            assert.equal(
                inputs.restart,
                "yes: --mem-fraction-static changed; held to the last good avg accept length 1.70 (NEXTN): accept length at most 10% below",
            );
            const withThroughput = { ...recorded, servingFigures: { algorithm: "NEXTN", acceptLength: 1.7, throughput: 42 } };
            const limits = declared((raw) => (raw.memFractionStatic = 0.85), { readiness: readinessSettings({ throughputDropLimit: 0.05 }) });
            assert.equal(
                (await check(withThroughput, limits)).inputs.restart,
                "yes: --mem-fraction-static changed; held to the last good avg accept length 1.70 (NEXTN), 42.0 tok/s: accept length at most 10% below, throughput at most 5% below",
            );
            const unchanged = await check(recorded, declared());
            assert.equal(unchanged.inputs.restart, "no");
        });

        it("says a drafter folder changed in place since the server loaded it restarts the server", async () => {
            const recorded = { ...declared(), drafterDigest: "a".repeat(32), drafterDigestOnBox: "b".repeat(32) };
            const { inputs } = await check(recorded, declared());
            assert.match(inputs.restart!, /^yes: the drafter folder .* changed in place since the server loaded it \(digest a{32} -> b{32}\)$/);
        });

        it("says a newly required API key restarts the server as a change of secrets, without naming the key", async () => {
            const { inputs } = await check(declared(undefined, { apiKey: null }), declared());
            assert.match(inputs.restart!, /secrets/);
            assert.doesNotMatch(inputs.restart!, new RegExp(API_KEY));
        });

        it("says nothing restarts when only the recorded owner differs", async () => {
            // Stack ct129 takes the unit over from lab, which wrote it: the units differ in their owner line alone.
            const { inputs, failures } = await check(declared(), { ...declared(undefined, { owner: OTHER }), takeOverFrom: "lab" });
            assert.equal(failures, undefined);
            assert.equal(inputs.restart, "no");
        });

        it("fails the owner property naming the owner and service.takeOverFrom when the box's unit is another stack's", async () => {
            // After a refresh, olds.owner is the owner the unit on the box records.
            const { failures } = await check({ ...declared(), owner: "sglang-serve/ct129" }, declared());
            assert.deepEqual(
                failures!.map((f) => f.property),
                ["owner"],
            );
            assert.match(failures![0]!.reason, /^sglang-qwen\.service on 127\.0\.0\.1 belongs to stack ct129 of project sglang-serve/);
            assert.match(failures![0]!.reason, /set sglang-serve:service\.takeOverFrom: ct129 and run up again/);
        });

        it("accepts another stack's unit when service.takeOverFrom names that stack", async () => {
            const news = declared((raw) => {
                raw.takeOverFrom = "ct129";
            });
            const { failures } = await check({ ...declared(), owner: "sglang-serve/ct129" }, news);
            assert.equal(failures, undefined);
        });
    });

    describe("diff", () => {
        it("reports no change when the inputs are the same and the server runs them", async () => {
            const outs = await deployed();
            assert.deepEqual(await provider.diff!(ID, outs, declared()), { changes: false, replaces: [] });
        });

        it("replaces, deleting first, when the unit name changes: two servers cannot share the GPUs", async () => {
            const outs = await deployed();
            const news = declared((raw) => {
                raw.name = "qwen-mtp";
            });
            assert.deepEqual(await provider.diff!(ID, outs, news), { changes: true, replaces: ["unitName"], deleteBeforeReplace: true });
        });

        it("reports a change, never a replacement, for each process field, the endpoint, the readiness settings and the connection", async () => {
            const outs = await deployed();
            const flagged = declared((raw) => {
                raw.memFractionStatic = 0.85;
            });
            const cases: Array<[string, ServiceProps]> = [
                ["providerVersion", { ...declared(), providerVersion: "sglang-serve/2" }],
                ["connection", declared(undefined, { connection: box.connection("direct") })],
                ["unitText", { ...declared(), unitText: `${declared().unitText}# edited\n` }],
                ["command", { ...declared(), command: ["/opt/sglang/venv/bin/python3", "-m", "sglang.launch_server"] }],
                ["flags", { ...declared(), flags: flagged.flags }],
                ["environment", declared((raw) => (raw.environment = { SGLANG_ENABLE_SPEC_V2: "1", NCCL_DEBUG: "INFO" }))],
                ["endpoint", { ...declared(), endpoint: "http://10.1.230.172:30000" }],
                ["readiness", declared(undefined, { readiness: readinessSettings({ startupTimeoutSeconds: 1800 }) })],
            ];
            for (const [field, news] of cases) {
                assert.deepEqual(await provider.diff!(ID, outs, news), { changes: true, replaces: [] }, field);
            }
        });

        it("reports a rotated API key in the deploy run as a change once the refresh asked the box about the file it renders", async () => {
            const outs = await deployed();
            assert.equal((await provider.diff!(ID, (await provider.read!(ID, outs)).props!, declared())).changes, false, "same key");
            deployWith(`${API_KEY}-rotated`);
            // The stack refreshes before every up and preview (Pulumi.yaml refresh: always).
            const refreshed = (await provider.read!(ID, outs)).props!;
            assert.equal(refreshed.secretsHash, ENVIRONMENT_DIFFERS);
            assert.deepEqual(await provider.diff!(ID, refreshed, declared()), { changes: true, replaces: [] });
        });

        it("compares only the presence of the secrets in a run without their values (a pull request's preview)", async () => {
            const outs = await deployed();
            deployWith(null);
            assert.equal((await provider.diff!(ID, outs, declared())).changes, false, "the 0600 file is there, as declared");
            assert.equal((await provider.diff!(ID, { ...outs, secretsHash: "" }, declared())).changes, true, "the file is gone");
            assert.equal((await provider.diff!(ID, outs, declared(undefined, { apiKey: null }))).changes, true, "no longer declared");
        });

        it("reports drift when the server is not active, not enabled, not running its unit, or its secrets changed", async () => {
            const outs = await deployed();
            const news = declared();
            for (const [what, olds] of [
                ["stopped", { ...outs, activeState: "inactive" }],
                ["failed", { ...outs, activeState: "failed" }],
                ["container stopped", { ...outs, activeState: "container-stopped" }],
                ["disabled", { ...outs, enabled: false }],
                ["changed, not restarted", { ...outs, liveMatchesUnit: false }],
                ["secrets changed", { ...outs, secretsHash: sha256("SGLANG_API_KEY=edited-by-hand-0123456789\n") }],
            ] as Array<[string, ServiceOutputs]>) {
                assert.equal((await provider.diff!(ID, olds, news)).changes, true, what);
            }
        });
    });

    describe("create", () => {
        it("writes the unit (0644) and the environment file (0600) exactly as rendered, then enables and starts it", async () => {
            const news = declared();
            await create(news);
            assert.equal(box.read(UNIT), news.unitText);
            assert.equal(box.mode(UNIT), 0o644);
            assert.equal(box.read(ENV), news.environmentFile);
            assert.equal(box.mode(ENV), 0o600);
            assert.equal(box.read(CONFIG), news.serverConfigFile);
            assert.equal(box.mode(CONFIG), 0o600);
            assert.deepEqual(systemctlChanges(), [
                "systemctl stop sglang-qwen.service",
                "systemctl daemon-reload",
                "systemctl enable sglang-qwen.service",
                "systemctl reset-failed sglang-qwen.service",
                "systemctl start sglang-qwen.service",
            ]);
            assert.ok(
                box.commands.every((c) => c.startsWith("pct exec 129 -- ")),
                box.commands.join("\n"),
            );
        });

        it("records what the box runs after the rollout: active, enabled, the secrets' hash, the live args, the owner", async () => {
            const news = declared();
            const { id, outs } = await create(news);
            assert.equal(id, ID);
            assert.equal(outs.activeState, "active");
            assert.equal(outs.enabled, true);
            // The box holds the declared files; the state records that, never a digest of them (a weak key could be guessed from one).
            assert.equal(outs.secretsHash, SECRETS_AS_DECLARED);
            assert.ok(!JSON.stringify(outs).includes(sha256(news.environmentFile!)), "a digest of the secrets is in the outputs");
            assert.equal(outs.liveMatchesUnit, true);
            for (const field of ["apiKey", "environmentFile", "serverConfigFile"]) assert.ok(!(field in outs), `${field} is not recorded`);
            assert.ok(!JSON.stringify(outs).includes(API_KEY), "the key is nowhere in the outputs");
            assert.equal(outs.liveArgs!.memFractionStatic, 0.88);
            assert.equal(outs.boxOwner, "sglang-serve/lab");
            assert.equal(outs.unitText, news.unitText);
            assert.deepEqual(outs.flags, news.flags);
            assert.equal(outs.restart, "no");
            assert.match(outs.revision, /^[0-9a-f]{64}$/);
        });

        it("records the revision it verified serving and this run, and the ReadinessCheck of the run confirms it without polling the box", async () => {
            const news = declared();
            const { outs } = await create(news);
            assert.deepEqual(outs.servingVerified, { revision: outs.revision, run: box.run.id });
            box.forget();
            const check = await readinessCheck.create({
                providerVersion: outs.providerVersion,
                connection: outs.connection,
                unitName: outs.unitName,
                endpoint: outs.endpoint,
                revision: outs.revision,
                servingVerified: outs.servingVerified,
                apiKey: news.apiKey,
                servedModelName: outs.servedModelName,
                speculativeAlgorithm: outs.speculativeAlgorithm,
                readiness: outs.readiness,
            });
            assert.equal(check.outs!.ready, true);
            assert.deepEqual(box.commands, []);
            assert.equal(box.said.filter((l) => l.includes("ready after")).length, 0, box.said.join("\n"));
        });

        it("records no serving verification when the box already runs the declared config, nor keeps an earlier one", async () => {
            const olds = await deployed();
            const outs = await update(olds, declared());
            assert.equal(box.callsOf("systemctl").filter((c) => /systemctl (start|stop|restart)/.test(c)).length, 0);
            assert.equal(outs.servingVerified, undefined);
        });

        it("keeps the serving verification in a refresh's outputs, not in the inputs it reads back", async () => {
            const outs = await deployed();
            const read = await provider.read!(ID, outs);
            assert.deepEqual(read.props!.servingVerified, outs.servingVerified);
            assert.equal("servingVerified" in read.inputs!, false);
        });

        it("drops the gatePassed a state of an older version recorded (servingVerified's earlier name) from what a refresh records", async () => {
            const { servingVerified, ...rest } = await deployed();
            const older = { ...rest, gatePassed: servingVerified } as ServiceOutputs;
            const read = await provider.read!(ID, older);
            assert.equal("gatePassed" in read.props!, false);
            assert.equal("gatePassed" in read.inputs!, false);
            box.containerStatus(129, "stopped");
            const stopped = await provider.read!(ID, older);
            assert.equal(stopped.props!.activeState, "container-stopped");
            assert.equal("gatePassed" in stopped.props!, false);
            assert.equal("gatePassed" in stopped.inputs!, false);
        });

        it("runs the same commands straight in the container in the direct topology, without pct exec", async () => {
            const news = declared(undefined, { connection: box.connection("direct") });
            const { id, outs } = await create(news);
            assert.equal(id, "127.0.0.1:-:sglang-qwen.service");
            assert.equal(outs.activeState, "active");
            assert.equal(box.read(UNIT), news.unitText);
            assert.ok(
                box.commands.every((c) => !c.startsWith("pct ")),
                box.commands.join("\n"),
            );
            assert.deepEqual(box.callsOf("pct"), []);
        });

        it("fails before touching the box, naming SGLANG_SERVE_API_KEY, when the deploy run has no key", async () => {
            deployWith(null);
            await assert.rejects(create(declared()), /SGLANG_SERVE_API_KEY is not set: service\.requireApiKey is true/);
            assert.equal(box.read(UNIT), null);
            deployWith("short-key");
            await assert.rejects(
                create(declared()),
                (e: Error) => /SGLANG_SERVE_API_KEY is 9 characters long/.test(e.message) && !e.message.includes("short-key"),
            );
        });

        it("writes the secret environment's values from the deploy run to the 0600 environment file only", async () => {
            const value = "hf_secret_value_0123456789";
            process.env.SGLANG_SERVE_SECRET_ENVIRONMENT = `HF_TOKEN=${value}\n`;
            try {
                const news = { ...declared(), secrets: { apiKey: true, environment: ["HF_TOKEN"] } };
                const { outs } = await create(news);
                assert.match(box.read(ENV)!, new RegExp(`^HF_TOKEN=${value}$`, "m"));
                assert.equal(box.mode(ENV), 0o600);
                assert.match(box.process()!.env!, new RegExp(`^HF_TOKEN=${value}$`, "m"));
                assert.ok(!box.read(UNIT)!.includes(value), "the value is in the unit");
                assert.ok(!JSON.stringify(outs).includes(value), "the value is in the outputs");
                assert.ok(!box.said.join("\n").includes(value), "the value is in the messages");
                // Its rotation is a change the deploy's refresh sees (the box's file is not the one the new value renders).
                process.env.SGLANG_SERVE_SECRET_ENVIRONMENT = "HF_TOKEN=hf_rotated_0123456789";
                assert.equal((await provider.diff!(ID, (await provider.read!(ID, outs)).props!, news)).changes, true);
            } finally {
                delete process.env.SGLANG_SERVE_SECRET_ENVIRONMENT;
            }
        });

        it("writes no environment or config file, and removes stale ones, for a server without an API key", async () => {
            box.write(ENV, "SGLANG_API_KEY=left-over-0123456789abcdef\n", 0o600);
            box.write(CONFIG, 'api-key: "left-over-0123456789abcdef"\n', 0o600);
            const news = declared(undefined, { apiKey: null });
            const { outs } = await create(news);
            assert.equal(box.read(ENV), null);
            assert.equal(box.read(CONFIG), null);
            assert.equal(outs.secretsHash, "");
            assert.doesNotMatch(box.read(UNIT)!, /EnvironmentFile=/);
        });

        it("adopts a box that already runs the declared config without restarting it", async () => {
            const news = declared();
            await box.install(news.unitName, news.unitText, news.environmentFile, news.serverConfigFile);
            const pid = box.unit("sglang-qwen.service")!.pid;
            const { outs } = await create(news);
            assert.equal(box.unit("sglang-qwen.service")!.pid, pid, "same main PID: not restarted");
            assert.deepEqual(systemctlChanges(), []);
            assert.equal(outs.activeState, "active");
            assert.ok(box.said.includes("[sglang-qwen.service] already runs the declared config; not restarted"), box.said.join("\n"));
        });

        it("refuses a unit another stack owns before changing anything, naming the owner and service.takeOverFrom", async () => {
            const theirs = declared(undefined, { owner: OTHER });
            await box.install(theirs.unitName, theirs.unitText, theirs.environmentFile, theirs.serverConfigFile);
            const news = declared((raw) => {
                raw.memFractionStatic = 0.85;
            });
            await assert.rejects(create(news), /belongs to stack ct129 of project sglang-serve .*set sglang-serve:service\.takeOverFrom: ct129/s);
            assert.equal(box.read(UNIT), theirs.unitText);
            assert.deepEqual(systemctlChanges(), []);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
        });

        it("takes over another stack's unit with service.takeOverFrom by rewriting its owner line, without a restart", async () => {
            const theirs = declared(undefined, { owner: OTHER });
            await box.install(theirs.unitName, theirs.unitText, theirs.environmentFile, theirs.serverConfigFile);
            const pid = box.unit("sglang-qwen.service")!.pid;
            const news = declared((raw) => {
                raw.takeOverFrom = "ct129";
            });
            const { outs } = await create(news);
            assert.equal(box.read(UNIT), news.unitText);
            assert.match(box.read(UNIT)!, /^# sglang-serve owner: sglang-serve\/lab$/m);
            assert.equal(box.unit("sglang-qwen.service")!.pid, pid);
            assert.deepEqual(systemctlChanges(), ["systemctl daemon-reload"]);
            assert.equal(outs.boxOwner, "sglang-serve/lab");
        });

        it("rewrites a unit with the former header (a config hash) without a restart", async () => {
            const news = declared();
            const former = news.unitText.replace(/^(# Managed by sglang-serve[^\n]*)\.\n/, "$1. config-hash: sha256:c2ff01c4603f5444\n");
            assert.notEqual(former, news.unitText);
            await box.install(news.unitName, former, news.environmentFile, news.serverConfigFile);
            const pid = box.unit("sglang-qwen.service")!.pid;
            const { inputs } = await provider.check!({ ...news, unitText: former }, news);
            assert.equal(inputs!.restart, "no");
            await create(news);
            assert.equal(box.read(UNIT), news.unitText);
            assert.equal(box.unit("sglang-qwen.service")!.pid, pid, "same main PID: not restarted");
            assert.deepEqual(systemctlChanges(), ["systemctl daemon-reload"]);
        });

        it("writes a new readiness.startupTimeoutSeconds into the unit (TimeoutStartSec) without a restart: the budget bounds starts only", async () => {
            // The unit an older version wrote whatever the budget (issue 35), or one written with another budget.
            const before = declared(undefined, { readiness: readinessSettings({ startupTimeoutSeconds: 900 }) });
            await box.install(before.unitName, before.unitText, before.environmentFile, before.serverConfigFile);
            const pid = box.unit("sglang-qwen.service")!.pid;
            const news = declared(undefined, { readiness: readinessSettings({ startupTimeoutSeconds: 120 }) });
            assert.match(news.unitText, /^TimeoutStartSec=120$/m);
            const { inputs } = await provider.check!(before, news);
            assert.equal(inputs!.restart, "no");
            await create(news);
            assert.equal(box.read(UNIT), news.unitText);
            assert.equal(box.unit("sglang-qwen.service")!.pid, pid, "same main PID: not restarted");
            assert.deepEqual(systemctlChanges(), ["systemctl daemon-reload"]);
        });
    });

    describe("update (rollout)", () => {
        it("rolls out a changed flag: keeps the previous unit, writes the new one, restarts, and records the new args", async () => {
            const olds = await deployed();
            const pid = box.unit("sglang-qwen.service")!.pid;
            const news = declared((raw) => {
                raw.memFractionStatic = 0.85;
            });
            box.server.requests.length = 0;
            const outs = await update(olds, news);
            const generated = box.server.requests.filter((r) => r.path === "/generate").length;
            assert.equal(
                generated,
                SHIPPED_SERVING_PROMPTS.length * (SERVING_WARMUP_PASSES + SERVING_MEASURED_PASSES),
                "the new config measured over the prompt set: a warm-up pass, then the measured passes",
            );
            assert.equal(box.read("etc/sglang/qwen.service.previous"), olds.unitText);
            assert.equal(box.read("etc/sglang/qwen.env.previous"), declared().environmentFile);
            assert.equal(box.read(UNIT), news.unitText);
            assert.notEqual(box.unit("sglang-qwen.service")!.pid, pid, "restarted");
            assert.equal(outs.flags["--mem-fraction-static"], "0.85");
            assert.equal(outs.liveArgs!.memFractionStatic, 0.85);
            assert.notEqual(outs.revision, olds.revision);
            assert.ok(box.said.includes("[sglang-qwen.service] rollout: changed: --mem-fraction-static"), box.said.join("\n"));
        });

        it("drops the secret values a state of an older version held from what it records", async () => {
            const olds = await deployed();
            const older = { ...olds, apiKey: API_KEY, environmentFile: declared().environmentFile } as ServiceOutputs;
            const outs = await update(older, declared());
            assert.ok(!JSON.stringify(outs).includes(API_KEY), "the key is nowhere in the outputs");
        });

        it("rolls out a new API key: the environment and config files are rewritten (0600) and the server restarted with it", async () => {
            const olds = await deployed();
            const rotated = `${API_KEY}-rotated`;
            deployWith(rotated);
            const news = declared(undefined, { apiKey: rotated });
            const outs = await update(olds, news);
            assert.equal(box.read(ENV), news.environmentFile);
            assert.equal(box.mode(ENV), 0o600);
            assert.equal(box.read(UNIT), olds.unitText, "the unit itself is unchanged");
            assert.match(box.process()!.env!, new RegExp(`^SGLANG_API_KEY=${rotated}$`, "m"));
            assert.equal(box.read(CONFIG), news.serverConfigFile);
            assert.equal(box.mode(CONFIG), 0o600);
            // The box holds the declared files; the state records that, never a digest of them (a weak key could be guessed from one).
            assert.equal(outs.secretsHash, SECRETS_AS_DECLARED);
            assert.ok(!JSON.stringify(outs).includes(sha256(news.environmentFile!)), "a digest of the secrets is in the outputs");
            assert.ok(box.said.includes("[sglang-qwen.service] rollout: secrets changed"), box.said.join("\n"));
        });

        it("stops the old server and waits for its GPU memory before the new unit is written (stop-first)", async () => {
            const olds = await deployed();
            await update(
                olds,
                declared((raw) => (raw.memFractionStatic = 0.85)),
            );
            // The tools' own calls (a multi-line pct exec script's lines are in the log too, so the nvidia-smi call is matched whole).
            const order = box
                .calls()
                .filter((c) => /^systemctl (stop|start)|^nvidia-smi --query-gpu=index,uuid,memory\.used --format=csv,noheader,nounits$/.test(c));
            assert.deepEqual(order, [
                "systemctl stop sglang-qwen.service",
                "nvidia-smi --query-gpu=index,uuid,memory.used --format=csv,noheader,nounits",
                "systemctl start sglang-qwen.service",
            ]);
            const writeAt = box.commands.findIndex((c) => c.includes("sglang-qwen.service.tmp.$$"));
            const gpuAt = box.commands.findIndex((c) => c.includes("--query-gpu=index,uuid,memory.used"));
            assert.ok(gpuAt >= 0 && writeAt > gpuAt, "the unit is written after the GPU memory was released");
        });

        it("puts the previous unit back when the new config crashes at startup, and throws { id, properties, reasons } with it running", async () => {
            const olds = await deployed();
            const news = declared((raw) => (raw.memFractionStatic = 0.85));
            box.startsAs("crash");
            box.server.requests.length = 0;
            await assert.rejects(update(olds, news), (e: PartialFailure) => {
                assert.match(e.message, /^rollout of sglang-qwen\.service failed: .*ValueError.*; the previous unit was put back and is ready again\./s);
                assert.match(e.message, /Last journal lines:\n.*ValueError: Speculative decoding/s);
                assert.equal(e.id, ID);
                assert.equal(e.properties!.unitText, olds.unitText, "the state records the unit that really runs");
                assert.equal(e.properties!.flags["--mem-fraction-static"], "0.88");
                assert.equal(e.properties!.activeState, "active");
                assert.match(e.reasons![0]!, /^rollout of sglang-qwen\.service failed: .*ValueError/);
                assert.ok(e.reasons!.includes("the previous unit was put back and is ready again"), e.reasons!.join("\n"));
                return true;
            });
            assert.equal(box.read(UNIT), olds.unitText);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
            assert.equal(box.process()!.unit, olds.unitText, "the running process runs the previous unit");
            assert.deepEqual(
                box.server.requests.filter((r) => r.path === "/generate"),
                [],
                "the previous config served before: its restart is not put through the serving-quality gate",
            );
        });

        it("gives the previous unit's start the budget it last came up within when the declared budget is shorter", async () => {
            const olds = await deployed(declared(undefined, { readiness: readinessSettings({ startupTimeoutSeconds: 900 }) }));
            const news = declared((raw) => (raw.memFractionStatic = 0.85), { readiness: readinessSettings({ startupTimeoutSeconds: 30 }) });
            box.startsAs("crash");
            await assert.rejects(update(olds, news), /the previous unit was put back and is ready again/);
            const budgets = box.said.filter((l) => / started \(attempt /.test(l)).map((l) => /\(budget (\d+) s\)/.exec(l)?.[1]);
            assert.deepEqual(budgets, ["30", "900"], box.said.join("\n"));
        });

        it("does not retry a start that SGLang's ServerArgs refused: the same config fails the same way", async () => {
            const olds = await deployed();
            box.startsAs("crash");
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85), { readiness: readinessSettings({ startAttempts: 3 }) }),
                ),
                /not retried: SGLang's ServerArgs refused the config before loading anything/,
            );
            assert.equal(box.callsOf("systemctl start").length, 2, "one start of the new config, one of the previous");
        });

        it("leaves a new unit that crashes stopped when there was no previous one, recording it as stopped", async () => {
            box.startsAs("crash");
            const news = declared();
            await assert.rejects(create(news), (e: PartialFailure) => {
                assert.match(e.message, /there was no previous unit; the new one is left stopped for inspection/);
                assert.equal(e.id, ID);
                assert.equal(e.properties!.unitText, news.unitText);
                assert.notEqual(e.properties!.activeState, "active");
                return true;
            });
            assert.notEqual(box.unit("sglang-qwen.service")!.active, "active");
        });

        it("changes nothing and starts the previous server again when the GPU memory is not released", async () => {
            const olds = await deployed();
            box.gpuMemoryStuck();
            const news = declared((raw) => (raw.memFractionStatic = 0.85), { readiness: readinessSettings({ gpuReleaseTimeoutSeconds: 0 }) });
            await assert.rejects(update(olds, news), (e: PartialFailure) => {
                assert.match(e.message, /GPU memory was not released within 0 s after stopping the server/);
                assert.match(e.message, /nothing was changed and the previous server was started again and is ready/);
                assert.equal(e.properties!.unitText, olds.unitText);
                assert.equal(e.properties!.activeState, "active");
                return true;
            });
            assert.equal(box.read(UNIT), olds.unitText);
        });

        it("changes nothing and starts the previous server again when nvidia-smi answers garbage while waiting for the GPU memory", async () => {
            const olds = await deployed();
            box.answer(/--query-gpu=index,uuid,memory\.used/, "No devices were found\n");
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                (e: PartialFailure) => {
                    assert.match(
                        e.message,
                        /GPU memory was not released within 5 s after stopping the server \(.*unexpected nvidia-smi output: No devices were found\)/,
                    );
                    assert.match(e.message, /nothing was changed and the previous server was started again and is ready/);
                    assert.equal(e.properties!.unitText, olds.unitText);
                    return true;
                },
            );
            assert.equal(box.read(UNIT), olds.unitText);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
        });

        it("never shows the API key in a failed rollout's error, even where the journal echoes it", async () => {
            const olds = await deployed();
            box.startsAs("crash");
            box.fake.appendJournal([`server_args=ServerArgs(model_path='/models/Qwen3.6-27B', api_key='${API_KEY}')`]);
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                (e: PartialFailure) => {
                    assert.doesNotMatch(`${e.message}\n${e.reasons!.join("\n")}`, new RegExp(API_KEY));
                    return true;
                },
            );
            assert.ok(
                box.said.every((l) => !l.includes(API_KEY)),
                "nor in the progress lines",
            );
        });

        it("fails naming the command, its exit code and systemd's message when a command errors in the middle of the rollout", async () => {
            const olds = await deployed();
            box.failOn(/systemctl daemon-reload/, { code: 1, stderr: "Failed to reload daemon: Access denied" });
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                (e: Error) => {
                    assert.match(e.message, /command failed with exit code 1: pct exec 129 -- systemctl daemon-reload\nFailed to reload daemon: Access denied/);
                    return true;
                },
            );
        });

        it("throws { id, properties, reasons } recording the stopped server when a command errors after the stop", async () => {
            const olds = await deployed();
            box.failOn(/systemctl daemon-reload/, { code: 1, stderr: "Failed to reload daemon: Access denied" });
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                (e: PartialFailure) => {
                    assert.equal(e.id, ID);
                    assert.equal(e.properties!.activeState, box.unit("sglang-qwen.service")!.active);
                    assert.ok(
                        e.reasons!.some((r) => r.includes("systemctl daemon-reload")),
                        e.reasons!.join("\n"),
                    );
                    return true;
                },
            );
        });

        it("puts the previous unit back and starts it when systemctl start refuses the new one", async () => {
            const olds = await deployed();
            box.startsAs("refuse");
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                /the previous unit was put back and is ready again/,
            );
            assert.equal(box.read(UNIT), olds.unitText);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
        });

        it("fails naming systemctl start and systemd's message when systemd refuses to start the new unit", async () => {
            const olds = await deployed();
            box.startsAs("refuse");
            await assert.rejects(
                update(
                    olds,
                    declared((raw) => (raw.memFractionStatic = 0.85)),
                ),
                /systemctl start sglang-qwen\.service\n.*Job for sglang-qwen\.service failed/s,
            );
        });

        it("restarts a stopped server whose unit is unchanged", async () => {
            const olds = await deployed();
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            box.forget();
            const outs = await update({ ...olds, activeState: "inactive" }, declared());
            assert.ok(box.said.includes("[sglang-qwen.service] rollout: service is inactive"), box.said.join("\n"));
            assert.equal(outs.activeState, "active");
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
        });

        it("enables a disabled unit that already runs the declared config, without a restart", async () => {
            const olds = await deployed();
            await box.fake.run(["systemctl", "disable", "sglang-qwen.service"]);
            box.forget();
            const outs = await update({ ...olds, enabled: false }, declared());
            assert.deepEqual(systemctlChanges(), ["systemctl enable sglang-qwen.service"]);
            assert.equal(outs.enabled, true);
        });
    });

    describe("figures kept per served config (issue 37): what a rollout is held to", () => {
        // The fake server's /generate, 64 tokens at 40 tok/s: 35 verify steps by default (an accept length of 1.83); 33: 1.94; 37: 1.73; 40: 1.60
        // (NEXTN with one step accepts at most 2).
        const serving = (verifyCount: number) => (box.server.behaviour.generate = { verifyCount, e2eLatency: 1.6 });
        const VERIFIED_AT = "verified \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC \\(a return to an earlier config\\)";
        /** NEXTN deployed serving 1.60, then mem-fraction-static 0.85 kept serving 1.94: the last good. */
        const nextnThenBetter = async () => {
            serving(40);
            const nextn = await deployed();
            serving(33);
            const better = await update(
                nextn,
                declared((raw) => (raw.memFractionStatic = 0.85)),
            );
            return { nextn, better };
        };

        it("holds a return to a config verified before to its own figures, not the better ones of the config it replaces: the revert is kept with the default limits", async () => {
            const { nextn, better } = await nextnThenBetter();
            assert.equal(better.servingFigures!.acceptLength, 1.939);
            // The preview of the revert says what it is held to: its own earlier figures, and when they were verified.
            const { inputs } = await provider.check!(better, declared());
            assert.match(
                inputs!.restart!,
                new RegExp(
                    `^yes: --mem-fraction-static changed; held to its own earlier avg accept length 1\\.60 \\(NEXTN\\), 40\\.0 tok/s \\(.*\\), ${VERIFIED_AT}: ` +
                        "accept length at most 10% below, throughput at most 10% below$",
                ),
            );
            // 1.60 again: 17.5% below the config it replaces, as its own.
            serving(40);
            box.forget();
            const reverted = await update(better, inputs!);
            assert.deepEqual(reverted.flags, nextn.flags, "the earlier config serves again");
            assert.equal(reverted.servingFigures!.acceptLength, 1.6, "its figures are the last good again");
            assert.deepEqual(
                reverted.servingHistory!.map((e) => e.figures.acceptLength),
                [1.6, 1.939],
                "the reverted config first, the one it replaced kept",
            );
            const said = box.said.join("\n");
            assert.match(said, new RegExp(`the new config is held to its own earlier avg accept length 1\\.60 \\(NEXTN\\), .*${VERIFIED_AT}`));
            assert.match(said, new RegExp(`against this config's own avg accept length 1\\.60 \\(NEXTN\\), 40\\.0 tok/s, ${VERIFIED_AT}: within 10%`));
        });

        it("refuses a return to a config that serves worse than its own last figures, though better than the last good config's, and keeps the record", async () => {
            serving(33);
            const nextn = await deployed();
            // A switch that serves worse, kept by raising the limit for its one up.
            serving(40);
            const relaxed = { readiness: readinessSettings({ acceptLengthDropLimit: 0.5 }) };
            const switched = await update(
                nextn,
                declared((raw) => (raw.memFractionStatic = 0.85), relaxed),
            );
            assert.equal(switched.servingFigures!.acceptLength, 1.6);
            // Back with the default limits, serving 1.73: above the last good 1.60, but 10.8% below its own 1.94.
            serving(37);
            await assert.rejects(update(switched, declared()), (e: PartialFailure) => {
                assert.match(
                    e.message,
                    new RegExp(
                        `avg accept length 1\\.73 \\(NEXTN\\) is 10\\.8% below this config's own 1\\.94 \\(NEXTN\\), ${VERIFIED_AT}, ` +
                            "more than readiness\\.acceptLengthDropLimit \\(10%\\)",
                    ),
                );
                assert.deepEqual(e.properties!.servingFigures, switched.servingFigures, "the last good figures stay");
                assert.deepEqual(e.properties!.servingHistory, switched.servingHistory, "the history stays");
                assert.equal(e.properties!.flags["--mem-fraction-static"], "0.85", "the switch serves on");
                return true;
            });
        });

        it("holds a new config to the current last good figures, not to an earlier config's lower ones", async () => {
            const { better } = await nextnThenBetter();
            const other = declared((raw) => (raw.memFractionStatic = 0.8));
            const { inputs } = await provider.check!(better, other);
            assert.match(inputs!.restart!, /^yes: --mem-fraction-static changed; held to the last good avg accept length 1\.94 \(NEXTN\), 40\.0 tok\/s /);
            // 1.73: above the first config's 1.60, 10.8% below the last good 1.94.
            serving(37);
            await assert.rejects(
                update(better, inputs!),
                /avg accept length 1\.73 \(NEXTN\) is 10\.8% below the last good config's 1\.94 \(NEXTN\), more than readiness\.acceptLengthDropLimit \(10%\)/,
            );
        });

        it("holds a rollout of a state written before the history to its servingFigures, and starts the history with the config it verifies", async () => {
            const { servingHistory: _none, ...outs } = await deployed();
            const older: ServiceOutputs = { ...outs, servingFigures: { algorithm: "NEXTN", acceptLength: 1.8 } };
            const changed = await update(
                older,
                declared((raw) => (raw.memFractionStatic = 0.85)),
            );
            assert.ok(
                box.said.some((l) => l.includes("the new config is held to the last good avg accept length 1.80 (NEXTN)")),
                box.said.join("\n"),
            );
            assert.equal(changed.servingHistory!.length, 1);
            assert.deepEqual(changed.servingHistory![0]!.figures, changed.servingFigures);
        });
    });

    describe("read", () => {
        it("returns the live state, and inputs as the box has them (unit, flags, owner)", async () => {
            const outs = await deployed();
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, ID);
            assert.equal(read.props!.activeState, "active");
            assert.equal(read.props!.enabled, true);
            assert.equal(read.props!.liveMatchesUnit, true);
            assert.equal(read.props!.revision, outs.revision);
            assert.equal(read.inputs!.unitText, outs.unitText);
            assert.deepEqual(read.inputs!.flags, outs.flags);
            assert.equal(read.inputs!.owner, "sglang-serve/lab");
            assert.equal((read.inputs as unknown as Record<string, unknown>).activeState, undefined, "inputs carry no outputs");
            assert.deepEqual(await provider.diff!(ID, read.props!, declared()), { changes: false, replaces: [] });
        });

        it("records a running server whose accept length fell more than the drop limit below the record as drift naming both figures; a restart is why", async () => {
            const outs = await deployed();
            // The fake box's server reports avg_spec_accept_length 1.83.
            const fell = await provider.read!(ID, { ...outs, servingFigures: { algorithm: "NEXTN", acceptLength: 2.5 } });
            assert.equal(
                fell.props!.acceptLengthDrift,
                "the running server's avg accept length 1.83 is 26.8% below the recorded 2.50 (NEXTN), more than readiness.acceptLengthDropLimit (10%)",
            );
            assert.equal(fell.inputs!.acceptLengthDrift, fell.props!.acceptLengthDrift, "read back with the record, for check to carry");
            assert.deepEqual(await provider.diff!(ID, fell.props!, declared()), { changes: true, replaces: [] });
            const { inputs } = await provider.check!(fell.inputs!, declared());
            assert.equal(
                inputs!.restart,
                `yes: ${fell.props!.acceptLengthDrift}; held to the last good avg accept length 2.50 (NEXTN): accept length at most 10% below`,
            );
        });

        it("reads the accept length afresh at every refresh: a server serving as recorded again is no drift", async () => {
            const outs = await deployed();
            const read = await provider.read!(ID, {
                ...outs,
                servingFigures: { algorithm: "NEXTN", acceptLength: 1.9 },
                acceptLengthDrift: "an earlier refresh's",
            });
            assert.equal(read.props!.acceptLengthDrift, undefined);
            assert.deepEqual(await provider.diff!(ID, read.props!, declared()), { changes: false, replaces: [] });
        });

        it("reads the unit, its secrets and systemd's state in one command, and /server_info in one more", async () => {
            const outs = await deployed();
            await provider.read!(ID, outs);
            assert.equal(box.commands.length, 2, box.commands.join("\n"));
            assert.deepEqual(systemctlChanges(), []);
        });

        it("shares one look at the server with the ReadinessCheck's refresh at the same moment: one /server_info read on the box, one GET /health", async () => {
            const outs = await deployed();
            box.server.requests.length = 0;
            const check = {
                providerVersion: outs.providerVersion,
                connection: outs.connection,
                unitName: outs.unitName,
                endpoint: outs.endpoint,
                revision: outs.revision,
                servedModelName: outs.servedModelName,
                speculativeAlgorithm: outs.speculativeAlgorithm,
                readiness: outs.readiness,
                ready: true,
                liveServerArgs: {},
                speculativeActive: true,
            };
            const [service, readiness] = await Promise.all([provider.read!(ID, outs), readinessCheck.read!("ready", check)]);
            assert.equal(service.props!.liveArgs!.servedName, "qwen3.6-27b");
            assert.equal(readiness.props!.ready, true);
            assert.deepEqual(readiness.props!.liveServerArgs, service.props!.liveArgs);
            assert.equal(box.commands.filter((c) => /python3 -I -c/.test(c) && c.includes("server_info")).length, 1, box.commands.join("\n"));
            assert.deepEqual(box.server.requests.map((r) => r.path).sort(), ["/health", "/server_info"]);
        });

        it("shares no look between two runs: each run's refresh reads the server itself", async () => {
            const outs = await deployed();
            const other = sglangServiceProvider(box.newRun());
            box.forget();
            await Promise.all([provider.read!(ID, outs), other.read!(ID, outs)]);
            assert.equal(box.commands.filter((c) => /python3 -I -c/.test(c) && c.includes("server_info")).length, 2, box.commands.join("\n"));
        });

        it("looks afresh in a rollout right after a refresh: the new args are recorded, not the refresh's look", async () => {
            const olds = (await provider.read!(ID, await deployed())).props!;
            assert.equal(olds.liveArgs!.memFractionStatic, 0.88);
            const outs = await update(
                olds,
                declared((raw) => (raw.memFractionStatic = 0.85)),
            );
            assert.equal(outs.liveArgs!.memFractionStatic, 0.85);
        });

        it("shows a unit edited by hand but not restarted: the edited flag in the inputs and the server not running it", async () => {
            const outs = await deployed();
            box.write(UNIT, outs.unitText.replace("--mem-fraction-static 0.88", "--mem-fraction-static 0.8"), 0o644);
            const read = await provider.read!(ID, outs);
            assert.equal(read.inputs!.flags["--mem-fraction-static"], "0.8");
            assert.equal(read.props!.liveMatchesUnit, false);
            assert.equal(read.props!.liveArgs!.memFractionStatic, 0.88);
            assert.equal((await provider.diff!(ID, read.props!, declared())).changes, true);
        });

        it("reads back extraArgs of every shape, and environment values with spaces and quotes, as declared: a second preview shows no change", async () => {
            const shaped = () =>
                declared((raw) => {
                    raw.extraArgs = [
                        "--reasoning-parser",
                        "qwen3",
                        "--cuda-graph-bs",
                        "1",
                        "2",
                        "4",
                        "8",
                        "--json-model-override-args",
                        '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}',
                        "--context-length=32768",
                    ];
                    raw.environment = { SGLANG_ENABLE_SPEC_V2: "1", NOTE: 'a "quoted" value, 50% and $HOME' };
                });
            const outs = await deployed(shaped());
            const read = await provider.read!(ID, outs);
            assert.equal(read.inputs!.unitText, outs.unitText);
            assert.deepEqual(read.inputs!.flags, shaped().flags);
            assert.equal(read.inputs!.flags["--cuda-graph-bs"], "1 2 4 8");
            assert.equal(read.inputs!.flags["--reasoning-parser"], "qwen3");
            assert.deepEqual(read.inputs!.environment, shaped().environment);
            assert.deepEqual(await provider.diff!(ID, read.props!, shaped()), { changes: false, replaces: [] });
            assert.equal((await provider.check!(read.inputs!, shaped())).inputs!.restart, "no");
        });

        it("shows an extraArgs value edited on the box as that flag changed", async () => {
            const shaped = () => declared((raw) => (raw.extraArgs = ["--cuda-graph-bs", "1", "2", "4", "8"]));
            const outs = await deployed(shaped());
            box.write(UNIT, outs.unitText.replace("--cuda-graph-bs 1 2 4 8", "--cuda-graph-bs 1 2 4 16"), 0o644);
            const read = await provider.read!(ID, outs);
            assert.equal(read.inputs!.flags["--cuda-graph-bs"], "1 2 4 16");
            assert.equal((await provider.diff!(ID, read.props!, shaped())).changes, true);
            // The refresh reads back the deploy's figures with the inputs, so the restart says what it is held to.
            const figures = read.inputs!.servingFigures!;
            assert.equal(figures.algorithm, "NEXTN");
            assert.equal(
                (await provider.check!(read.inputs!, shaped())).inputs!.restart,
                `yes: --cuda-graph-bs changed; held to the last good avg accept length 1.83 (NEXTN), 40.0 tok/s (code 1.83 / 40.0 tok/s, long-context 1.83 / 40.0 tok/s, prose 1.83 / 40.0 tok/s): ` +
                    "accept length at most 10% below, throughput at most 10% below",
            );
        });

        it("reads a unit edited beyond parsing as drift, not a failed refresh", async () => {
            const outs = await deployed();
            box.write(UNIT, "[Service]\nExecStart=/opt/sglang/venv/bin/sglang serve --model-path '/models/Qwen3.6-27B\n", 0o644);
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, ID);
            assert.match(read.inputs!.command.join(" "), /^\(unreadable unit: unbalanced quoting/);
            assert.equal((await provider.diff!(ID, read.props!, declared())).changes, true);
        });

        it("records a stopped server as inactive, for diff to report", async () => {
            const outs = await deployed();
            await box.fake.run(["systemctl", "stop", "sglang-qwen.service"]);
            const read = await provider.read!(ID, outs);
            assert.equal(read.props!.activeState, "inactive");
            assert.equal(read.props!.liveArgs, null);
            assert.equal((await provider.diff!(ID, read.props!, declared())).changes, true);
        });

        it("records secrets changed on the box, for diff to report, without the changed file's digest (issue 19, finding 7)", async () => {
            const outs = await deployed();
            assert.equal((await provider.read!(ID, outs)).props!.secretsHash, outs.secretsHash, "unchanged: the declared file's hash");
            box.write(ENV, "SGLANG_API_KEY=edited-by-hand-0123456789\n", 0o600);
            const read = await provider.read!(ID, outs);
            assert.equal(read.props!.secretsHash, ENVIRONMENT_DIFFERS);
            assert.ok(!box.commands.some((c) => c.includes(sha256("SGLANG_API_KEY=edited-by-hand-0123456789\n"))));
            assert.equal((await provider.diff!(ID, read.props!, declared())).changes, true);
        });

        it("records the owner a unit taken over by another stack now has, so the next check (the former owner's preview) refuses it, naming the new owner", async () => {
            const outs = await deployed();
            box.write(UNIT, declared(undefined, { owner: OTHER }).unitText, 0o644);
            const read = await provider.read!(ID, outs);
            assert.equal(read.inputs!.owner, "sglang-serve/ct129");
            const checked = await provider.check!(read.inputs!, declared());
            assert.deepEqual(
                checked.failures!.map((f) => f.property),
                ["owner"],
            );
            // Moved from tests/e2e/safety.test.ts (ct129's preview after kpro5 took the server over).
            assert.match(checked.failures![0]!.reason, /belongs to stack ct129 of project sglang-serve/);
        });

        it("returns a blank id when the unit is gone", async () => {
            const outs = await deployed();
            box.remove(UNIT);
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, "");
        });

        it("records a container that is not running as drift, not a failed refresh", async () => {
            const outs = await deployed();
            box.containerStatus(129, "stopped");
            const read = await provider.read!(ID, outs);
            assert.equal(read.id, ID);
            assert.equal(read.props!.activeState, "container-stopped");
            assert.equal((await provider.diff!(ID, read.props!, declared())).changes, true);
        });

        it("fails naming the unit read when the box's answer is not the script's output", async () => {
            const outs = await deployed();
            box.answer(/systemctl show -p Id -p ActiveState -p UnitFileState/, "Welcome to the Proxmox VE shell!\n");
            await assert.rejects(provider.read!(ID, outs), /unit read: /);
        });

        it("fails the refresh naming /server_info and the fields when the server answers it in another shape", async () => {
            const outs = await deployed();
            box.server.behaviour.info = "wrong-shape";
            await assert.rejects(provider.read!(ID, outs), /\/server_info is not the expected JSON object: .*tp_size/);
        });

        it("fails naming the id when there is no state to read from", async () => {
            await assert.rejects(provider.read!(ID), /no state to read from/);
        });
    });

    describe("the box's facts, read before a rollout touches anything (providers/sglang-server/facts.ts)", () => {
        /** What the declared server expects of the box, as components/sglang-service.ts gives it (host.gpus.memoryMiB 49140). */
        const facts = (edit: (raw: Record<string, unknown>) => void = () => undefined) => {
            const service = declaredService(box, edit);
            return assertBoxServes(box.run, box.run.remoteFor(box.connection("pct-exec"), "server"), "sglang-qwen.service", boxExpectations(service, 49140));
        };

        it("passes a box whose venv has the declared SGLang and whose model has an MTP head, in one command in the container", async () => {
            const { folderDigest, configJson, ...read } = (await facts()) as BoxFacts;
            assert.match(folderDigest ?? "", /^[0-9a-f]{32}$/);
            // config.json as the box has it, byte for byte: what SGLang's own verdict reads (providers/sglang-server/verdict.ts).
            assert.equal(configJson, box.read(`${MODEL}/config.json`));
            assert.deepEqual(read, {
                sglangVersion: "0.5.11",
                model: "present",
                architecture: "Qwen3_5ForConditionalGeneration",
                layerTypes: ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                mtpLayers: 1,
                weightsBytes: 53_790_000_000,
            });
            assert.equal(box.commands.length, 1);
            assert.match(box.commands[0]!, /^pct exec 129 -- python3 -I -c 'import glob, json, os, stat, subprocess, sys\n/);
            assert.match(box.commands[0]!, / \/opt\/sglang\/venv\/bin\/python3 \/models\/Qwen3\.6-27B sglang$/);
        });

        it("names service.sglangVersion with both releases when the venv has another one", async () => {
            box.installSglang("0.5.10");
            await assert.rejects(
                facts(),
                /nothing on the box was changed:\n {2}- service\.sglangVersion is 0\.5\.11 but \/opt\/sglang\/venv\/bin\/python3 has SGLang 0\.5\.10 installed/,
            );
        });

        it("names service.python when its venv has no SGLang installed", async () => {
            box.installSglang(null);
            await assert.rejects(facts(), /\/opt\/sglang\/venv\/bin\/python3 has no sglang installed/);
        });

        it("names service.python when it does not exist on the box", async () => {
            box.remove("opt/sglang/venv/bin/python3");
            await assert.rejects(
                facts(),
                /nothing on the box was changed:\n {2}- \/opt\/sglang\/venv\/bin\/python3 does not exist on the box: point service\.python at the venv that has SGLang 0\.5\.11, or let the stack install it \(service\.venv\)\.$/,
            );
        });

        it("names service.model.path when the model folder is not on the box", async () => {
            box.remove(MODEL);
            await assert.rejects(facts(), /service\.model\.path \/models\/Qwen3\.6-27B does not exist on the box/);
        });

        it("names service.speculative.algorithm when NEXTN is declared for a checkpoint without MTP layers", async () => {
            box.write(
                `${MODEL}/config.json`,
                JSON.stringify({ architectures: ["Qwen3_5ForConditionalGeneration"], text_config: { layer_types: ["full_attention"] } }),
            );
            await assert.rejects(
                facts(),
                /service\.speculative\.algorithm is NEXTN, which drafts with the checkpoint's own MTP layers, but \/models\/Qwen3\.6-27B\/config\.json has none/,
            );
        });

        it("reports facts the box answers in garbage as a failure of service.python, not a crash", async () => {
            box.answer(/importlib\.metadata/, "Segmentation fault (core dumped)\n");
            await assert.rejects(
                facts(),
                /service\.python \/opt\/sglang\/venv\/bin\/python3 cannot run on the box: the box's facts are not JSON: Segmentation fault/,
            );
        });
    });

    describe("delete", () => {
        it("stops, disables and removes this stack's unit, its secrets and the kept previous unit, and leaves the container", async () => {
            const outs = await update(
                await deployed(),
                declared((raw) => (raw.memFractionStatic = 0.85)),
            );
            assert.notEqual(box.read("etc/sglang/qwen.service.previous"), null, "a rollout kept the previous unit");
            box.forget();
            await provider.delete!(ID, outs);
            for (const p of [UNIT, ENV, "etc/sglang/qwen.service.previous", "etc/sglang/qwen.env.previous"]) assert.equal(box.read(p), null, p);
            assert.deepEqual(systemctlChanges(), ["systemctl disable --now sglang-qwen.service", "systemctl daemon-reload"]);
            assert.equal(box.unit("sglang-qwen.service")!.active, "inactive");
            assert.equal(box.read("etc/pve/lxc/129.conf"), CONTAINER_CONF);
            assert.deepEqual(
                box.calls().filter((c) => /^pct (stop|destroy|set)/.test(c)),
                [],
            );
        });

        it("leaves a unit another stack took over running, and says so", async () => {
            const outs = await deployed();
            const theirs = declared(undefined, { owner: OTHER });
            box.write(UNIT, theirs.unitText, 0o644);
            await provider.delete!(ID, outs);
            assert.equal(box.read(UNIT), theirs.unitText);
            assert.equal(box.read(ENV), declared().environmentFile);
            assert.equal(box.unit("sglang-qwen.service")!.active, "active");
            assert.deepEqual(systemctlChanges(), []);
            assert.ok(
                box.said.some((l) => /^\[sglang-qwen\.service\] not stopped or deleted: .* belongs to stack ct129 of project sglang-serve now/.test(l)),
                box.said.join("\n"),
            );
        });

        it("deletes a unit that records no owner (written by hand or before owners were recorded)", async () => {
            const outs = await deployed();
            box.write(UNIT, outs.unitText.replace(/^# sglang-serve owner: .*\n/m, ""), 0o644);
            await provider.delete!(ID, outs);
            assert.equal(box.read(UNIT), null);
        });

        it("fails naming rm and its message when the files cannot be removed", async () => {
            const outs = await deployed();
            box.failOn(/ rm -f /, { code: 1, stderr: "rm: cannot remove '/etc/systemd/system/sglang-qwen.service': Read-only file system" });
            await assert.rejects(
                provider.delete!(ID, outs),
                /command failed with exit code 1: pct exec 129 -- rm -f .*\nrm: cannot remove .*Read-only file system/s,
            );
        });
    });

    it("builds the inputs the tests use as this stack's", () => {
        assert.equal(declared().owner, `${SELF.project}/${SELF.stack}`);
    });
});
