import * as pulumi from "./pulumi";
import type { ReadinessConfig, ServiceConfig } from "../core/config-schema";
import { formatOwner } from "../core/ownership";
import { renderEnvironmentFile, renderUnit, unitName, UnitOwner } from "../core/systemd-unit";
import { renderArgv } from "../core/sglang-args";
import { API_KEY_ENV } from "../core/sglang-rules";
import { flagMap } from "../core/flag-map";
import { boxExpectations } from "../core/box-facts";
import { Connection } from "./connection";
import { DynamicResource, PROVIDER_VERSION, ResourceInputs } from "./dynamic-provider";
import type { GatePassed, ServiceOutputs, ServiceProps } from "../providers/sglang-service-props";

export interface SglangServiceArgs {
    /** Where the unit lives: the container (directly or through `pct exec`). */
    connection: pulumi.Input<Connection>;
    /** The declared server. Plain: it comes from validated stack config. */
    service: ServiceConfig;
    /** Readiness budget and probe settings used by the rollout's health gate. */
    readiness: ReadinessConfig;
    /** The API key, if any (kept secret; written only to the 0600 EnvironmentFile). */
    apiKey?: pulumi.Input<string>;
    /** GPU indices the server uses, watched for memory release between stop and start. */
    gpuIndices: number[];
    /** Recorded in the unit; another stack refuses to change or delete it. Default: this project and stack. */
    owner?: UnitOwner;
    /** One GPU's memory (host.gpus.memoryMiB), for the memory check when the weights' size comes from the box. */
    gpuMemoryMiB?: number;
}

class SglangServiceResource extends DynamicResource<ServiceProps, ServiceOutputs> {
    declare readonly unitName: pulumi.Output<string>;
    declare readonly revision: pulumi.Output<string>;
    declare readonly gatePassed: pulumi.Output<GatePassed | undefined>;
    declare readonly activeState: pulumi.Output<string>;
    declare readonly flags: pulumi.Output<Record<string, string>>;
    declare readonly environment: pulumi.Output<Record<string, string>>;
    declare readonly liveArgs: pulumi.Output<Record<string, unknown> | null>;

    constructor(name: string, props: ResourceInputs<ServiceProps, ServiceOutputs>, opts: pulumi.CustomResourceOptions) {
        super("sglang-service", name, props, opts);
    }
}

/**
 * The SGLang server as a systemd unit in the container. Writes the rendered
 * unit and a 0600 EnvironmentFile for secrets, daemon-reloads, enables, and
 * restarts only when something that affects the running process changed.
 * A rollout is stop-first (the GPUs cannot hold two servers), health-gated,
 * and puts the previous unit back when the new one does not become ready.
 */
export class SglangService extends pulumi.ComponentResource {
    readonly unitName: pulumi.Output<string>;
    readonly endpoint: pulumi.Output<string>;
    readonly revision: pulumi.Output<string>;
    /** The revision whose gate this run's rollout passed (for the ReadinessCheck), if any. */
    readonly gatePassed: pulumi.Output<GatePassed | undefined>;
    readonly activeState: pulumi.Output<string>;
    readonly flags: pulumi.Output<Record<string, string>>;
    readonly liveArgs: pulumi.Output<Record<string, unknown> | null>;

    constructor(name: string, args: SglangServiceArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:SglangService", name, {}, opts);
        const service = args.service;
        const hasApiKey = args.apiKey !== undefined;
        const argv = renderArgv(service, hasApiKey ? { apiKeyEnv: API_KEY_ENV } : {});
        const secrets = hasApiKey ? pulumi.secret(pulumi.output(args.apiKey!).apply((k) => renderEnvironmentFile({ SGLANG_API_KEY: k }))) : undefined;
        const flagged = flagMap(argv);
        const owner = args.owner ?? { project: pulumi.getProject(), stack: pulumi.getStack() };
        const unit = new SglangServiceResource(
            `${name}-unit`,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                unitName: unitName(service.name),
                unitText: renderUnit(service, { hasSecrets: hasApiKey, owner }),
                command: flagged.command,
                flags: flagged.flags,
                environment: service.environment ?? {},
                environmentFile: secrets,
                endpoint: `http://${service.endpointHost}:${service.port}`,
                apiKey: args.apiKey ? pulumi.secret(args.apiKey) : undefined,
                servedModelName: service.model.servedName,
                speculativeAlgorithm: service.speculative?.algorithm,
                gpuIndices: args.gpuIndices,
                readiness: args.readiness,
                owner: formatOwner(owner),
                takeOverFrom: service.takeOverFrom,
                expectBox: boxExpectations(service, args.gpuMemoryMiB),
                revision: undefined,
                gatePassed: undefined,
                activeState: undefined,
                liveArgs: undefined,
                restart: undefined,
            },
            { parent: this, additionalSecretOutputs: ["environmentFile", "apiKey", "secretsHash"] },
        );
        this.unitName = unit.unitName;
        this.endpoint = pulumi.output(`http://${service.endpointHost}:${service.port}`);
        this.revision = unit.revision;
        this.gatePassed = unit.gatePassed;
        this.activeState = unit.activeState;
        this.flags = unit.flags;
        this.liveArgs = unit.liveArgs;
        this.registerOutputs({
            unitName: this.unitName,
            endpoint: this.endpoint,
            revision: this.revision,
            gatePassed: this.gatePassed,
            activeState: this.activeState,
            flags: this.flags,
            liveArgs: this.liveArgs,
        });
    }
}
