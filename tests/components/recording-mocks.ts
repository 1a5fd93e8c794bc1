// The recording mocks of the program tests (house style: a class that
// records every newResource and throws on unknown types and calls), and
// promiseOf for outputs: shared by the stack program's and the bench fleet
// program's tests.
import * as pulumi from "@pulumi/pulumi";

export interface Registered {
    type: string;
    name: string;
    inputs: Record<string, unknown>;
    parent?: string;
}

export const SERVICE_TYPE = "pulumi-nodejs:dynamic/sglang-serve:SglangService";
export const CONTAINER_TYPE = "pulumi-nodejs:dynamic/sglang-serve:LxcContainer";

/** Records every resource; throws on calls the stack does not make. */
export class RecordingMocks implements pulumi.runtime.Mocks {
    readonly resources: Registered[] = [];
    private static readonly known = new Set([
        "pulumi-nodejs:dynamic/sglang-serve:GpuHost",
        "pulumi-nodejs:dynamic/sglang-serve:LxcContainer",
        "pulumi-nodejs:dynamic/sglang-serve:SglangService",
        "pulumi-nodejs:dynamic/sglang-serve:ReadinessCheck",
        "pulumi-nodejs:dynamic/sglang-serve:SglangGateway",
        "random:index/randomPassword:RandomPassword",
        "sglang-serve:index:GpuHost",
        "sglang-serve:index:LxcContainer",
        "sglang-serve:index:SglangService",
        "sglang-serve:index:ReadinessCheck",
        "sglang-serve:index:SglangGateway",
    ]);

    newResource(args: pulumi.runtime.MockResourceArgs): { id: string; state: Record<string, unknown> } {
        if (!RecordingMocks.known.has(args.type)) throw new Error(`unexpected resource type ${args.type}`);
        this.resources.push({ type: args.type, name: args.name, inputs: args.inputs });
        const state: Record<string, unknown> = { ...args.inputs };
        if (args.type === CONTAINER_TYPE) state.vmid = (args.inputs.container as { vmid: number }).vmid;
        if (args.type.endsWith("RandomPassword")) state.result = "generated-key-0123456789abcdef";
        return { id: `${args.name}-id`, state };
    }

    call(args: pulumi.runtime.MockCallArgs): Record<string, unknown> {
        throw new Error(`unexpected call ${args.token}`);
    }
}

export function promiseOf<T>(output: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => output.apply((v) => resolve(v)));
}
