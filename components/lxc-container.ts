import * as pulumi from "./pulumi";
import type { ContainerConfig } from "../core/config/schema";
import { Connection } from "../core/connection";
import { DynamicResource, PROVIDER_VERSION } from "./dynamic-provider";
import { DeviceMajors } from "./gpu-host";
import type { ContainerOutputs, ContainerProps } from "../providers/lxc-container-props";

export interface LxcContainerArgs {
    /** The Proxmox host (pct-exec topology). */
    connection: pulumi.Input<Connection>;
    /**
     * The declared container: vmid, hostname, resources, network, GPUs passed
     * through, adopt/allowDelete. Plain (not an Input): it comes from stack
     * config, and `allowDelete` decides the retainOnDelete option.
     */
    container: ContainerConfig;
    /** Major numbers of the NVIDIA device nodes, read by the GpuHost. */
    deviceMajors: pulumi.Input<DeviceMajors>;
    /** The host's Proxmox VE release, read by the GpuHost: how the GPUs are passed through. */
    proxmoxVersion?: pulumi.Input<string>;
}

class LxcContainerResource extends DynamicResource<ContainerProps, ContainerOutputs> {
    declare readonly vmid: pulumi.Output<number>;
    declare readonly status: pulumi.Output<string>;
    declare readonly settings: pulumi.Output<Record<string, unknown>>;

    constructor(name: string, args: LxcContainerArgs, opts: pulumi.CustomResourceOptions) {
        super(
            "lxc-container",
            name,
            {
                providerVersion: PROVIDER_VERSION,
                connection: args.connection,
                container: args.container,
                deviceMajors: args.deviceMajors,
                proxmoxVersion: args.proxmoxVersion,
                vmid: args.container.vmid,
                settings: undefined,
                status: undefined,
                restart: undefined,
            },
            opts,
        );
    }
}

/**
 * An LXC container on a Proxmox host with GPU passthrough. Adopts an existing
 * container by vmid (never recreating or restarting it to adopt) or creates
 * one; changes settings in place with `pct set` / config edits. The model
 * weights live in it, so destroying the stack leaves it in place unless
 * `container.allowDelete` is true.
 */
export class LxcContainer extends pulumi.ComponentResource {
    readonly vmid: pulumi.Output<number>;
    readonly status: pulumi.Output<string>;
    readonly settings: pulumi.Output<Record<string, unknown>>;

    constructor(name: string, args: LxcContainerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("sglang-serve:index:LxcContainer", name, {}, opts);
        const config = new LxcContainerResource(`${name}-config`, args, {
            parent: this,
            // The engine never calls delete unless the config explicitly allows it
            // (the provider's delete refuses too, for replacements).
            retainOnDelete: args.container.allowDelete !== true,
        });
        this.vmid = config.vmid;
        this.status = config.status;
        this.settings = config.settings;
        this.registerOutputs({ vmid: this.vmid, status: this.status, settings: this.settings });
    }
}
