import * as assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { ReadinessSchema, ServiceSchema } from "../../core/config/schema";
import { planBoxOf, planServer } from "../../core/plan/server-plan";
import { fieldConfig, fieldService } from "./fixtures";

const OWNER = { project: "sglang-serve", stack: "kpro5" };
const BOX = { gpuIndices: [0, 1], gpuMemoryMiB: 49140, gpuName: "NVIDIA RTX A6000" };

describe("a server's plan (core/plan/server-plan.ts)", () => {
    it("writes readiness.startupTimeoutSeconds into the unit as TimeoutStartSec (issue 35)", () => {
        const plan = planServer(fieldService(), BOX, ReadinessSchema.parse({ startupTimeoutSeconds: 120 }), OWNER);
        assert.match(plan.service.unitText, /^TimeoutStartSec=120$/m);
        assert.match(plan.service.unitText, /^# sglang-serve owner: sglang-serve\/kpro5$/m);
        assert.equal(plan.service.owner, "sglang-serve/kpro5");
    });

    it("gives the service and its check the same unit, endpoint, served name, algorithm and readiness", () => {
        const readiness = ReadinessSchema.parse({});
        const { service, check } = planServer(fieldService(), BOX, readiness, OWNER);
        assert.deepEqual(check, {
            unitName: service.unitName,
            endpoint: service.endpoint,
            requireApiKey: true,
            servedModelName: service.servedModelName,
            speculativeAlgorithm: service.speculativeAlgorithm,
            readiness,
        });
        assert.equal(service.endpoint, "http://10.1.230.172:30000");
    });

    it("declares the secret environment (sorted) and puts the EnvironmentFile in the unit for it", () => {
        const service = ServiceSchema.parse({ ...fieldConfig().service, secretEnvironment: ["WANDB_API_KEY", "HF_TOKEN"] });
        const plan = planServer(service, BOX, ReadinessSchema.parse({}), OWNER);
        assert.deepEqual(plan.service.secrets, { apiKey: true, environment: ["HF_TOKEN", "WANDB_API_KEY"] });
        assert.match(plan.service.unitText, /^EnvironmentFile=\/etc\/sglang\/qwen\.env$/m);
    });

    it("gives the server the environment the unit holds, scoped to its GPUs when it declares them, else the box's GPUs", () => {
        const scoped = ServiceSchema.parse({ ...fieldConfig().service, gpus: [1] });
        const plan = planServer(scoped, BOX, ReadinessSchema.parse({}), OWNER);
        assert.deepEqual(plan.service.gpuIndices, [1]);
        assert.equal(plan.service.environment.CUDA_VISIBLE_DEVICES, "1");
        assert.match(plan.service.unitText, /^Environment=CUDA_VISIBLE_DEVICES=1$/m);
        assert.deepEqual(planServer(fieldService(), BOX, ReadinessSchema.parse({}), OWNER).service.gpuIndices, [0, 1]);
    });

    it("takes the box's GPUs as a server in its container sees them, numbered from 0", () => {
        const raw = fieldConfig();
        raw.host.gpus = { count: 4, name: "NVIDIA H200", memoryMiB: 143771 };
        raw.container.gpus = [2, 3];
        const result = validateStackConfig(raw as unknown as Record<string, unknown>);
        assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
        assert.deepEqual(planBoxOf(result.config.boxes[0]!), {
            gpuIndices: [0, 1],
            gpuMemoryMiB: 143771,
            gpuName: "NVIDIA H200",
        });
    });
});
