// What the SSH pool runs a command on, and what a command takes and gives:
// the target (address, user, pinned key, credentials), its name in messages,
// and its secrets kept out of those messages. Shared by the pool
// (ssh-pool.ts), RemoteHost (remote-host.ts) and the test fakes.

import { redact } from "../core/secrets/redact";

export interface SshTarget {
    address: string;
    port: number;
    user: string;
    /** Pinned host key as in known_hosts without the host name: "ssh-ed25519 AAAA...". */
    hostKey: string;
    /** PEM/OpenSSH private key text; kept in memory only. Absent when `agent` signs instead. */
    privateKey?: string;
    passphrase?: string;
    /** ssh-agent's socket (SSH_AUTH_SOCK): the agent's keys are offered when there is no privateKey. */
    agent?: string;
    /** Shown next to user@address:port in messages (e.g. the stack's host name). */
    label?: string;
}

/** user@address:port, the pool's key for a target. */
export function hostId(target: Pick<SshTarget, "user" | "address" | "port">): string {
    return `${target.user}@${target.address}:${target.port}`;
}

/** user@address:port, with the target's label when it has one: how messages name the host. */
export function hostName(target: SshTarget): string {
    const id = hostId(target);
    return target.label && target.label !== id ? `${id} (${target.label})` : id;
}

/**
 * Remove secrets that a library message might echo: the passphrase, the
 * private key's lines, the lines of what went to stdin. Last line of defence,
 * not the plan; the masking itself is core/secrets/redact.ts.
 */
export function redactTarget(message: string, target: SshTarget, stdin?: string | Buffer): string {
    const secrets: string[] = [];
    if (target.passphrase) secrets.push(target.passphrase);
    for (const line of (target.privateKey ?? "").split(/\r?\n/)) {
        if (line.length >= 16 && !line.startsWith("-----")) secrets.push(line);
    }
    if (stdin !== undefined) {
        const s = typeof stdin === "string" ? stdin : stdin.toString("utf8");
        for (const line of s.split(/\r?\n/)) if (line.trim().length >= 8) secrets.push(line);
    }
    return redact(message, secrets, "[redacted]");
}

export interface ExecOptions {
    /** Sent to the command's stdin, then EOF. Never logged. */
    stdin?: string | Buffer;
    /** Kill (signal KILL, close the channel) and fail after this long. Default: no limit. */
    timeoutMs?: number;
    /**
     * Re-run the command after a dropped connection (default true). A drop while
     * the command ran means it may have run (partly): commands sent through the
     * pool are idempotent (writes are tmp+rename, reads are reads); pass false
     * for one that is not.
     */
    retry?: boolean;
    /** Overrides the pool's log for this call's reconnect notices. */
    log?: (message: string) => void;
}

export interface ExecResult {
    /** Exit status; 128+N when the command was killed by signal N (as a shell reports it). */
    code: number;
    /** Set when the command was killed by a signal, e.g. "KILL". */
    signal?: string;
    stdout: string;
    stderr: string;
}
