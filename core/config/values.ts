/**
 * The values the stack config accepts, one alphabet or predicate each.
 * Values end up in a systemd unit and in shell commands sent over SSH;
 * rather than trust escaping alone, anything outside these conservative
 * alphabets is rejected with the fix (no quotes, `$`, `\`, spaces, `;`,
 * backticks, newlines, NUL or other control characters). Two kinds of value
 * are free text instead, because real commands need JSON and spaces there:
 * extraArgs (core/sglang/extra-args.ts) and service.environment values; they go
 * only into the unit, never into a shell command, quoted by systemd's own
 * rules (core/unit/systemd-unit.ts, tested to round-trip), and still may not
 * hold NUL, line breaks or other control characters. The schema
 * (core/config/schema.ts) and the rules (core/config/rules.ts) use them.
 */
import { z } from "zod";
import { fromNumericString } from "./scalars";
import { parseHostKey } from "../secrets/host-key";

/** Absolute path of plain characters. */
export const ABSOLUTE_PATH = /^\/[A-Za-z0-9._/@+-]*$/;
/** An SSH private key file: absolute or under the home directory. */
export const KEY_PATH = /^(~\/|\/)[A-Za-z0-9._/@+-]*$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const SERVICE_NAME = /^[a-z][a-z0-9-]{0,39}$/;
export const LABEL = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
export const DNS_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const IPV6 = /^[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:]*$/;
export const SERVED_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$/;
export const ARCHITECTURE = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;
export const VERSION = /^\d+\.\d+\.\d+$/;
export const INTERFACE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;
export const GPU_NAME = /^[A-Za-z0-9 ._()+-]{1,64}$/;
/** API keys go into the 0600 EnvironmentFile unquoted and into the 0600 SGLang config file in double quotes. */
const API_KEY_ALPHABET = /^[A-Za-z0-9._~+/=-]*$/;
export const API_KEY_MIN_LENGTH = 16;
export const API_KEY_MAX_LENGTH = 256;
/** A Pulumi stack name, optionally with its project (`<project>/<stack>`), as `service.takeOverFrom` names it. */
export const STACK_REF = /^([A-Za-z0-9_.-]{1,100}\/)?[A-Za-z0-9_.-]{1,100}$/;

export function isIpv4(s: string): boolean {
    const m = IPV4.exec(s);
    return m !== null && m.slice(1).every((octet) => Number(octet) <= 255);
}

export function isIpv4Cidr(s: string): boolean {
    const [ip, prefix, ...rest] = s.split("/");
    return rest.length === 0 && isIpv4(ip) && /^\d{1,2}$/.test(prefix ?? "") && Number(prefix) <= 32;
}

function isHostAddress(s: string): boolean {
    if (/^[\d.]+$/.test(s)) return isIpv4(s);
    return DNS_NAME.test(s) || IPV6.test(s);
}

export function isLoopback(host: string): boolean {
    return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/**
 * A URL's authority (host, a port allowed) that names a loopback host:
 * localhost, [::1], or an IPv4 address in 127.0.0.0/8 (not a DNS name that
 * merely begins with 127.). Where plain http:// is allowed (a pip source, a
 * Hub mirror).
 */
export function isLoopbackAuthority(authority: string): boolean {
    const host = authority.startsWith("[") ? authority.slice(1, authority.indexOf("]")) : authority.split(":")[0]!;
    return host.toLowerCase() === "localhost" || host === "::1" || (isIpv4(host) && host.startsWith("127."));
}

export const API_KEY_SET_HELP = "`export SGLANG_SERVE_API_KEY=$(openssl rand -hex 32)` in the deploy's environment, never in Pulumi config";

/**
 * Why `key` cannot be the server's API key, or undefined when it can. The
 * value itself is never part of the answer. An empty key matters most:
 * SGLang adds its auth middleware only for a non-empty `--api-key`, so
 * `SGLANG_API_KEY=` would serve without authentication.
 */
export function apiKeyProblem(key: string): string | undefined {
    if (key === "") {
        return (
            "is empty, and SGLang treats an empty --api-key as no key: the server would answer without authentication. " +
            `Set a key of ${API_KEY_MIN_LENGTH}-${API_KEY_MAX_LENGTH} characters (${API_KEY_SET_HELP})`
        );
    }
    if (key.length < API_KEY_MIN_LENGTH || key.length > API_KEY_MAX_LENGTH) {
        return `is ${key.length} characters long but must be ${API_KEY_MIN_LENGTH}-${API_KEY_MAX_LENGTH}: set a longer key (${API_KEY_SET_HELP})`;
    }
    if (!API_KEY_ALPHABET.test(key)) {
        return (
            "has characters other than letters, digits and ._~+/=- (it goes unquoted into the 0600 EnvironmentFile and SGLang's 0600 config file): " +
            `set a key of those characters only (${API_KEY_SET_HELP})`
        );
    }
    return undefined;
}

const HOST_ADDRESS_HELP = "must be an IPv4 address, an IPv6 address or a DNS name (letters, digits, '-' and '.'); nothing else, so it is safe in commands";

export const absolutePath = () =>
    z.string().regex(ABSOLUTE_PATH, {
        error: "must be an absolute path of letters, digits and ._/@+- only (no spaces, quotes, $ or control characters): rename or symlink it to such a path",
    });

export const hostAddress = () => z.string().refine(isHostAddress, { error: HOST_ADDRESS_HELP });

export const port = () =>
    fromNumericString(
        z
            .int({ error: "must be a whole number from 1 to 65535" })
            .min(1, { error: "must be a port from 1 to 65535" })
            .max(65535, { error: "must be a port from 1 to 65535" }),
    );

/** Why `text` is not a pinned host key (core/secrets/host-key.ts), or undefined when it is. */
export function hostKeyProblem(text: string): string | undefined {
    const parsed = parseHostKey(text);
    return "problem" in parsed ? parsed.problem : undefined;
}
