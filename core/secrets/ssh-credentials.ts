/**
 * Where the SSH client key comes from, in order: the secret
 * `sglang-serve:sshPrivateKey` (CI), the key file `host.sshPrivateKeyPath`,
 * else the user's ssh-agent (`SSH_AUTH_SOCK`), which is what people use:
 * the key then never leaves the agent, and nothing of it is in the stack's
 * config or state. A key file must be readable by its owner only, as
 * OpenSSH insists.
 */

export type SshCredentialSource =
    { kind: "secret" } | { kind: "key-file"; path: string } | { kind: "agent"; socket: string } | { kind: "none"; message: string };

export function chooseSshCredentials(args: { secretSet: boolean; keyPath?: string; agentSocket?: string }): SshCredentialSource {
    if (args.secretSet) return { kind: "secret" };
    if (args.keyPath) return { kind: "key-file", path: args.keyPath };
    if (args.agentSocket) return { kind: "agent", socket: args.agentSocket };
    return {
        kind: "none",
        message:
            "no SSH credentials: SSH_AUTH_SOCK is not set (no ssh-agent), and neither sglang-serve:host.sshPrivateKeyPath nor the secret " +
            "sglang-serve:sshPrivateKey is. Start an agent and add the key (`eval $(ssh-agent)` and `ssh-add ~/.ssh/id_ed25519`), " +
            "or set host.sshPrivateKeyPath to a key file (mode 0600)",
    };
}

/** The modes OpenSSH accepts for a private key without complaint that this stack allows: owner read(-write) only. */
const KEY_FILE_MODES = [0o600, 0o400];

/** Why a key file with `mode` (st_mode) must not be used, or undefined when it may. */
export function keyFileModeProblem(path: string, mode: number): string | undefined {
    const perms = mode & 0o777;
    if (KEY_FILE_MODES.includes(perms)) return undefined;
    const octal = perms.toString(8).padStart(4, "0");
    const who = perms & 0o077 ? " (group or others may read it)" : "";
    return (
        `the SSH private key ${path} (sglang-serve:host.sshPrivateKeyPath) has mode ${octal}${who}: ` +
        `it must be 0600 or 0400, as ssh requires. Fix it with \`chmod 600 ${path}\`, or use ssh-agent instead.`
    );
}
