import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { committedStackSettings, RawServiceBlock, refusedKeyPattern, SGLANG_0511_ROWS } from "../core/fixtures";
import { CONTAINER_TYPE, promiseOf, RecordingMocks, SERVICE_TYPE } from "./recording-mocks";
import { deploySecrets } from "../../providers/deploy-secrets";
import { serviceFromUnit } from "../../core/unit/systemd-unit";
import { renderStack } from "../../scripts/render";
import * as yaml from "js-yaml";

/** A committed stack's settings as Pulumi hands them to the program (objects as JSON text). */
function stackConfig(stack: string): Record<string, string> {
    return Object.fromEntries(Object.entries(committedStackSettings(stack)).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** The key the deploy run gives (SGLANG_SERVE_API_KEY): the program only judges it (as the deploy does), so it must appear in no resource. */
const DEPLOY_KEY = "0123456789abcdef0123456789abcdef";

async function loadProgram(stack: string, extra: Record<string, string> = {}, secretKeys: string[] = []) {
    const mocks = new RecordingMocks();
    await pulumi.runtime.setMocks(mocks, "sglang-serve", stack, false);
    pulumi.runtime.setAllConfig({ ...stackConfig(stack), ...extra }, secretKeys);
    const programPath = require.resolve("../../index");
    delete require.cache[programPath];
    // require, not import(): the program is loaded afresh under each test's mocks (its cache entry deleted above).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require(programPath) as Record<string, pulumi.Output<unknown>>;
    return { mocks, program };
}

/** kpro5 with its server as two one-GPU servers behind a gateway (its H200-sized GPUs hold the model on one). */
function serversWithGateway(): Record<string, string> {
    const settings = committedStackSettings("kpro5") as Record<string, Record<string, unknown>>;
    const { "sglang-serve:service": service, ...rest } = settings;
    const host = { ...rest["sglang-serve:host"], gpus: { count: 2, name: "NVIDIA H200", memoryMiB: 143771 } };
    const one = { ...service, tensorParallelSize: 1 };
    const config = {
        ...rest,
        "sglang-serve:host": host,
        "sglang-serve:servers": [
            { ...one, name: "qwen", gpus: [0] },
            { ...one, name: "qwen-b", gpus: [1], port: 30001 },
        ],
        "sglang-serve:gateway": { smgVersion: "1.13.0", venv: { root: "/opt/smg" }, listenHost: "0.0.0.0", endpointHost: "10.1.230.172" },
    };
    return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, JSON.stringify(v)]));
}

/** The resources a kpro5 stack with one server declares (components and their dynamic resources), sorted. */
const KPRO5_RESOURCE_TYPES = [
    "pulumi-nodejs:dynamic/sglang-serve:GpuHost",
    "pulumi-nodejs:dynamic/sglang-serve:LxcContainer",
    "pulumi-nodejs:dynamic/sglang-serve:ReadinessCheck",
    "pulumi-nodejs:dynamic/sglang-serve:SglangService",
    "sglang-serve:index:GpuHost",
    "sglang-serve:index:LxcContainer",
    "sglang-serve:index:ReadinessCheck",
    "sglang-serve:index:SglangService",
];

describe("the stack program under mocks: servers behind a gateway", () => {
    it("declares each server with its gateway membership, and the gateway with every server as a worker", async () => {
        const mocks = new RecordingMocks();
        await pulumi.runtime.setMocks(mocks, "sglang-serve", "kpro5", false);
        pulumi.runtime.setAllConfig(serversWithGateway(), []);
        const programPath = require.resolve("../../index");
        delete require.cache[programPath];
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const program = require(programPath) as Record<string, pulumi.Output<unknown>>;
        // The gateway's own output: it is registered after every server and check it waits for.
        const gatewayOutputs = program.gateway as unknown as { endpoint: pulumi.Output<string>; workers: pulumi.Output<unknown> };
        await promiseOf(gatewayOutputs.workers);
        const services = mocks.resources.filter((r) => r.type === SERVICE_TYPE);
        assert.deepEqual(
            services.map((r) => [r.inputs.unitName, (r.inputs.gateway as { workerUrl: string; adminUrl: string }).workerUrl]),
            [
                ["sglang-qwen.service", "http://10.1.230.172:30000"],
                ["sglang-qwen-b.service", "http://10.1.230.172:30001"],
            ],
        );
        assert.equal((services[0]!.inputs.environment as Record<string, string>).CUDA_VISIBLE_DEVICES, "0");
        const gateway = mocks.resources.find((r) => r.type === "pulumi-nodejs:dynamic/sglang-serve:SglangGateway")!;
        assert.equal(gateway.inputs.unitName, "sglang-gateway.service");
        assert.equal(gateway.inputs.adminUrl, "http://127.0.0.1:30080");
        assert.deepEqual(gateway.inputs.workers, [
            { name: "qwen", url: "http://10.1.230.172:30000" },
            { name: "qwen-b", url: "http://10.1.230.172:30001" },
        ]);
        assert.equal(gateway.inputs.requireApiKey, true);
        assert.match(
            String(gateway.inputs.unitText),
            /ExecStart=\/opt\/smg\/venv-1\.13\.0\/bin\/python3 -I -c "import os, sys; .*from smg\.cli import main; .*" launch \\\n {4}--host 0\.0\.0\.0/,
        );
        assert.equal(await promiseOf(gatewayOutputs.endpoint), "http://10.1.230.172:30080");
        assert.equal(program.endpoint, null, "two servers: no top-level endpoint");
    });
});

