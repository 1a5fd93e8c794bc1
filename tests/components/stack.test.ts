import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { committedStackSettings } from "../core/fixtures";
import { CONTAINER_TYPE, promiseOf, RecordingMocks, SERVICE_TYPE } from "./recording-mocks";

/** A committed stack's settings as Pulumi hands them to the program (objects as JSON text). */
function stackConfig(stack: string): Record<string, string> {
    return Object.fromEntries(Object.entries(committedStackSettings(stack)).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** The field stacks listen on 0.0.0.0: operators set this secret (the committed files hold none). */
const API_KEY = { "sglang-serve:apiKey": "0123456789abcdef0123456789abcdef" };

async function loadProgram(stack: string, extra: Record<string, string> = API_KEY) {
    const mocks = new RecordingMocks();
    await pulumi.runtime.setMocks(mocks, "sglang-serve", stack, false);
    pulumi.runtime.setAllConfig({ ...stackConfig(stack), ...extra }, Object.keys(API_KEY));
    const programPath = require.resolve("../../index");
    delete require.cache[programPath];
    // require, not import(): the program is loaded afresh under each test's mocks (its cache entry deleted above).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require(programPath) as Record<string, pulumi.Output<unknown>>;
    return { mocks, program };
}

describe("the stack program under mocks", () => {
    it("declares host, container, service and readiness resources for kpro5", async () => {
        const { mocks, program } = await loadProgram("kpro5");
        await promiseOf(program.liveServerArgs);
        const types = mocks.resources.map((r) => r.type);
        assert.deepEqual(types.sort(), [
            "pulumi-nodejs:dynamic/sglang-serve:GpuHost",
            "pulumi-nodejs:dynamic/sglang-serve:LxcContainer",
            "pulumi-nodejs:dynamic/sglang-serve:ReadinessCheck",
            "pulumi-nodejs:dynamic/sglang-serve:SglangService",
            "sglang-serve:index:GpuHost",
            "sglang-serve:index:LxcContainer",
            "sglang-serve:index:ReadinessCheck",
            "sglang-serve:index:SglangService",
        ]);
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
            "--api-key": "${SGLANG_API_KEY}",
        });
        assert.deepEqual(unit.inputs.environment, { SGLANG_ENABLE_SPEC_V2: "1" });
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

    it("generates an API key with @pulumi/random when asked and keeps it out of the unit text", async () => {
        const { mocks, program } = await loadProgram("kpro5", { "sglang-serve:generateApiKey": "true" });
        await promiseOf(program.unitName);
        assert.ok(mocks.resources.some((r) => r.type === "random:index/randomPassword:RandomPassword"));
        const unit = mocks.resources.find((r) => r.type === SERVICE_TYPE)!;
        assert.match(String(unit.inputs.unitText), /--api-key \$\{SGLANG_API_KEY\}/);
        assert.doesNotMatch(String(unit.inputs.unitText), /generated-key/);
        // Secret inputs reach the mocks wrapped as { value } with Pulumi's secret signature.
        const envFile = unit.inputs.environmentFile as { value: string };
        assert.match(envFile.value, /^SGLANG_API_KEY=generated-key-0123456789abcdef$/m);
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
        const taking = await loadProgram("kpro5", { ...API_KEY, "sglang-serve:service": JSON.stringify(service) });
        await promiseOf(taking.program.unitName);
        assert.equal(taking.mocks.resources.find((r) => r.type === SERVICE_TYPE)!.inputs.takeOverFrom, "ct129");
    });

    it("fails the preview of kpro5 (0.0.0.0) without an API key, naming the key", async () => {
        await assert.rejects(
            () => loadProgram("kpro5", {}),
            (e: Error) => /sglang-serve:apiKey = \(not set\)/.test(e.message) && /allowUnauthenticated/.test(e.message),
        );
    });

    it("fails the preview naming the key when the API key is short", async () => {
        await assert.rejects(
            () => loadProgram("kpro5", { "sglang-serve:apiKey": "short" }),
            (e: Error) =>
                /sglang-serve:apiKey = \[secret\]/.test(e.message) && /5 characters long but must be 16-256/.test(e.message) && !/"short"/.test(e.message),
        );
    });

    it("fails the preview naming the key when the API key is empty", async () => {
        await assert.rejects(
            () => loadProgram("kpro5", { "sglang-serve:apiKey": "" }),
            (e: Error) => /sglang-serve:apiKey = \[secret\]/.test(e.message) && /is empty/.test(e.message),
        );
    });

    it("previews kpro5 without a key when service.allowUnauthenticated is true", async () => {
        const config = stackConfig("kpro5");
        const service = JSON.parse(config["sglang-serve:service"]) as Record<string, unknown>;
        service.allowUnauthenticated = true;
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
