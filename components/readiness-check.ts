import * as pulumi from "./pulumi";
import type { CheckPlan } from "../core/plan/server-plan";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION, ResourceInputs } from "./dynamic-provider";
import type { ReadinessOutputs, ReadinessProps } from "../providers/readiness-check-props";
import type { ServingVerified } from "../providers/sglang-server/props";

export interface ReadinessCheckArgs {
    connection: pulumi.Input<Connection>;
    /** What it checks, from the server's plan (core/plan/server-plan.ts planServer): unit, endpoint, API key required, served name, speculation, readiness. */
    check: CheckPlan;
    /** The service's rollout revision: a new revision re-runs the check. */
    revision: pulumi.Input<string>;
    /** The service's servingVerified output: in the run whose rollout verified `revision` serving, the check confirms instead of waiting again. */
    servingVerified?: pulumi.Input<ServingVerified | undefined>;
}

class ReadinessCheckResource extends DynamicResource<ReadinessProps, ReadinessOutputs> {
    declare readonly ready: pulumi.Output<boolean>;
    declare readonly liveServerArgs: pulumi.Output<Record<string, unknown>>;
    declare readonly speculativeActive: pulumi.Output<boolean | null>;

    constructor(name: string, props: ResourceInputs<ReadinessProps, ReadinessOutputs>, opts: pulumi.CustomResourceOptions) {
        super("readiness-check", name, props, opts);
    }
}

/**
 * Checks that the server really serves: GET /health = 200 corroborated by the
 * ready log line, then one short chat completion that must be non-degenerate
 * and, with speculative decoding, /server_info showing it active. On refresh
 * it reads the live server args, so a server that is down or runs other args
 * than declared shows as drift.
 */
export class ReadinessCheck extends pulumi.ComponentResource {
    readonly ready: pulumi.Output<boolean>;
    readonly liveServerArgs: pulumi.Output<Record<string, unknown>>;
    readonly speculativeActive: pulumi.Output<boolean | null>;

    constructor(name: string, args: ReadinessCheckArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:ReadinessCheck", name, {}, opts);
        const probe = new ReadinessCheckResource(
            `${name}-probe`,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                ...args.check,
                revision: args.revision,
                servingVerified: args.servingVerified,
                ready: undefined,
                liveServerArgs: undefined,
                speculativeActive: undefined,
            },
            { parent: this },
        );
        this.ready = probe.ready;
        this.liveServerArgs = probe.liveServerArgs;
        this.speculativeActive = probe.speculativeActive;
        this.registerOutputs({ ready: this.ready, liveServerArgs: this.liveServerArgs, speculativeActive: this.speculativeActive });
    }
}