describe("the stack program under mocks: one server as `service` or as `servers`", () => {
    // What tests/e2e/gpu-scoped-servers.test.ts once checked with a `preview --expect-no-changes` on the
    // lab: a stack deployed with its server in `servers` has nothing to do when the server is written as
    // `service`. The engine's no-op path for unchanged inputs is every no-op up's (tests/e2e/deploy.test.ts).
    it("declares the same resources with the same inputs, and the same outputs, for one server written as `service` or as the only entry of `servers`", async () => {
        const settings = committedStackSettings("kpro5") as Record<string, Record<string, unknown>>;
        const { "sglang-serve:service": service, ...rest } = settings;
        // As the e2e had it: a one-GPU server on GPU 0 of a box with two GPUs that each hold the model.
        const host = { ...rest["sglang-serve:host"], gpus: { count: 2, name: "NVIDIA H200", memoryMiB: 143771 } };
        const qwen = { ...service, tensorParallelSize: 1, gpus: [0] };
        const declared = async (config: Record<string, unknown>) => {
            const mocks = new RecordingMocks();
            await pulumi.runtime.setMocks(mocks, "sglang-serve", "kpro5", false);
            pulumi.runtime.setAllConfig(Object.fromEntries(Object.entries(config).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])), []);
            const programPath = require.resolve("../../index");
            delete require.cache[programPath];
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const program = require(programPath) as Record<string, unknown>;
            const outputs = await promiseOf(pulumi.output(program));
            return { resources: mocks.resources, outputs };
        };
        const asService = await declared({ ...rest, "sglang-serve:host": host, "sglang-serve:service": qwen });
        const asServers = await declared({ ...rest, "sglang-serve:host": host, "sglang-serve:servers": [qwen] });
        assert.deepEqual(asService.resources.map((r) => r.type).sort(), KPRO5_RESOURCE_TYPES);
        assert.deepEqual(asServers.resources, asService.resources);
        assert.deepEqual(asServers.outputs, asService.outputs);
    });
});

