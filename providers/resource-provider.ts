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

/** A provider with every verb (`configure` is the provider module's: components/dynamic-provider.ts): what `providers/<kind>.ts` builds for a run (providers/context.ts servedByThisProcess). */
export type CompleteProvider<Inputs, Outputs> = Required<Omit<ResourceProvider<Inputs, Outputs>, "configure">>;

/**
 * A create or update that changed the box and then failed: the SDK's plugin
 * sends it as ErrorResourceInitFailed (it looks for `id`), and the engine
 * records `properties` as the resource's state and shows `reasons`, so the
 * state says what the box really holds.
 */
export class ResourceInitFailed extends Error {
    constructor(
        message: string,
        readonly id: string,
        public properties: object,
        readonly reasons: string[],
    ) {
        super(message);
    }
}

/**
 * Runs a create or update. The plugin adds the provider module (`__provider`,
 * the SDK's wire key) to a result's outputs but not to a failure's
 * properties; without it the recorded state would name no provider, so it is
 * added here, where the provider meets the plugin, and nowhere else.
 */
export async function keepingProviderModule<T>(inputs: object, run: () => Promise<T>): Promise<T> {
    try {
        return await run();
    } catch (e) {
        if (e instanceof ResourceInitFailed) e.properties = { ...e.properties, __provider: (inputs as { __provider?: unknown }).__provider };
        throw e;
    }
}
