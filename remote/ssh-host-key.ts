// The pinned host key as the SSH pool uses it: the configured text, parsed by
// core/secrets/host-key.ts (the one parser of host keys), or an error that says what
// to configure; and the host-key algorithms to offer so the host shows the
// pinned key.

import { ServerHostKeyAlgorithm } from "ssh2";
import { HostKey, HostKeyType, parseHostKey } from "../core/secrets/host-key";
import { SshError } from "./ssh-error";

export type PinnedKey = HostKey;

/** The pinned key of `host`, or an SshError that says what to put there. */
export function parsePinnedHostKey(hostKey: string, host: string): PinnedKey {
    const hint =
        `set sglang-serve:host.hostKey to the host's key as "<type> <base64>" ` +
        `(e.g. the output of \`ssh-keyscan -t ed25519 <address>\` without the address)`;
    if (hostKey.trim() === "") {
        throw new SshError("config", `ssh: no pinned host key for ${host}; unknown host keys are never accepted: ${hint}`, host);
    }
    const parsed = parseHostKey(hostKey.trim());
    if ("problem" in parsed) throw new SshError("config", `ssh: the pinned host key for ${host} ${parsed.problem}; ${hint}`, host);
    return parsed.key;
}

/** Host-key algorithms to offer: only the pinned type, so the server shows the pinned key. */
export function hostKeyAlgorithms(type: HostKeyType): ServerHostKeyAlgorithm[] {
    switch (type) {
        case "ssh-rsa":
            return ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"];
        case "ssh-ed25519":
        case "ecdsa-sha2-nistp256":
        case "ecdsa-sha2-nistp384":
        case "ecdsa-sha2-nistp521":
            return [type];
        default: {
            const never: never = type;
            throw new Error(`unhandled key type ${String(never)}`);
        }
    }
}
