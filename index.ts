import * as pulumi from "./components/pulumi";
import { loadStackConfig } from "./components/stack-config";
import { declareStack } from "./components/stack-resources";

const { boxes, servers: declared, gateway: gatewayResource } = declareStack(loadStackConfig(new pulumi.Config()));

/** Per server, by name: where it serves and what the last `up` verified of it. */
export const servers = Object.fromEntries(
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

/** Per box, by name: the GPUs its host reports. */
export const boxGpus = Object.fromEntries([...boxes].map(([name, box]) => [name, box.gpuHost.gpus]));

// A stack of one server (one box) also has its outputs at the top, as before `servers` (`boxes`) existed;
// null where the stack has several (an undefined output is a warning on every run).
const only = declared.length === 1 ? servers[declared[0]!.service.name]! : undefined;
export const endpoint = only?.endpoint ?? null;
export const openaiBaseUrl = only?.openaiBaseUrl ?? null;
export const unitName = only?.unitName ?? null;
export const servedModelName = only?.servedModelName ?? null;
export const liveServerArgs = only?.liveServerArgs ?? null;
export const speculativeActive = only?.speculativeActive ?? null;
export const servingFigures = only?.servingFigures ?? null;
export const gpus = boxes.size === 1 ? [...boxes.values()][0]!.gpuHost.gpus : null;

/** Where clients send requests when the stack has a gateway (it spreads them over the servers); null without one. */
export const gateway = gatewayResource
    ? { endpoint: gatewayResource.endpoint, openaiBaseUrl: pulumi.interpolate`${gatewayResource.endpoint}/v1`, workers: gatewayResource.workers }
    : null;
