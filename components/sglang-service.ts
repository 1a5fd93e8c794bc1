import * as pulumi from "./pulumi";
import type { ReadinessConfig, ServiceConfig } from "../core/config/schema";
import { formatOwner } from "../core/unit/ownership";
import { renderUnit, serverEnvironment, UnitOwner } from "../core/unit/systemd-unit";
import { serverConfigFilePath, unitName } from "../core/unit/unit-paths";
import { renderArgv } from "../core/sglang/args";
import type { DeclaredSecrets } from "../core/secrets/deploy-secrets";
import type { ServingFigures } from "../core/serving/serving-figures";
import { flagMap } from "../core/sglang/flag-map";
import { boxExpectations } from "../core/box/box-facts";
import { venvPlanOf } from "../core/venv/venv-layout";
import type { GatewayMembership } from "../core/gateway/gateway";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION, ResourceInputs } from "./dynamic-provider";
import type { ServiceOutputs, ServiceProps, ServingVerified } from "../providers/sglang-service-props";

export interface SglangServiceArgs {
    /** Where the unit lives: the container (directly or through `pct exec`). */
    connection: pulumi.Input<Connection>;
    /** The declared server. Plain: it comes from validated stack config. */
    service: ServiceConfig;
    /** Readiness budget and probe settings used by the rollout's readiness wait. */
    readiness: ReadinessConfig;
    /** GPU indices the server uses, watched for memory release between stop and start. */
    gpuIndices: number[];
    /** Recorded in the unit; another stack refuses to change or delete it. Default: this project and stack. */
    owner?: UnitOwner;
    /** One GPU's memory (host.gpus.memoryMiB), for the memory check when the weights' size comes from the box. */
    gpuMemoryMiB?: number;
    /** The GPUs' name (host.gpus.name), for SGLang's own verdict at preview (providers/sglang-verdict.ts). */
    gpuName?: string;
    /** The compute capability of the server's GPUs (the GpuHost's nvidia-smi compute_cap), for the same verdict. */
    gpuCapability?: pulumi.Input<string | undefined>;
    /** The gateway the server is behind: its rollouts take it out and put it back (providers/gateway-drain.ts). */
    gateway?: pulumi.Input<GatewayMembership>;
}

class SglangServiceResource extends DynamicResource<ServiceProps, ServiceOutputs> {
    declare readonly unitName: pulumi.Output<string>;
    declare readonly revision: pulumi.Output<string>;
    declare readonly servingVerified: pulumi.Output<ServingVerified | undefined>;
    declare readonly activeState: pulumi.Output<string>;
    declare readonly flags: pulumi.Output<Record<string, string>>;
    declare readonly environment: pulumi.Output<Record<string, string>>;
    declare readonly liveArgs: pulumi.Output<Record<string, unknown> | null>;
    declare readonly servingFigures: pulumi.Output<ServingFigures | undefined>;

    constructor(name: string, props: ResourceInputs<ServiceProps, ServiceOutputs>, opts: pulumi.CustomResourceOptions) {
        super("sglang-service", name, props, opts);
    }
}

/**
 * The SGLang server as a systemd unit in the container. Writes the rendered
 * unit and, with secrets, a 0600 EnvironmentFile and a 0600 SGLang config file
 * for the API key (their values never pass through Pulumi), daemon-reloads, enables, and
 * restarts only when something that affects the running process changed.
 * A rollout is stop-first (the GPUs cannot hold two servers), waits until the
 * new server serves, and puts the previous unit back when the new one does
 * not become ready.
 */
export class SglangService extends pulumi.ComponentResource {
    readonly unitName: pulumi.Output<string>;
    readonly endpoint: pulumi.Output<string>;
    readonly revision: pulumi.Output<string>;
    /** The revision this run's rollout verified serving (for the ReadinessCheck), if any. */
    readonly servingVerified: pulumi.Output<ServingVerified | undefined>;
    readonly activeState: pulumi.Output<string>;
    readonly flags: pulumi.Output<Record<string, string>>;
    /** What the last verified rollout measured (its speculative accept length): what the next change is held to. */
    readonly servingFigures: pulumi.Output<ServingFigures | undefined>;
    readonly liveArgs: pulumi.Output<Record<string, unknown> | null>;

    constructor(name: string, args: SglangServiceArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:SglangService", name, {}, opts);
        const service = args.service;
        // Declared only: the values come from the deploy run's environment to the provider, never through Pulumi (core/secrets/deploy-secrets.ts).
        const secrets: DeclaredSecrets = { apiKey: service.requireApiKey, environment: [...service.secretEnvironment].sort() };
        const argv = renderArgv(service, service.requireApiKey ? { configFile: serverConfigFilePath(service.name) } : {});
        const flagged = flagMap(argv);
        const owner = args.owner ?? { project: pulumi.getProject(), stack: pulumi.getStack() };
        const unit = new SglangServiceResource(
            `${name}-unit`,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                unitName: unitName(service.name),
                unitText: renderUnit(service, { hasSecrets: service.requireApiKey, hasSecretEnvironment: secrets.environment.length > 0, owner }),
                command: flagged.command,
                flags: flagged.flags,
                environment: serverEnvironment(service),
                secrets,
                endpoint: `http://${service.endpointHost}:${service.port}`,
                servedModelName: service.model.servedName,
                speculativeAlgorithm: service.speculative?.algorithm,
                gpuIndices: args.gpuIndices,
                gpuName: args.gpuName,
                gpuCapability: args.gpuCapability,
                readiness: args.readiness,
                owner: formatOwner(owner),
                takeOverFrom: service.takeOverFrom,
                expectBox: boxExpectations(service, args.gpuMemoryMiB),
                venv: venvPlanOf(service, argv),
                gateway: args.gateway,
                revision: undefined,
                servingVerified: undefined,
                activeState: undefined,
                liveArgs: undefined,
                restart: undefined,
                // A record the provider keeps (check carries it from the refreshed inputs), never declared here.
                servingFigures: undefined,
                servingHistory: undefined,
            },
            { parent: this },
        );
        this.unitName = unit.unitName;
        this.endpoint = pulumi.output(`http://${service.endpointHost}:${service.port}`);
        this.revision = unit.revision;
        this.servingVerified = unit.servingVerified;
        this.activeState = unit.activeState;
        this.flags = unit.flags;
        this.liveArgs = unit.liveArgs;
        this.servingFigures = unit.servingFigures;
        this.registerOutputs({
            unitName: this.unitName,
            endpoint: this.endpoint,
            revision: this.revision,
            servingVerified: this.servingVerified,
            activeState: this.activeState,
            flags: this.flags,
            liveArgs: this.liveArgs,
            servingFigures: this.servingFigures,
        });
    }
}
