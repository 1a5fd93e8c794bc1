import * as pulumi from "./pulumi";
import type { GatewayConfig } from "../core/config/schema";
import { gatewayAdminUrl, renderGatewayUnit } from "../core/gateway/gateway";
import { formatOwner } from "../core/unit/ownership";
import { UnitOwner } from "../core/unit/systemd-unit";
import { unitName } from "../core/unit/unit-paths";
import { gatewayVenvPlan } from "../core/venv/venv-layout";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION, ResourceInputs } from "./dynamic-provider";
import type { GatewayOutputs, GatewayProps } from "../providers/sglang-gateway-props";

export interface SglangGatewayArgs {
    /** Where the gateway runs: its box's container (directly or through `pct exec`), or the host. */
    connection: pulumi.Input<Connection>;
    gateway: GatewayConfig;
    /** The servers behind it: name and URL as the gateway reaches them. */
    workers: Array<{ name: string; url: string }>;
    /** The servers require the API key: so does the gateway (the same key). */
    requireApiKey: boolean;
    /** Recorded in the unit. Default: this project and stack. */
    owner?: UnitOwner;
}

class SglangGatewayResource extends DynamicResource<GatewayProps, GatewayOutputs> {
    declare readonly activeState: pulumi.Output<string>;
    declare readonly registered: pulumi.Output<GatewayOutputs["registered"]>;

    constructor(name: string, props: ResourceInputs<GatewayProps, GatewayOutputs>, opts: pulumi.CustomResourceOptions) {
        super("sglang-gateway", name, props, opts);
    }
}

/**
 * SGLang's model gateway (smg) in front of the stack's servers: installed
 * from PyPI into a venv of its own, run as `sglang-<name>.service`, each
 * server registered as a worker; a refresh reads the worker list back
 * (providers/sglang-gateway.ts).
 */
export class SglangGateway extends pulumi.ComponentResource {
    readonly endpoint: pulumi.Output<string>;
    readonly workers: pulumi.Output<GatewayOutputs["registered"]>;

    constructor(name: string, args: SglangGatewayArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:SglangGateway", name, {}, opts);
        const owner = args.owner ?? { project: pulumi.getProject(), stack: pulumi.getStack() };
        const endpoint = `http://${args.gateway.endpointHost}:${args.gateway.port}`;
        const resource = new SglangGatewayResource(
            `${name}-unit`,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                unitName: unitName(args.gateway.name),
                unitText: renderGatewayUnit(args.gateway, { hasApiKey: args.requireApiKey, owner }),
                venv: gatewayVenvPlan(args.gateway),
                adminUrl: gatewayAdminUrl(args.gateway),
                endpoint,
                workers: args.workers,
                requireApiKey: args.requireApiKey,
                owner: formatOwner(owner),
                activeState: undefined,
                registered: undefined,
            },
            { parent: this },
        );
        this.endpoint = pulumi.output(endpoint);
        this.workers = resource.registered;
        this.registerOutputs({ endpoint: this.endpoint, workers: this.workers });
    }
}
