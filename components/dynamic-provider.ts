import * as pulumi from "@pulumi/pulumi";

/**
 * Bump when this shim changes, so `diff` reports it and the new shim reaches
 * the state (refresh and destroy run the shim stored in state).
 */
export const PROVIDER_VERSION = "sglang-serve/2";

export type ProviderKind = "gpu-host" | "lxc-container" | "sglang-service" | "readiness-check";

/**
 * The dynamic provider stored in state for each resource kind.
 *
 * Pulumi serializes this object into the state, so it is kept to a
 * self-contained forwarder: every method loads the implementation
 * (`providers/<kind>.ts`) from the project directory at run time and calls it.
 * Nothing from module scope is captured except `kind`: no sockets, clients,
 * schemas or config objects. That also means `pulumi refresh` runs the
 * project's current read logic, not a copy frozen in state.
 *
 * Credentials come from `configure` (the stack's config), never from inputs,
 * so they are neither serialized nor stored in state.
 */
export function dynamicProvider(kind: ProviderKind): pulumi.dynamic.ResourceProvider {
    const load = (): pulumi.dynamic.ResourceProvider => {
        const path = require("path");
        // The engine starts the dynamic provider in the program's directory; the
        // project root is the nearest directory above it with a Pulumi.yaml.
        const fs = require("fs");
        let root: string = process.env.SGLANG_SERVE_ROOT || process.cwd();
        while (!fs.existsSync(path.join(root, "Pulumi.yaml")) && path.dirname(root) !== root) root = path.dirname(root);
        // Compiled by scripts/build-program.js before every engine run (fast start);
        // the TypeScript source through ts-node otherwise (tests, hand runs).
        const compiled = path.join(root, ".build", "providers", `${kind}.js`);
        if (fs.existsSync(compiled)) return require(compiled).provider;
        if (!require.extensions[".ts"]) {
            require(path.join(root, "node_modules", "ts-node")).register({
                transpileOnly: true,
                project: path.join(root, "tsconfig.json"),
            });
        }
        return require(path.join(root, "providers", `${kind}.ts`)).provider;
    };
    return {
        async configure(req: pulumi.dynamic.ConfigureRequest) {
            (globalThis as { __sglangServeProviderConfig?: unknown }).__sglangServeProviderConfig = {
                sshPrivateKey: req.config.get("sglang-serve:sshPrivateKey"),
                sshPrivateKeyPassphrase: req.config.get("sglang-serve:sshPrivateKeyPassphrase"),
                host: req.config.get("sglang-serve:host"),
            };
        },
        async check(olds, news) {
            const p = load();
            return p.check ? p.check(olds, news) : { inputs: news };
        },
        async diff(id, olds, news) {
            const p = load();
            return p.diff ? p.diff(id, olds, news) : { changes: true };
        },
        async create(inputs) {
            return load().create(inputs);
        },
        async read(id, props) {
            const p = load();
            return p.read ? p.read(id, props) : { id, props };
        },
        async update(id, olds, news) {
            const p = load();
            return p.update ? p.update(id, olds, news) : { outs: news };
        },
        async delete(id, props) {
            const p = load();
            if (p.delete) await p.delete(id, props);
        },
    };
}
