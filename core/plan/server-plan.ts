/**
 * One server's plan: everything the stack derives from a declared server,
 * computed once. The SglangService component (its resource's inputs), the
 * ReadinessCheck (its inputs), `npm run render`, the bench's fleet and the
 * providers' test harness all take it from here, so what render prints is
 * what a deploy writes (issue 35: a hand-written copy in the component had
 * dropped readiness.startupTimeoutSeconds from the unit).
 */
import type { BoxConfig, ReadinessConfig, ServiceConfig } from "../config/schema";
import { boxExpectations, type BoxExpectations } from "../box/box-facts";
import type { DeclaredSecrets } from "../secrets/deploy-secrets";
import { renderArgv } from "../sglang/args";
import { flagMap } from "../sglang/flag-map";
import { formatOwner } from "../unit/ownership";
import { renderUnit, serverEnvironment, type UnitOwner } from "../unit/systemd-unit";
import { serverConfigFilePath, unitName } from "../unit/unit-paths";
import { venvPlanOf, type VenvPlan } from "../venv/venv-layout";
import { hubVenvPlan } from "../weights/hub-venv";
import { weightsPlansOf, type WeightsPlan } from "../weights/staging";

/** What a server's plan takes from the box it runs on. */
export interface PlanBox {
    /** The GPUs a server that declares none (service.gpus) uses: all of the box's, as the server sees them. */
    gpuIndices: number[];
    /** One GPU's memory (host.gpus.memoryMiB), for the memory check when the weights' size comes from the box. */
    gpuMemoryMiB?: number;
    /** The GPUs' name (host.gpus.name), for SGLang's own verdict at preview. */
    gpuName?: string;
}

/** What the plan takes of a declared box: its GPUs as a server on it sees them (inside a container, numbered from 0), their memory and name. */
export function planBoxOf({ host, container }: Pick<BoxConfig, "host" | "container">): PlanBox {
    return {
        gpuIndices: container ? container.gpus.map((_, i) => i) : Array.from({ length: host.gpus.count }, (_, i) => i),
        gpuMemoryMiB: host.gpus.memoryMiB,
        ...(host.gpus.name !== undefined ? { gpuName: host.gpus.name } : {}),
    };
}

/**
 * What the SglangService resource is given of the plan (its other inputs:
 * where it runs, the gateway, the provider's version and record).
 */
export interface ServicePlan {
    unitName: string;
    /** The unit file, byte for byte as it is written on the box. */
    unitText: string;
    /** The command line, split as a preview shows it (core/sglang/flag-map.ts). */
    command: string[];
    flags: Record<string, string>;
    /** The environment the unit gives the server (core/unit/systemd-unit.ts serverEnvironment). */
    environment: Record<string, string>;
    /** Declared only: the values come from the deploy run (core/secrets/deploy-secrets.ts). */
    secrets: DeclaredSecrets;
    endpoint: string;
    servedModelName: string;
    speculativeAlgorithm: string | undefined;
    /** The GPUs the server uses, watched for memory release between stop and start. */
    gpuIndices: number[];
    gpuName: string | undefined;
    readiness: ReadinessConfig;
    /** `<project>/<stack>`, recorded in the unit. */
    owner: string;
    takeOverFrom: string | undefined;
    /** What the server needs of the box (core/box/box-facts.ts). */
    expectBox: BoxExpectations;
    /** service.venv: the release's venv the rollout stages when it is missing (core/venv/venv-layout.ts). */
    venv: VenvPlan | undefined;
    /** service.model.source and service.speculative.draftModelSource: the revisions the rollout stages and verifies before the stop (core/weights/staging.ts); absent without a source. */
    weights: WeightsPlan[] | undefined;
    /** The stack's huggingface_hub venv the staging runs in (core/weights/hub-venv.ts); with `weights` only. */
    hubVenv: VenvPlan | undefined;
}

/** What the ReadinessCheck is given of the plan (its other inputs: where it runs, the service's revision). */
export interface CheckPlan {
    unitName: string;
    /** http://host:port of the OpenAI-compatible API. */
    endpoint: string;
    /** The check authenticates with the deploy run's key (never an input). */
    requireApiKey: boolean;
    servedModelName: string;
    speculativeAlgorithm: string | undefined;
    readiness: ReadinessConfig;
}

export interface ServerPlan {
    /** The server's command line as the unit runs it. */
    argv: string[];
    service: ServicePlan;
    check: CheckPlan;
}

/**
 * The plan of `server` on `box`, waited for with `readiness`, recorded in its
 * unit as `owner`'s. Pure: reads nothing, so `npm run render` and a test
 * get the very text a deploy writes.
 */
export function planServer(server: ServiceConfig, box: PlanBox, readiness: ReadinessConfig, owner: UnitOwner): ServerPlan {
    // With an API key SGLang reads it from a 0600 --config file; the secret environment is in the 0600 EnvironmentFile.
    const secrets: DeclaredSecrets = { apiKey: server.requireApiKey, environment: [...server.secretEnvironment].sort() };
    const argv = renderArgv(server, server.requireApiKey ? { configFile: serverConfigFilePath(server.name) } : {});
    const { command, flags } = flagMap(argv);
    const endpoint = `http://${server.endpointHost}:${server.port}`;
    const name = unitName(server.name);
    const speculativeAlgorithm = server.speculative?.algorithm;
    const weights = weightsPlansOf(server);
    return {
        argv,
        service: {
            unitName: name,
            unitText: renderUnit(server, {
                hasSecrets: secrets.apiKey,
                hasSecretEnvironment: secrets.environment.length > 0,
                owner,
                startupTimeoutSeconds: readiness.startupTimeoutSeconds,
            }),
            command,
            flags,
            environment: serverEnvironment(server),
            secrets,
            endpoint,
            servedModelName: server.model.servedName,
            speculativeAlgorithm,
            // A server declared with its GPUs sees only those (serverEnvironment); else the box's.
            gpuIndices: server.gpus ?? box.gpuIndices,
            gpuName: box.gpuName,
            readiness,
            owner: formatOwner(owner),
            takeOverFrom: server.takeOverFrom,
            expectBox: boxExpectations(server, box.gpuMemoryMiB),
            venv: venvPlanOf(server, argv),
            weights: weights.length > 0 ? weights : undefined,
            hubVenv: weights.length > 0 ? hubVenvPlan(server) : undefined,
        },
        check: {
            unitName: name,
            endpoint,
            requireApiKey: server.requireApiKey,
            servedModelName: server.model.servedName,
            speculativeAlgorithm,
            readiness,
        },
    };
}
