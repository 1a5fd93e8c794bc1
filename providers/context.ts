import type { Connection } from "../components/connection";
import type { ProviderConfig } from "../core/provider-config";
import { RemoteHost } from "../remote/remote-host";
import { getSshPool } from "../remote/ssh-pool";
import { SshTarget } from "../remote/ssh-target";
import { loadSshCredentials, SshCredentials } from "../remote/ssh-credentials";
import { sshPrivateKeyPath } from "../core/stack-config-source";
import { DeclaredSecrets, deployApiKeyFrom, DeploySecrets, deploySecretsFrom, givesDeploySecrets } from "../core/deploy-secrets";

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

/**
 * The SSH credentials: the secret `sglang-serve:sshPrivateKey`, else the key
 * file `sglang-serve:host.sshPrivateKeyPath` (mode 0600 or 0400), else the
 * ssh-agent at SSH_AUTH_SOCK (remote/ssh-credentials.ts). Read at run time,
 * so rotating the key needs no update; the providers never put it in state.
 */
export function sshCredentials(): SshCredentials {
    const config = providerConfig();
    return loadSshCredentials({
        sshPrivateKey: config.sshPrivateKey,
        sshPrivateKeyPassphrase: config.sshPrivateKeyPassphrase,
        sshPrivateKeyPath: sshPrivateKeyPath((name) => (name === "host" ? config.host : undefined)),
    });
}

/**
 * The deploy run's secret values (core/deploy-secrets.ts), from this
 * process's environment (the engine starts the provider plugin with the
 * CLI's): read when a provider writes the box or authenticates, never an
 * input, never in the state. Throws naming every problem (a value missing,
 * malformed, or not declared).
 */
export function deploySecrets(declared: DeclaredSecrets): DeploySecrets {
    const result = deploySecretsFrom(process.env, declared);
    if (!result.ok) throw new Error(`the deploy's secrets: ${result.problems.join("; ")}`);
    return result.secrets;
}

/** The deploy run's secret values when it gives any (a deploy), undefined when it gives none (a preview or drift check without them). */
export function deploySecretsIfGiven(declared: DeclaredSecrets): DeploySecrets | undefined {
    return givesDeploySecrets(process.env) ? deploySecrets(declared) : undefined;
}

/** The deploy run's API key (service.requireApiKey), for the readiness check's requests. */
export function deployApiKey(): string {
    const key = deployApiKeyFrom(process.env);
    if (!key.ok) throw new Error(key.problem);
    return key.apiKey;
}

export { redact } from "../core/redact";

/** Progress and notices from the providers show in `pulumi up`'s output. */
export function say(message: string): void {
    console.log(message);
}

export function sshTarget(connection: Connection): SshTarget {
    return {
        address: connection.address,
        port: connection.port,
        user: connection.user,
        hostKey: connection.hostKey,
        ...sshCredentials(),
        label: `${connection.user}@${connection.address}:${connection.port}`,
    };
}

/**
 * Where a provider's command runs: on the SSH host itself ("host": the GPUs,
 * /proc/devices, `pct`), or where the server runs ("server": inside the
 * container through `pct exec <vmid> --` in the pct-exec topology, on the
 * host it is in the direct one).
 */
export type Placement = "host" | "server";

/** Commands for the box a connection names, placed as asked. */
export function remoteFor(connection: Connection, placement: Placement): RemoteHost {
    const onHost = placement === "host";
    return new RemoteHost({
        pool: getSshPool(),
        target: sshTarget(connection),
        topology: onHost ? "direct" : connection.topology,
        vmid: onHost ? undefined : connection.vmid,
        log: say,
    });
}
