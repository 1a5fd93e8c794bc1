import * as pulumi from "./pulumi";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION } from "./dynamic-provider";
import type { DeviceMajors, GpuExpectation, GpuFact } from "../core/box/gpu-facts";
import type { GpuHostOutputs, GpuHostProps } from "../providers/gpu-host-props";

export type { DeviceMajors, GpuFact };

export interface GpuHostArgs {
    /** How to reach the machine that owns the GPUs (the Proxmox host, or the container itself for direct topology). */
    connection: pulumi.Input<Connection>;
    /** What the stack expects to find; a mismatch fails the deploy and shows as drift. */
    expectedGpus: pulumi.Input<GpuExpectation>;
}

class GpuHostResource extends DynamicResource<GpuHostProps, GpuHostOutputs> {
    declare readonly gpus: pulumi.Output<GpuFact[]>;
    declare readonly driverVersion: pulumi.Output<string>;
    declare readonly deviceMajors: pulumi.Output<DeviceMajors>;
    declare readonly proxmoxVersion: pulumi.Output<string>;

    constructor(name: string, args: GpuHostArgs, opts: pulumi.CustomResourceOptions) {
        super(
            "gpu-host",
            name,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                expectedGpus: args.expectedGpus,
                gpus: undefined,
                driverVersion: undefined,
                deviceMajors: undefined,
                proxmoxVersion: undefined,
            },
            opts,
        );
    }
}

/**
 * The GPU box: reads the GPUs (nvidia-smi), the driver version, the NVIDIA
 * device nodes' major numbers and the Proxmox version. It changes nothing on
 * the box; a GPU gone or a driver changed shows as drift.
 */
export class GpuHost extends pulumi.ComponentResource {
    readonly gpus: pulumi.Output<GpuFact[]>;
    readonly driverVersion: pulumi.Output<string>;
    readonly deviceMajors: pulumi.Output<DeviceMajors>;
    readonly proxmoxVersion: pulumi.Output<string>;

    constructor(name: string, args: GpuHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:GpuHost", name, {}, opts);
        const facts = new GpuHostResource(`${name}-facts`, args, { parent: this });
        this.gpus = facts.gpus;
        this.driverVersion = facts.driverVersion;
        this.deviceMajors = facts.deviceMajors;
        this.proxmoxVersion = facts.proxmoxVersion;
        this.registerOutputs({
            gpus: this.gpus,
            driverVersion: this.driverVersion,
            deviceMajors: this.deviceMajors,
            proxmoxVersion: this.proxmoxVersion,
        });
    }
}
