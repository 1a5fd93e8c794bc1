import * as pulumi from "./components/pulumi";
import { Connection } from "./components/connection";
import { GpuHost } from "./components/gpu-host";
import { LxcContainer } from "./components/lxc-container";
import { ReadinessCheck } from "./components/readiness-check";
import { SglangService } from "./components/sglang-service";
import { loadStackConfig } from "./components/stack-config";

const pulumiConfig = new pulumi.Config();
const stack = loadStackConfig(pulumiConfig);
const { host, container, service, readiness } = stack;

const hostConnection: Connection = {
    address: host.address,
    port: host.port,
    user: host.user,
    hostKey: host.hostKey,
    topology: host.topology,
};

const gpuHost = new GpuHost(host.name, { connection: hostConnection, expectedGpus: host.gpus });

let serviceConnection: pulumi.Input<Connection> = hostConnection;
let placement: pulumi.Resource = gpuHost;
let gpuIndices = Array.from({ length: host.gpus.count }, (_, i) => i);
if (container) {
    const ct = new LxcContainer(`ct${container.vmid}`, {
        connection: hostConnection,
        container,
        deviceMajors: gpuHost.deviceMajors,
    });
    serviceConnection = ct.vmid.apply((vmid) => ({ ...hostConnection, vmid }));
    placement = ct;
    // Inside the container the passed-through GPUs are numbered from 0.
    gpuIndices = container.gpus.map((_, i) => i);
}

/** @pulumi/random, loaded only when a key is generated: its index loads all of @pulumi/pulumi (~0.3 s). */
function randomProvider(): typeof import("@pulumi/random") {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("@pulumi/random");
}

const apiKey: pulumi.Output<string> | undefined =
    pulumiConfig.getSecret("apiKey") ??
    // Generated keys need @pulumi/random's plugin; the real-engine tests set the key in config instead.
    (pulumiConfig.getBoolean("generateApiKey")
        ? new (randomProvider().RandomPassword)(`${service.name}-api-key`, { length: 40, special: false }).result
        : undefined);

const server = new SglangService(
    service.name,
    { connection: serviceConnection, service, readiness, apiKey, gpuIndices, gpuMemoryMiB: host.gpus.memoryMiB },
    { dependsOn: [placement] },
);

const check = new ReadinessCheck(`${service.name}-ready`, {
    connection: serviceConnection,
    unitName: server.unitName,
    endpoint: server.endpoint,
    revision: server.revision,
    gatePassed: server.gatePassed,
    apiKey,
    servedModelName: service.model.servedName,
    speculativeAlgorithm: service.speculative?.algorithm,
    readiness,
});

export const endpoint = server.endpoint;
export const openaiBaseUrl = pulumi.interpolate`${server.endpoint}/v1`;
export const unitName = server.unitName;
export const servedModelName = service.model.servedName;
export const liveServerArgs = check.liveServerArgs;
export const speculativeActive = check.speculativeActive;
export const gpus = gpuHost.gpus;
