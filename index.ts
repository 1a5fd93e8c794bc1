import * as pulumi from "./components/pulumi";
import { loadStackConfig } from "./components/stack-config";
import { declareBox, declareServer } from "./components/stack-resources";

const pulumiConfig = new pulumi.Config();
const { boxes: boxConfigs, servers: serverConfigs, readiness } = loadStackConfig(pulumiConfig);

const boxes = new Map(boxConfigs.map(({ host, container }) => [host.name, declareBox(host, container)]));
const declared = serverConfigs.map((service) => ({ service, ...declareServer(boxes.get(service.box)!, service, readiness) }));

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

// A stack of one server also exports its outputs at the top, as before `servers` existed.
const only = declared.length === 1 ? servers[declared[0]!.service.name] : undefined;
export const endpoint = only?.endpoint;
export const openaiBaseUrl = only?.openaiBaseUrl;
export const unitName = only?.unitName;
export const servedModelName = only?.servedModelName;
export const liveServerArgs = only?.liveServerArgs;
export const speculativeActive = only?.speculativeActive;
export const servingFigures = only?.servingFigures;
// A stack of one box also exports its GPUs at the top.
export const gpus = boxes.size === 1 ? [...boxes.values()][0]!.gpuHost.gpus : undefined;
