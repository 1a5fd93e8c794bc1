/**
 * Where a resource's commands go: the SSH endpoint (pinned host key) and, for
 * the kpro5 topology, the container they are wrapped into with `pct exec`.
 * Plain data: it is stored in state so refresh and destroy know the box.
 * The private key is not here; providers get it from the stack config.
 */
export interface Connection {
    address: string;
    port: number;
    user: string;
    hostKey: string;
    topology: "direct" | "pct-exec";
    /** The container commands run in (pct-exec); absent for host-level resources and direct topology. */
    vmid?: number;
}
