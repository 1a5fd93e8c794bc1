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
export const gpus = box.gpuHost.gpus;
