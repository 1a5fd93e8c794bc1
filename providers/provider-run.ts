import { randomUUID } from "node:crypto";
import type { Connection } from "../core/connection";
import type { ProviderConfig } from "../core/config/provider-config";
import { sshPrivateKeyPath } from "../core/config/stack-config-source";
import { RemoteHost } from "../remote/remote-host";
import { loadSshCredentials, SshCredentials } from "../remote/ssh-credentials";
import type { SshPool } from "../remote/ssh-pool";
import type { SshTarget } from "../remote/ssh-target";
import { say } from "./say";
import { ServerLooks } from "./server-looks";
import { RunReads } from "./run-reads";
import { UnitReads } from "./unit-reads";

/**
 * Where a provider's command runs: on the SSH host itself ("host": the GPUs,
 * /proc/devices, `pct`), or where the server runs ("server": inside the
 * container through `pct exec <vmid> --` in the pct-exec topology, on the
 * host it is in the direct one).
 */
export type Placement = "host" | "server";

/**
 * One engine run as the providers see it: what the resources of a run share,
 * handed to every provider verb (providers/<kind>.ts `<kind>Provider(run)`).
 * The SDK's dynamic-provider plugin serves every dynamic resource of a run
 * from one process (docs/design.md, "The dynamic-provider path"), so the
 * process holds one (providers/context.ts); a test builds its own with a
 * fake pool.
 *
 * - `pool`: the SSH connections, one per host for the run.
 * - `looks`: a look at a server in flight, shared by the service's and the
 *   readiness check's refreshes.
 * - `unitReads`: the services' unit reads of one box, batched.
 * - `reads`: what the run reads of a box once and shares (the box's facts
 *   about a server, its drafter folder's: providers/sglang-server/facts.ts),
 *   for the refresh, check and the rollout alike.
 * - `id`: names this run in outputs: a rollout records the revision it
 *   verified serving with this id, and the ReadinessCheck of the same run (its
 *   inputs carry that output) confirms instead of waiting again.
 * - the stack config `configure` handed over (credentials).
 */
export class ProviderRun {
    readonly id = randomUUID();
    readonly pool: SshPool;
    readonly looks = new ServerLooks();
    readonly unitReads = new UnitReads();
    readonly reads = new RunReads();
    private configured: ProviderConfig | undefined;

    constructor(options: { pool: SshPool; config?: ProviderConfig }) {
        this.pool = options.pool;
        this.configured = options.config;
    }

    /** The stack config from the provider module's `configure` (components/dynamic-provider.ts). */
    configure(config: ProviderConfig): void {
        this.configured = config;
    }

    /**
     * What `configure` handed over. States written by sglang-serve/2 carry a
     * provider module whose `configure` kept the config in a global instead; a
     * refresh or destroy of such a state runs that module, so it is read too.
     */
    config(): ProviderConfig {
        return this.configured ?? (globalThis as { __sglangServeProviderConfig?: ProviderConfig }).__sglangServeProviderConfig ?? {};
    }

    /**
     * The SSH credentials: the key file `sglang-serve:host.sshPrivateKeyPath`
     * (with boxes, that of the box whose host is `target`; mode 0600 or 0400), else the ssh-agent at SSH_AUTH_SOCK
     * (remote/ssh-credentials.ts); the secret `sglang-serve:sshPrivateKey` only
     * where a stack of an older version still holds it (the program refuses it
     * now, so only a refresh or destroy of such a stack gets here with it). Read
     * at run time, so rotating the key needs no update; never put in state.
     */
    sshCredentials(target?: { address: string; port: number }): SshCredentials {
        const config = this.config();
        return loadSshCredentials({
            sshPrivateKey: config.sshPrivateKey,
            sshPrivateKeyPassphrase: config.sshPrivateKeyPassphrase,
            sshPrivateKeyPath: sshPrivateKeyPath((name) => (name === "host" ? config.host : name === "boxes" ? config.boxes : undefined), target),
        });
    }

    sshTarget(connection: Connection): SshTarget {
        return {
            address: connection.address,
            port: connection.port,
            user: connection.user,
            hostKey: connection.hostKey,
            ...this.sshCredentials(connection),
            label: `${connection.user}@${connection.address}:${connection.port}`,
        };
    }

    /** Commands for the box a connection names, placed as asked, over this run's pool. */
    remoteFor(connection: Connection, placement: Placement): RemoteHost {
        const onHost = placement === "host";
        return new RemoteHost({
            pool: this.pool,
            target: this.sshTarget(connection),
            topology: onHost ? "direct" : connection.topology,
            vmid: onHost ? undefined : connection.vmid,
            log: say,
        });
    }
}
