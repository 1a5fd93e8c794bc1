/**
 * The LxcContainer resource's props and outputs, declared once: the component
 * (components/lxc-container.ts) passes exactly these fields (each an Input),
 * the provider (providers/lxc-container.ts) reads them.
 */
import type { Connection } from "../core/connection";
import type { ContainerConfig } from "../core/config/schema";
import type { DeviceMajors } from "../core/box/gpu-facts";
import type { Passthrough, PctView } from "../core/box/pct-config";

export interface ContainerProps {
    providerVersion: string;
    connection: Connection;
    container: ContainerConfig;
    deviceMajors: DeviceMajors;
    /** The host's Proxmox VE release (the GpuHost's `pveversion`): 8.2 and later get `devN` passthrough entries (core/box/pct-config.ts passthroughForm). Absent in states written before. */
    proxmoxVersion?: string;
    vmid: number;
    /** Shown by the preview: which declared changes need a container restart. Set by check. */
    restart?: string;
}

export interface ContainerOutputs extends ContainerProps {
    status: string;
    settings: PctView;
    passthrough: Passthrough;
    /** Changes applied to the config that take effect at the container's next start. */
    pendingRestart: string[];
}
