import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import type { Connection } from "../components/connection";
import type { ProviderConfig } from "../core/provider-config";
import { RemoteHost } from "../remote/remote-host";
import { getSshPool, SshTarget } from "../remote/ssh";


let configured: ProviderConfig | undefined;

/**
 * The stack config for this provider process, from the provider module's
 * `configure` (components/dynamic-provider.ts): the SDK's dynamic provider
 * calls it once per process before any other method.
 */
export function configureProviders(config: ProviderConfig): void {
    configured = config;
}

/**
 * What `configure` handed over. States written by sglang-serve/2 carry a
 * provider module whose `configure` kept the config in a global instead; a
 * refresh or destroy of such a state runs that module, so it is read too.
 */
function providerConfig(): ProviderConfig {
    return configured ?? (globalThis as { __sglangServeProviderConfig?: ProviderConfig }).__sglangServeProviderConfig ?? {};
}

function expandHome(p: string): string {
    return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}

/**
 * The SSH private key: the secret `sglang-serve:sshPrivateKey`, else the file
 * named by `sglang-serve:host.sshPrivateKeyPath`. Read at run time from the
 * stack config, so it is never in the state and rotating it needs no update.
 */
export function sshPrivateKey(): { key: string; passphrase?: string } {
    const config = providerConfig();
    if (config.sshPrivateKey) {
        return { key: config.sshPrivateKey, passphrase: config.sshPrivateKeyPassphrase };
    }
    let keyPath: string | undefined;
    if (config.host) {
        try {
            keyPath = (JSON.parse(config.host) as { sshPrivateKeyPath?: string }).sshPrivateKeyPath;
        } catch {
            keyPath = undefined;
        }
    }
    if (!keyPath) {
        throw new Error(
            "no SSH private key: set the secret sglang-serve:sshPrivateKey " +
                "(`npm run pulumi -- config set --secret sglang-serve:sshPrivateKey < ~/.ssh/id_ed25519`) " +
                "or sglang-serve:host.sshPrivateKeyPath",
        );
    }
    const resolved = expandHome(keyPath);
    try {
        return { key: fs.readFileSync(resolved, "utf8"), passphrase: config.sshPrivateKeyPassphrase };
    } catch (e) {
        throw new Error(`cannot read the SSH private key at ${resolved} (sglang-serve:host.sshPrivateKeyPath): ${(e as Error).message}`);
    }
}

/**
 * Replaces each secret's value with [secret]. Journal lines go into progress
 * and error messages, and SGLang's startup line `server_args=ServerArgs(...)`
 * echoes the api_key.
 */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
    return secrets.reduce<string>((t, secret) => (secret && secret.length >= 4 ? t.split(secret).join("[secret]") : t), text);
}

/** Progress and notices from the providers show in `pulumi up`'s output. */
export function say(message: string): void {
    console.log(message);
}

export function sshTarget(connection: Connection): SshTarget {
    const { key, passphrase } = sshPrivateKey();
    return {
        address: connection.address,
        port: connection.port,
        user: connection.user,
        hostKey: connection.hostKey,
        privateKey: key,
        passphrase,
        label: `${connection.user}@${connection.address}:${connection.port}`,
    };
}

/** Commands for the box a connection names: the container (direct or through pct exec), or the host. */
export function remoteFor(connection: Connection): RemoteHost {
    return new RemoteHost({
        pool: getSshPool(),
        target: sshTarget(connection),
        // Host-level resources (GpuHost, LxcContainer) carry no vmid: their commands run on the host itself.
        topology: connection.vmid === undefined ? "direct" : connection.topology,
        vmid: connection.vmid,
        log: say,
    });
}
