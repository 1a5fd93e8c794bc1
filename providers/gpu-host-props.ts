/**
 * The GpuHost resource's props and outputs, declared once: the component
 * (components/gpu-host.ts) passes exactly these fields (each an Input), the
 * provider (providers/gpu-host.ts) reads them.
 */
import type { Connection } from "../core/connection";
import type { DeviceMajors, GpuExpectation, GpuFact } from "../core/box/gpu-facts";

export interface GpuHostProps {
    providerVersion: string;
    connection: Connection;
    expectedGpus: GpuExpectation;
}

export interface GpuHostOutputs extends GpuHostProps {
    gpus: GpuFact[];
    driverVersion: string;
    deviceMajors: DeviceMajors | null;
    proxmoxVersion: string;
}
