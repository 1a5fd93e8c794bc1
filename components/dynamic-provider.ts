import { PROVIDER_CONFIG_KEYS } from "../core/config/provider-config";
import * as pulumi from "./pulumi";

/**
 * Bump when the provider module below changes in a way old state cannot run,
 * so `diff` reports it and the new module reaches the state (refresh and
 * destroy run the module stored in state).
 */
export const PROVIDER_VERSION = "sglang-serve/3";

export type ProviderKind = "gpu-host" | "lxc-container" | "sglang-service" | "readiness-check" | "sglang-gateway";

/**
 * The dynamic provider stored in state (`__provider`) for each resource kind:
 * a small CommonJS module whose `handler()` returns a forwarder. The SDK's
 * dynamic-provider plugin (`@pulumi/pulumi/cmd/dynamic-provider`, started by
 * the official `pulumi-resource-pulumi-nodejs` launcher in the project
 * directory) loads it with `requireFromString(text).handler()`. Every method
 * loads the implementation, `providers/<kind>.ts` in the project, from its
 * TypeScript source through the project's ts-hook.cjs (which, in this
 * plugin, serves providers/*.ts from one bundle checked against the
 * checkout's files at each load: providers/plugin-bundle.cjs), so what runs
 * is what the checkout holds now, on `refresh` and `destroy` too, never a
 * copy frozen in state or an old build.
 *
 * It captures nothing (no sockets, clients, schemas or config objects), and
 * is written out as text instead of being produced by Pulumi's closure
 * serialization (`pulumi.dynamic.Resource`): serializing the forwarder cost
 * the program ~0.3 s on every engine run (the SDK loads the TypeScript
 * compiler to parse function bodies) and gave the same module.
 *
 * Credentials come from `configure` (the stack's config, handed to
 * providers/context.ts), never from inputs, so they are neither serialized
 * nor stored in state by the providers themselves.
 */
export function providerModuleSource(kind: ProviderKind): string {
    return `"use strict";
// sglang-serve dynamic provider (${PROVIDER_VERSION}): forwards to providers/${kind}.ts in the project.
const kind = ${JSON.stringify(kind)};
const configKeys = ${JSON.stringify(PROVIDER_CONFIG_KEYS)};
function projectModule(name) {
    const path = require("path");
    const fs = require("fs");
    // The engine starts the dynamic provider in the program's directory; the
    // project root is the nearest directory above it with a Pulumi.yaml.
    let root = process.env.SGLANG_SERVE_ROOT || process.cwd();
    while (!fs.existsSync(path.join(root, "Pulumi.yaml")) && path.dirname(root) !== root) root = path.dirname(root);
    require(path.join(root, "ts-hook.cjs"));
    return require(path.join(root, "providers", name + ".ts"));
}
function load() {
    return projectModule(kind).provider;
}
exports.handler = function () {
    return {
        async configure(req) {
            const config = {};
            for (const [field, key] of Object.entries(configKeys)) config[field] = req.config.get(key);
            projectModule("context").configureProviders(config);
        },
        async check(olds, news) { const p = load(); return p.check ? p.check(olds, news) : { inputs: news }; },
        async diff(id, olds, news) { const p = load(); return p.diff ? p.diff(id, olds, news) : { changes: true }; },
        async create(inputs) { return load().create(inputs); },
        async read(id, props) { const p = load(); return p.read ? p.read(id, props) : { id: id, props: props }; },
        async update(id, olds, news) { const p = load(); return p.update ? p.update(id, olds, news) : { outs: news }; },
        async delete(id, props) { const p = load(); if (p.delete) await p.delete(id, props); },
    };
};
`;
}

/**
 * Each kind's resource is named as its component and its provider file:
 * `pulumi-nodejs:dynamic/sglang-serve:SglangService` is the SglangService
 * component's resource, served by providers/sglang-service.ts.
 */
const RESOURCE_TYPES: Readonly<Record<ProviderKind, string>> = {
    "gpu-host": "GpuHost",
    "lxc-container": "LxcContainer",
    "sglang-service": "SglangService",
    "readiness-check": "ReadinessCheck",
    "sglang-gateway": "SglangGateway",
};

/**
 * The type each kind had before its resource took its component's name.
 * Given as an alias, so a stack deployed with the old name keeps its
 * resource: the engine renames it in the state instead of replacing it (a
 * replacement would restart the server).
 */
const FORMER_RESOURCE_TYPES: Readonly<Partial<Record<ProviderKind, string>>> = {
    "gpu-host": "GpuHostFacts",
    "lxc-container": "LxcContainerConfig",
    "sglang-service": "SystemdService",
    "readiness-check": "ReadinessProbe",
};

function dynamicType(typeName: string): string {
    return `pulumi-nodejs:dynamic/sglang-serve:${typeName}`;
}

/**
 * A resource's props as its component passes them: every field of the props
 * type its provider reads (providers/<kind>-props.ts), each an Input, and
 * output fields the component reads, registered as undefined so the engine
 * fills them. Declared once for both sides, so tsc catches a field the
 * component and the provider name or type differently.
 */
export type ResourceInputs<Props, Outputs extends Props> = { [K in keyof Props]: pulumi.Input<Props[K]> } & {
    [K in Exclude<keyof Outputs, keyof Props>]?: undefined;
};

/**
 * A dynamic resource (`pulumi-nodejs:dynamic/sglang-serve:<type>`), registered
 * as `pulumi.dynamic.Resource` registers one, with the provider module above.
 */
export abstract class DynamicResource<Props, Outputs extends Props> extends pulumi.CustomResource {
    constructor(kind: ProviderKind, name: string, props: ResourceInputs<Props, Outputs>, opts: pulumi.CustomResourceOptions = {}) {
        if ("__provider" in props) throw new Error("a dynamic resource must not define the __provider input");
        const former = FORMER_RESOURCE_TYPES[kind];
        const aliases = [...(opts.aliases ?? []), ...(former ? [{ type: dynamicType(former) }] : [])];
        super(dynamicType(RESOURCE_TYPES[kind]), name, { ...props, __provider: providerModuleSource(kind) }, { ...opts, aliases });
    }
}
