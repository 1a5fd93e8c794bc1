// The fleet program of `npm run bench`: the stack's own resources
// (components/stack-resources.ts, as index.ts declares them) with the one
// server replaced by a list of them on the same host and container, one
// SglangService + ReadinessCheck per entry of the stack config
// `sglang-serve:fleet: [{ name, port }, ...]`, every other setting as in
// `sglang-serve:service`. It measures what one operation costs per service
// (the "fleet refresh 16:1" figure), which N one-service stacks cannot.
//
// Not a deployable program of the project: scripts/bench.ts runs it from a
// deployment folder whose index.ts re-exports it.
import * as pulumi from "../../components/pulumi";
import { validateStackConfig } from "../../core/config";
import { formatConfigIssues } from "../../core/config-issues";
import type { StackConfig } from "../../core/config-schema";
import { readRawStackConfig } from "../../components/stack-config";
import { declareBox, declareServer } from "../../components/stack-resources";

const pulumiConfig = new pulumi.Config();
const raw = readRawStackConfig(pulumiConfig) as { service?: Record<string, unknown> };
const fleet = pulumiConfig.requireObject<Array<{ name: string; port: number }>>("fleet");
// Each server is validated as its own one-service stack would be.
const stacks: StackConfig[] = fleet.map((f) => {
    const result = validateStackConfig({ ...raw, service: { ...raw.service, name: f.name, port: f.port } });
    if (!result.ok) throw new pulumi.RunError(formatConfigIssues(result.issues));
    return result.config;
});
const {
    boxes: [{ host, container }],
    readiness,
} = stacks[0]!;

const box = declareBox(host, container);
// Per server, what index.ts exports for its one.
export const endpoints: Record<string, pulumi.Output<string>> = {};
export const liveServerArgs: Record<string, pulumi.Output<Record<string, unknown>>> = {};
for (const {
    servers: [service],
} of stacks) {
    const { server, check } = declareServer(box, service, readiness);
    endpoints[service.name] = server.endpoint;
    liveServerArgs[service.name] = check.liveServerArgs;
}
