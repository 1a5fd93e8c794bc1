import { PROVIDER_CONFIG_KEYS } from "../core/provider-config";
import * as pulumi from "./pulumi";

/**
 * Bump when the provider module below changes in a way old state cannot run,
 * so `diff` reports it and the new module reaches the state (refresh and
 * destroy run the module stored in state).
 */
export const PROVIDER_VERSION = "sglang-serve/2";

export type ProviderKind = "gpu-host" | "lxc-container" | "sglang-service" | "readiness-check";

/**
 * The dynamic provider stored in state (`__provider`) for each resource kind:
 * a small CommonJS module whose `handler()` returns a forwarder. Every method
 * loads the implementation (`providers/<kind>.ts`, compiled to
 * `.build/providers/<kind>.js` by scripts/build-program.js) from the project
 * directory at run time and calls it. It captures nothing (no sockets,
 * clients, schemas or config objects), so `pulumi refresh` runs the project's
 * current read logic, not a copy frozen in state.
 *
 * It is written out as text instead of being produced by Pulumi's closure
 * serialization (`pulumi.dynamic.Resource`): serializing the forwarder cost
 * the program ~0.3 s on every engine run (the SDK loads the TypeScript
 * compiler to parse function bodies) and gave the same module.
 *
 * Credentials come from `configure` (the stack's config), never from inputs,
 * so they are neither serialized nor stored in state. Any dynamic-provider
 * host can run it: the SDK's (`requireFromString(text).handler()`, then
 * `configure`) and ours (providers/host.ts, which keeps configuration per
 * engine connection and does not call `configure`).
 */
export function providerModuleSource(kind: ProviderKind): string {
    return `"use strict";
// sglang-serve dynamic provider (${PROVIDER_VERSION}): forwards to providers/${kind} in the project.
const kind = ${JSON.stringify(kind)};
const configKeys = ${JSON.stringify(PROVIDER_CONFIG_KEYS)};
function load() {
    const path = require("path");
    const fs = require("fs");
    // The engine starts the dynamic provider in the program's directory; the
    // project root is the nearest directory above it with a Pulumi.yaml.
    let root = process.env.SGLANG_SERVE_ROOT || process.cwd();
    while (!fs.existsSync(path.join(root, "Pulumi.yaml")) && path.dirname(root) !== root) root = path.dirname(root);
    // Compiled by scripts/build-program.js before every engine run (fast start);
    // the TypeScript source through ts-node otherwise (tests, hand runs).
    const compiled = path.join(root, ".build", "providers", kind + ".js");
    if (fs.existsSync(compiled)) return require(compiled).provider;
    if (!require.extensions[".ts"]) {
        require(path.join(root, "node_modules", "ts-node")).register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
    }
    return require(path.join(root, "providers", kind + ".ts")).provider;
}
exports.handler = function () {
    return {
        async configure(req) {
            const config = {};
            for (const [field, key] of Object.entries(configKeys)) config[field] = req.config.get(key);
            globalThis.__sglangServeProviderConfig = config;
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
 * A dynamic resource (`pulumi-nodejs:dynamic/sglang-serve:<type>`), registered
 * as `pulumi.dynamic.Resource` registers one, with the provider module above.
 */
export abstract class DynamicResource extends pulumi.CustomResource {
    constructor(kind: ProviderKind, type: string, name: string, props: pulumi.Inputs, opts?: pulumi.CustomResourceOptions) {
        if ("__provider" in props) throw new Error("a dynamic resource must not define the __provider input");
        super(`pulumi-nodejs:dynamic/sglang-serve:${type}`, name, { ...props, __provider: providerModuleSource(kind) }, opts);
    }
}
