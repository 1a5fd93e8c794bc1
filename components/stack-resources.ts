import * as pulumi from "./pulumi";
import type { ContainerConfig, HostConfig, ReadinessConfig, ServerConfig, ServiceConfig, StackConfig } from "../core/config/schema";
import { Connection } from "../core/connection";
import { serverComputeCapability } from "../core/box/gpu-facts";
import { GpuHost } from "./gpu-host";
import { LxcContainer } from "./lxc-container";
import { ReadinessCheck } from "./readiness-check";
import { SglangService } from "./sglang-service";
import { gatewayAdminUrl, GatewayMembership, workerUrl } from "../core/gateway/gateway";
import { SglangGateway } from "./sglang-gateway";
import { planBoxOf, PlanBox, planServer } from "../core/plan/server-plan";

// The stack's resources, declared from its validated config: per box the GPU
// host and, with pct-exec, the container; per server the service and its
// readiness check; the gateway in front of them. index.ts declares the stack
// (declareStack). A server's resources are named by the server, a box's by
// the box, whether the stack writes `service` or `servers`: a server keeps its
// resources (URNs) when a stack moves it from `service` into `servers`.

/** Where the servers run: the GPU host, and the container when there is one. */
export interface Box {
    gpuHost: GpuHost;
    /** Where a server's commands go: the container (through `pct exec`), or the host itself (direct). */
    serverConnection: pulumi.Input<Connection>;
    /** What a server waits for: the container when there is one, else the host. */
    placement: pulumi.Resource;
    /** What a server's plan takes of the box: its GPUs as the server sees them, their memory and name. */
    plan: PlanBox;
    /** The host's nvidia-smi index of each GPU as the server sees it (index i inside: hostGpuIndices[i]). */
    hostGpuIndices: number[];
}

/** The compute capability of the GPUs a server uses, as the GpuHost read them (nvidia-smi compute_cap). */
function gpuCapability(box: Box, service: ServiceConfig): pulumi.Output<string | undefined> {
    const inside = service.gpus ?? box.plan.gpuIndices;
    const hostIndices = inside.map((i) => box.hostGpuIndices[i]).filter((i): i is number => i !== undefined);
    return box.gpuHost.gpus.apply((gpus) => serverComputeCapability(gpus ?? [], hostIndices));
}

/** GpuHost `host.name`, and LxcContainer `ct<vmid>` when the stack declares a container. */
function declareBox(host: HostConfig, container: ContainerConfig | undefined): Box {
    const hostConnection: Connection = {
        address: host.address,
        port: host.port,
        user: host.user,
        hostKey: host.hostKey,
        topology: host.topology,
    };
    const gpuHost = new GpuHost(host.name, { connection: hostConnection, expectedGpus: host.gpus });
    const box: Box = {
        gpuHost,
        serverConnection: hostConnection,
        placement: gpuHost,
        plan: planBoxOf({ host, container }),
        hostGpuIndices: Array.from({ length: host.gpus.count }, (_, i) => i),
    };
    if (!container) return box;
    const ct = new LxcContainer(`ct${container.vmid}`, {
        connection: hostConnection,
        container,
        deviceMajors: gpuHost.deviceMajors,
        proxmoxVersion: gpuHost.proxmoxVersion,
    });
    return {
        ...box,
        serverConnection: ct.vmid.apply((vmid) => ({ ...hostConnection, vmid })),
        placement: ct,
        // Inside the container the passed-through GPUs are numbered from 0.
        hostGpuIndices: [...container.gpus],
    };
}

/** A server on the box: SglangService `<service>` and ReadinessCheck `<service>-ready`, named by the server alone, both from its one plan. */
function declareServer(
    box: Box,
    service: ServiceConfig,
    readiness: ReadinessConfig,
    behind: { gateway?: pulumi.Input<GatewayMembership>; after?: pulumi.Resource[] } = {},
): { server: SglangService; check: ReadinessCheck } {
    // Recorded in the unit: another stack refuses to change or delete it.
    const owner = { project: pulumi.getProject(), stack: pulumi.getStack() };
    const plan = planServer(service, box.plan, readiness, owner);
    const server = new SglangService(
        service.name,
        {
            connection: box.serverConnection,
            plan: plan.service,
            gpuCapability: gpuCapability(box, service),
            ...(behind.gateway ? { gateway: behind.gateway } : {}),
        },
        // Behind a gateway, after the servers before it (index.ts): one rolls out at a time.
        { dependsOn: [box.placement, ...(behind.after ?? [])] },
    );
    const check = new ReadinessCheck(`${service.name}-ready`, {
        connection: box.serverConnection,
        check: plan.check,
        revision: server.revision,
        servingVerified: server.servingVerified,
    });
    return { server, check };
}

/** A declared server: its config, service and readiness check. */
export interface DeclaredServer {
    service: ServerConfig;
    server: SglangService;
    check: ReadinessCheck;
}

/**
 * The whole stack: its boxes, by name; its servers, in declared order; and
 * the gateway. A server behind the gateway is declared after the
 * gateway.rolling.maxUnavailable servers before it (in the order of
 * `servers`): its rollout, which takes it out of the gateway and puts it
 * back (providers/sglang-server/gateway-drain.ts), waits for theirs. The gateway waits for
 * the servers it fronts to serve.
 */
export function declareStack(config: StackConfig): { boxes: Map<string, Box>; servers: DeclaredServer[]; gateway?: SglangGateway } {
    const boxes = new Map(config.boxes.map(({ host, container }) => [host.name, declareBox(host, container)]));
    const g = config.gateway;
    const rollingOrder = g ? config.servers.filter((s) => g.workers.includes(s.name)) : [];
    if (g && rollingOrder.length > 1) {
        pulumi.log.info(
            `servers behind the gateway ${g.name} roll out ${g.rolling.maxUnavailable} at a time, in this order: ${rollingOrder.map((s) => s.name).join(", ")}`,
        );
    }
    const servers: DeclaredServer[] = [];
    for (const service of config.servers) {
        const place = rollingOrder.indexOf(service);
        const before = g && place >= g.rolling.maxUnavailable ? servers.find((d) => d.service === rollingOrder[place - g.rolling.maxUnavailable]) : undefined;
        const gateway =
            g && place >= 0
                ? pulumi.output(boxes.get(g.box)!.serverConnection).apply((connection): GatewayMembership => ({
                      connection,
                      name: g.name,
                      adminUrl: gatewayAdminUrl(g),
                      workerUrl: workerUrl(service),
                      drainTimeoutSeconds: g.rolling.drainTimeoutSeconds,
                  }))
                : undefined;
        servers.push({ service, ...declareServer(boxes.get(service.box)!, service, config.readiness, { gateway, after: before ? [before.server] : [] }) });
    }
    if (!g) return { boxes, servers };
    const behind = servers.filter((d) => g.workers.includes(d.service.name));
    const gateway = new SglangGateway(
        g.name,
        {
            connection: boxes.get(g.box)!.serverConnection,
            gateway: g,
            workers: behind.map(({ service }) => ({ name: service.name, url: workerUrl(service) })),
            requireApiKey: behind.some(({ service }) => service.requireApiKey),
        },
        { dependsOn: [boxes.get(g.box)!.placement, ...behind.map((d) => d.check)] },
    );
    return { boxes, servers, gateway };
}
