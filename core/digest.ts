/**
 * The one SHA-256 of the stack: content hashes (the unit body, the pct
 * config the write compares with `sha256sum` on the box, the gate), the
 * secrets hash, cache keys, and OpenSSH fingerprints (base64). node:crypto
 * does no I/O, so it belongs with the pure code.
 */
import { createHash } from "node:crypto";

/** SHA-256 of `data` (a string is hashed as UTF-8), hex unless base64 is asked for. */
export function sha256(data: string | Buffer, encoding: "hex" | "base64" = "hex"): string {
    return createHash("sha256").update(data).digest(encoding);
}
