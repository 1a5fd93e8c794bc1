// The fleet program of `npm run bench`: the stack's own program (index.ts)
// with the one service replaced by a list of them on the same host and
// container, one SglangService + ReadinessCheck per entry of the stack config
// `sglang-serve:fleet: [{ name, port }, ...]`, every other setting as in
// `sglang-serve:service`. It measures what one operation costs per service
// (the "fleet refresh 16:1" figure), which N one-service stacks cannot.
//
// Not a deployable program of the project: scripts/bench.ts runs it from a
// deployment folder whose index.ts re-exports it; its imports are the
// project's own components.
import * as pulumi from "@pulumi/pulumi";
import { Connection } from "../../components/connection";
import { GpuHost } from "../../components/gpu-host";
import { LxcContainer } from "../../components/lxc-container";
import { ReadinessCheck } from "../../components/readiness-check";
import { SglangService } from "../../components/sglang-service";
import { validateStackConfig } from "../../core/config";
import { formatConfigIssues } from "../../core/config-issues";
import type { StackConfig } from "../../core/config-schema";
import { readRawStackConfig } from "../../components/stack-config";

const pulumiConfig = new pulumi.Config();
const raw = readRawStackConfig(pulumiConfig) as { service?: Record<string, unknown> };
const fleet = pulumiConfig.requireObject<Array<{ name: string; port: number }>>("fleet");
// Each server is validated as its own one-service stack would be.
const stacks: StackConfig[] = fleet.map((f) => {
    const result = validateStackConfig({ ...raw, service: { ...raw.service, name: f.name, port: f.port } });
    if (!result.ok) throw new pulumi.RunError(formatConfigIssues(result.issues));
    return result.config;
});
const { host, container, readiness } = stacks[0]!;

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
    const ct = new LxcContainer(`ct${container.vmid}`, { connection: hostConnection, container, deviceMajors: gpuHost.deviceMajors });
    serviceConnection = ct.vmid.apply((vmid) => ({ ...hostConnection, vmid }));
    placement = ct;
    gpuIndices = container.gpus.map((_, i) => i);
}

export const endpoints: Record<string, pulumi.Output<string>> = {};
for (const { service } of stacks) {
    const server = new SglangService(service.name, { connection: serviceConnection, service, readiness, gpuIndices }, { dependsOn: [placement] });
    new ReadinessCheck(`${service.name}-ready`, {
        connection: serviceConnection,
        unitName: server.unitName,
        endpoint: server.endpoint,
        revision: server.revision,
        requireApiKey: service.requireApiKey,
        servedModelName: service.model.servedName,
        speculativeAlgorithm: service.speculative?.algorithm,
        readiness,
    });
    endpoints[service.name] = server.endpoint;
}
