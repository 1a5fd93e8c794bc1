// The one error of the SSH layer: its kind says what went wrong (and whether
// the pool reconnects for it), its host where.

export type SshErrorKind =
    | "config" // bad target: missing pin, unparsable key
    | "host-key" // the host offered another key than the pinned one
    | "auth" // the user/key was refused
    | "connection" // could not connect or the connection dropped (retried)
    | "timeout" // the command ran past timeoutMs
    | "channel" // the server refused a session channel
    | "command"; // execChecked: non-zero exit

export class SshError extends Error {
    constructor(
        readonly kind: SshErrorKind,
        message: string,
        /** user@address:port */
        readonly host: string,
        /** For kind "connection": ECONNRESET, ECONNREFUSED, "Not connected", ... */
        readonly reason?: string,
    ) {
        super(message);
        this.name = "SshError";
    }
}
