import * as pulumi from "./pulumi";
import type { ServicePlan } from "../core/plan/server-plan";
import type { ServingFigures } from "../core/serving/serving-figures";
import type { GatewayMembership } from "../core/gateway/gateway";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION, ResourceInputs } from "./dynamic-provider";
import type { ServiceOutputs, ServiceProps, ServingVerified } from "../providers/sglang-server/props";

export interface SglangServiceArgs {
    /** Where the unit lives: the container (directly or through `pct exec`). */
    connection: pulumi.Input<Connection>;
    /** The declared server's plan (core/plan/server-plan.ts planServer): unit, command line, secrets declared, box expectations, venv, readiness. */
    plan: ServicePlan;
    /** The gateway the server is behind: its rollouts take it out and put it back (providers/sglang-server/gateway-drain.ts). */
    /** The compute capability of the server's GPUs (the GpuHost's nvidia-smi compute_cap), for SGLang's own verdict at preview. */
    gpuCapability?: pulumi.Input<string | undefined>;
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
        const unit = new SglangServiceResource(
            `${name}-unit`,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                ...args.plan,
                gpuCapability: args.gpuCapability,
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
            // One unit per name on the box: a replacement (`pulumi up --replace` of this resource) stops and removes it
            // first, then deploys the same config through the readiness wait and the serving-quality gate. Created first,
            // the new resource found the server running the declared config and left it, and the old one's delete then
            // removed it, `up` green (issue 37).
            { parent: this, deleteBeforeReplace: true },
        );
        this.unitName = unit.unitName;
        this.endpoint = pulumi.output(args.plan.endpoint);
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
