import type * as pulumi from "@pulumi/pulumi";

/**
 * A dynamic provider as the SDK's dynamic-provider plugin calls it
 * (`@pulumi/pulumi/cmd/dynamic-provider`), with `read` typed as the plugin
 * uses its result: `inputs` are the inputs later diffs compare against (the
 * SDK's own ReadResult declares them with the outputs' type).
 */
export type ResourceProvider<Inputs, Outputs> = Omit<pulumi.dynamic.ResourceProvider<Inputs, Outputs>, "read"> & {
    read?(id: string, props?: Outputs): Promise<{ id?: string; props?: Outputs; inputs?: Inputs }>;
};
