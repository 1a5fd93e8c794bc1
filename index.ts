import * as pulumi from "./components/pulumi";
import { loadStackConfig } from "./components/stack-config";
import { declareBox, declareServer } from "./components/stack-resources";

const pulumiConfig = new pulumi.Config();
const { host, container, service, readiness } = loadStackConfig(pulumiConfig);

const box = declareBox(host, container);
const { server, check } = declareServer(box, service, readiness);

export const endpoint = server.endpoint;
export const openaiBaseUrl = pulumi.interpolate`${server.endpoint}/v1`;
export const unitName = server.unitName;
export const servedModelName = service.model.servedName;
export const liveServerArgs = check.liveServerArgs;
export const speculativeActive = check.speculativeActive;
/** The last good config's figures (its speculative accept length): what the next change must serve at least as well as. */
export const servingFigures = server.servingFigures;
export const gpus = box.gpuHost.gpus;
