import * as pulumi from "./components/pulumi";
import { loadStackConfig } from "./components/stack-config";
import { declareBox, declareServer } from "./components/stack-resources";
import { SglangGateway } from "./components/sglang-gateway";
import { gatewayAdminUrl, GatewayMembership, workerUrl } from "./core/gateway";

const pulumiConfig = new pulumi.Config();
const loaded = loadStackConfig(pulumiConfig);
const { boxes: boxConfigs, servers: serverConfigs, readiness } = loaded;

const boxes = new Map(boxConfigs.map(({ host, container }) => [host.name, declareBox(host, container)]));

// Behind a gateway, a server's rollout takes it out and puts it back, and waits for the rollouts of the
// maxUnavailable servers before it (in the order of `servers`): one wave, one server at a time by default.
const gatewayConfig = loaded.gateway;
const rollingOrder = gatewayConfig ? serverConfigs.filter((s) => gatewayConfig.workers.includes(s.name)) : [];
if (gatewayConfig && rollingOrder.length > 1) {
    pulumi.log.info(
        `servers behind the gateway ${gatewayConfig.name} roll out ${gatewayConfig.rolling.maxUnavailable} at a time, in this order: ${rollingOrder.map((s) => s.name).join(", ")}`,
    );
}
const declared: Array<{ service: (typeof serverConfigs)[number] } & ReturnType<typeof declareServer>> = [];
for (const service of serverConfigs) {
    const place = rollingOrder.indexOf(service);
    const step = gatewayConfig?.rolling.maxUnavailable ?? 1;
    const before = place >= step ? declared.find((d) => d.service === rollingOrder[place - step]) : undefined;
    const gateway =
        gatewayConfig && place >= 0
            ? pulumi.output(boxes.get(gatewayConfig.box)!.serverConnection).apply((connection): GatewayMembership => ({
                  connection,
                  name: gatewayConfig.name,
                  adminUrl: gatewayAdminUrl(gatewayConfig),
                  workerUrl: workerUrl(service),
                  drainTimeoutSeconds: gatewayConfig.rolling.drainTimeoutSeconds,
              }))
            : undefined;
    declared.push({ service, ...declareServer(boxes.get(service.box)!, service, readiness, { gateway, after: before ? [before.server] : [] }) });
}

/** Per server, by name: where it serves and what the last `up` verified of it. */
const servers = Object.fromEntries(
    declared.map(({ service, server, check }) => [
        service.name,
        {
            endpoint: server.endpoint,
            openaiBaseUrl: pulumi.interpolate`${server.endpoint}/v1`,
            unitName: server.unitName,
            servedModelName: service.model.servedName,
            liveServerArgs: check.liveServerArgs,
            speculativeActive: check.speculativeActive,
            /** The last good config's figures: what the next change must serve at least as well as. */
            servingFigures: server.servingFigures,
        },
    ]),
);

// The gateway, once the servers behind it serve: each registered as a worker.
const behind = gatewayConfig ? declared.filter((d) => gatewayConfig.workers.includes(d.service.name)) : [];
const gateway = gatewayConfig
    ? new SglangGateway(
          gatewayConfig.name,
          {
              connection: boxes.get(gatewayConfig.box)!.serverConnection,
              gateway: gatewayConfig,
              workers: behind.map(({ service }) => ({ name: service.name, url: workerUrl(service) })),
              requireApiKey: behind.some(({ service }) => service.requireApiKey),
          },
          { dependsOn: [boxes.get(gatewayConfig.box)!.placement, ...behind.map((d) => d.check)] },
      )
    : undefined;

// The outputs: per server and per box; a stack of one server (one box) also has them at the top, as before
// `servers` (`boxes`) existed; the gateway's where there is one. Only what exists is exported (an undefined
// export is a warning on every run).
export = {
    servers,
    /** Per box, by name: the GPUs its host reports. */
    boxGpus: Object.fromEntries([...boxes].map(([name, box]) => [name, box.gpuHost.gpus])),
    ...(declared.length === 1 ? servers[declared[0]!.service.name] : {}),
    ...(boxes.size === 1 ? { gpus: [...boxes.values()][0]!.gpuHost.gpus } : {}),
    /** Where clients send requests when the stack has a gateway: it spreads them over the servers. */
    ...(gateway
        ? { gatewayEndpoint: gateway.endpoint, gatewayOpenaiBaseUrl: pulumi.interpolate`${gateway.endpoint}/v1`, gatewayWorkers: gateway.workers }
        : {}),
};