describe("the stack program under mocks", () => {
    it("declares host, container, service and readiness resources for kpro5", async () => {
        const { mocks, program } = await loadProgram("kpro5");
        await promiseOf(program.liveServerArgs);
        const types = mocks.resources.map((r) => r.type);
        assert.deepEqual(types.sort(), KPRO5_RESOURCE_TYPES);
    });

    it("renders the unit with exactly the declared SGLang flags", async () => {
        const { mocks, program } = await loadProgram("kpro5");
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.equal(unit.inputs.unitName, "sglang-qwen.service");
        assert.deepEqual(unit.inputs.flags, {
            "--model-path": "/models/Qwen3.6-27B",
            "--served-model-name": "qwen3.6-27b",
            "--tp-size": "2",
            "--speculative-algorithm": "NEXTN",
            "--speculative-num-steps": "1",
            "--speculative-eagle-topk": "1",
            "--speculative-num-draft-tokens": "2",
            "--mamba-scheduler-strategy": "extra_buffer",
            "--mem-fraction-static": "0.88",
            "--host": "0.0.0.0",
            "--port": "30000",
            "--config": "/etc/sglang/qwen.yaml",
        });
        assert.deepEqual(unit.inputs.environment, { SGLANG_ENABLE_SPEC_V2: "1" });
    });

    it("declares, byte for byte, the unit `npm run render` prints for the stack: with readiness.startupTimeoutSeconds 120, TimeoutStartSec=120 (issue 35)", async () => {
        const settings = committedStackSettings("kpro5");
        const readiness = { ...(settings["sglang-serve:readiness"] as Record<string, unknown>), startupTimeoutSeconds: 120 };
        const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:readiness": JSON.stringify(readiness) });
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        const rendered = renderStack(yaml.dump({ config: { ...settings, "sglang-serve:readiness": readiness } }), { project: "sglang-serve", stack: "kpro5" });
        assert.equal(unit.inputs.unitText, rendered.servers[0]!.unitText);
        assert.match(String(unit.inputs.unitText), /^TimeoutStartSec=120$/m);
        assert.match(String(unit.inputs.unitText), /^# sglang-serve owner: sglang-serve\/kpro5$/m);
    });

    it("previews a flag repeated in extraArgs with a warning naming both elements, and runs the argv as written (issue 37)", async () => {
        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        const extraArgs = ["--log-level", "info", "--enable-metrics", "--log-level", "debug"];
        service.extraArgs = extraArgs;
        // Under mocks there is no engine: pulumi.log.warn writes to console.warn.
        const warnings: string[] = [];
        const consoleWarn = console.warn;
        console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
        try {
            const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) });
            await promiseOf(program.unitName);
            const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
            // SGLang gets both elements and keeps the last: the unit holds them as written, the flags (preview, drift) show the last.
            assert.deepEqual(serviceFromUnit(String(unit.inputs.unitText)).argv.slice(-extraArgs.length), extraArgs);
            assert.equal((unit.inputs.flags as Record<string, string>)["--log-level"], "debug");
        } finally {
            console.warn = consoleWarn;
        }
        const repeated = warnings.filter((w) => w.includes("--log-level"));
        assert.equal(repeated.length, 1, warnings.join("\n"));
        assert.match(repeated[0]!, /service\.extraArgs\[0\] \(--log-level info\) and service\.extraArgs\[3\] \(--log-level debug\) both set --log-level/);
        assert.match(repeated[0]!, /runs with --log-level debug/);
    });

    it("leaves a source's branch name to the SglangService's check, which can ask the Hub: the program declares the server with it as written", async () => {
        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        const { path: _path, ...model } = service.model as Record<string, unknown>;
        service.model = { ...model, source: { hf: "sglang-lab/Tiny-Qwen3", revision: "main" } };
        const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) });
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.deepEqual(
            (unit.inputs.weights as Array<{ role: string; revision: string }>).map((w) => [w.role, w.revision]),
            [["model", "main"]],
        );
    });

    it("runs the service commands inside container 129 through pct exec", async () => {
        const { mocks, program } = await loadProgram("kpro5");
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.deepEqual(unit.inputs.connection, {
            address: "10.1.2.5",
            port: 22,
            user: "root",
            hostKey: (JSON.parse(stackConfig("kpro5")["sglang-serve:host"]) as { hostKey: string }).hostKey,
            topology: "pct-exec",
            vmid: 129,
        });
    });

    it("has no container resource for ct129 (ssh straight into the container)", async () => {
        const { mocks, program } = await loadProgram("ct129");
        await promiseOf(program.unitName);
        assert.equal(mocks.resources.filter((r) => r.type === CONTAINER_TYPE).length, 0);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.equal((unit.inputs.connection as { address: string }).address, "10.1.230.172");
    });

    it("gives no resource a secret, even in a deploy run that holds the key: only the declared names, and --config for the key", async () => {
        process.env.SGLANG_SERVE_API_KEY = DEPLOY_KEY;
        try {
            const config = stackConfig("kpro5");
            const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
            service.secretEnvironment = ["HF_TOKEN"];
            const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) });
            await promiseOf(program.unitName);
            const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
            assert.deepEqual(unit.inputs.secrets, { apiKey: true, environment: ["HF_TOKEN"] });
            assert.match(String(unit.inputs.unitText), /--config \/etc\/sglang\/qwen\.yaml/);
            assert.match(String(unit.inputs.unitText), /^EnvironmentFile=\/etc\/sglang\/qwen\.env$/m);
            for (const r of mocks.resources) {
                const text = JSON.stringify(r.inputs);
                assert.ok(!text.includes(DEPLOY_KEY), `${r.type} holds the key`);
                // Secret inputs reach the mocks wrapped with Pulumi's secret signature: none at all.
                assert.ok(!text.includes("1b47061264138c4ac30d75fd1eb44270"), `${r.type} has a secret input: ${text}`);
                assert.ok(!("apiKey" in r.inputs) && !("environmentFile" in r.inputs), r.type);
            }
        } finally {
            delete process.env.SGLANG_SERVE_API_KEY;
        }
    });

    it("fails the preview of kpro5 given a short SGLANG_SERVE_API_KEY, with the deploy's own message naming the key's rule, never the key", async () => {
        process.env.SGLANG_SERVE_API_KEY = "Zq9short";
        try {
            const deployMessage = (() => {
                try {
                    deploySecrets({ apiKey: true, environment: [] });
                } catch (e) {
                    return (e as Error).message;
                }
                assert.fail("the deploy takes the short key");
            })();
            await assert.rejects(
                () => loadProgram("kpro5"),
                (e: Error) =>
                    e.message.includes(deployMessage) &&
                    /SGLANG_SERVE_API_KEY is 8 characters long but must be 16-256: set a longer key/.test(e.message) &&
                    !e.message.includes("Zq9short"),
            );
        } finally {
            delete process.env.SGLANG_SERVE_API_KEY;
        }
    });

    it("refuses the API key, a generated key or the SSH key as Pulumi config, naming the way out", async () => {
        for (const [key, value] of [
            ["sglang-serve:apiKey", DEPLOY_KEY],
            ["sglang-serve:generateApiKey", "true"],
            ["sglang-serve:sshPrivateKey", "-----BEGIN OPENSSH PRIVATE KEY-----"],
        ]) {
            await assert.rejects(
                () => loadProgram("kpro5", { [key]: value }, key === "sglang-serve:generateApiKey" ? [] : [key]),
                (e: Error) =>
                    e.message.includes(`${key} = `) && /SGLANG_SERVE_API_KEY|ssh-agent/.test(e.message) && (value === "true" || !e.message.includes(value)),
                key,
            );
        }
    });

    it("records this project and stack as the unit's owner, and passes service.takeOverFrom on", async () => {
        const { mocks, program } = await loadProgram("kpro5");
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.equal(unit.inputs.owner, "sglang-serve/kpro5");
        assert.match(String(unit.inputs.unitText), /^# sglang-serve owner: sglang-serve\/kpro5$/m);
        assert.equal(unit.inputs.takeOverFrom, undefined);

        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        service.takeOverFrom = "ct129";
        const taking = await loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) });
        await promiseOf(taking.program.unitName);
        assert.equal(taking.mocks.resources.find((r) => r.type === SERVICE_TYPE)!.inputs.takeOverFrom, "ct129");
    });

    it("fails the preview of kpro5 (0.0.0.0) when it requires no API key, naming requireApiKey", async () => {
        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        delete service.requireApiKey;
        await assert.rejects(
            () => loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) }),
            (e: Error) => /sglang-serve:service\.requireApiKey = false/.test(e.message) && /allowUnauthenticated/.test(e.message),
        );
    });

    it("previews kpro5 without a key when service.allowUnauthenticated is true", async () => {
        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        service.allowUnauthenticated = true;
        delete service.requireApiKey;
        const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:service": JSON.stringify(service) });
        await promiseOf(program.unitName);
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.doesNotMatch(String(unit.inputs.unitText), /--api-key/);
    });

    it("fails with one message naming every bad key", async () => {
        const bad = stackConfig("kpro5");
        const service = JSON.parse(bad["sglang-serve:service"]) as Record<string, unknown>;
        service.port = 70000;
        (service.speculative as Record<string, unknown>).algorithm = "MTP";
        bad["sglang-serve:service"] = JSON.stringify(service);
        await assert.rejects(
            async () => {
                await pulumi.runtime.setMocks(new RecordingMocks(), "sglang-serve", "kpro5", false);
                pulumi.runtime.setAllConfig(bad);
                delete require.cache[require.resolve("../../index")];
                // eslint-disable-next-line @typescript-eslint/no-require-imports
                require("../../index");
            },
            (e: Error) => /service\.port/.test(e.message) && /service\.speculative\.algorithm/.test(e.message),
        );
    });
});

// The per-row judgements tests/e2e/preview.test.ts made with the real engine, one preview each: the program's config
// validation (the preview contacts no host, so the SglangService's check has no box facts and SGLang's own verdict waits for
// the rollout) refuses a row with the text the engine prints, or declares its server. The engine previews one of each kind.
describe("the stack program under mocks: kpro5's rows, judged as SGLang 0.5.11 does", () => {
    for (const { row, edit, fails } of SGLANG_0511_ROWS) {
        it(row, async () => {
            const config = stackConfig("kpro5");
            const service = JSON.parse(config["sglang-serve:service"]) as RawServiceBlock;
            edit(service);
            const extra = { "sglang-serve:service": JSON.stringify(service) };
            if (!fails) {
                const { mocks, program } = await loadProgram("kpro5", extra);
                await promiseOf(program.unitName);
                assert.equal(mocks.resources.filter((r) => r.type === SERVICE_TYPE).length, 1);
                return;
            }
            await assert.rejects(
                () => loadProgram("kpro5", extra),
                (e: Error) => {
                    assert.match(e.message, refusedKeyPattern(fails.key));
                    assert.match(e.message, fails.text);
                    return true;
                },
            );
        });
    }
});
