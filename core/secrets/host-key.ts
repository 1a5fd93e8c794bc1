/**
 * Pinned SSH host keys: `<type> <base64>` as one line of `ssh-keyscan`
 * output without the host name. One parser for the config validation (the
 * preview names the problem) and the SSH pool (which offers only the pinned
 * type and compares the blob the host shows).
 */
import { sha256 } from "../digest";

export const HOST_KEY_TYPES = ["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"] as const;
export type HostKeyType = (typeof HOST_KEY_TYPES)[number];

export interface HostKey {
    type: HostKeyType;
    /** The SSH wire-format public key blob. */
    blob: Buffer;
}

/** The key type named inside a wire-format blob (uint32 length + name), or null. */
export function keyTypeOfBlob(blob: Buffer): string | null {
    if (blob.length < 4) return null;
    const n = blob.readUInt32BE(0);
    if (n === 0 || n > 64 || blob.length < 4 + n) return null;
    return blob.subarray(4, 4 + n).toString("latin1");
}

/** The key, or what is wrong with the text (a phrase to follow the key's name: "host.hostKey <problem>"). */
export function parseHostKey(text: string): { key: HostKey } | { problem: string } {
    const m = /^(\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(text);
    if (!m) return { problem: 'must be "<type> <base64>" as one line of `ssh-keyscan -t ed25519 <address>` output without the host name' };
    const [, type, base64] = m as unknown as [string, string, string];
    if (!(HOST_KEY_TYPES as readonly string[]).includes(type)) return { problem: `has key type ${type}; use one of ${HOST_KEY_TYPES.join(", ")}` };
    const blob = Buffer.from(base64, "base64");
    if (blob.toString("base64") !== base64) return { problem: "has a base64 part that does not decode cleanly: copy the key again" };
    const inner = keyTypeOfBlob(blob);
    if (inner === null) return { problem: "has a key blob too short to hold its type: copy the key again" };
    if (inner !== type) return { problem: `says ${type} but the key blob holds ${inner}: copy the key again` };
    if (type === "ssh-ed25519" && blob.length !== 4 + 11 + 4 + 32) return { problem: "is not a 32-byte ed25519 key: copy the key again" };
    return { key: { type: type as HostKeyType, blob } };
}

/** "SHA256:..." as OpenSSH prints it: base64 of the SHA-256 of the key blob, no padding. */
export function fingerprintOfKeyBlob(blob: Buffer): string {
    return `SHA256:${sha256(blob, "base64").replace(/=+$/, "")}`;
}

function sshString(text: string | Buffer): Buffer {
    const body = typeof text === "string" ? Buffer.from(text, "latin1") : text;
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    return Buffer.concat([length, body]);
}

/**
 * A well-formed ed25519 host key whose 32 key bytes spell
 * "PLACEHOLDER-REPLACE-WITH-KEYSCAN": it passes the shape check so `pulumi
 * preview` works without contacting hosts, is recognised (and warned about)
 * by the config, and matches no real host, so the pinned-key check refuses
 * to connect.
 */
export const PLACEHOLDER_HOST_KEY =
    "ssh-ed25519 " + Buffer.concat([sshString("ssh-ed25519"), sshString(Buffer.from("PLACEHOLDER-REPLACE-WITH-KEYSCAN", "latin1"))]).toString("base64");

export function isPlaceholderHostKey(text: string): boolean {
    return text === PLACEHOLDER_HOST_KEY;
}
