/**
 * The one reader of a stack's config, wherever it is read: the program and
 * the dynamic providers (Pulumi hands both the `sglang-serve:*` values, objects
 * as JSON text), `npm run render` and the read gate's tool (a
 * Pulumi.<stack>.yaml's `config:` map, objects as YAML), the bench's fleet
 * program. It gives the raw sections core/config/config.ts validates; secrets are
 * read for presence only (to refuse them), never their values.
 */
import { CONFIG_NAMESPACE } from "./namespace";
import { isRecord } from "../is-record";

/** A config value by its key without the namespace (`host`), as the source holds it: text, a parsed object, or a secret's marker. */
export type ConfigSource = (name: string) => unknown;

/** Stands in for a secret's value where the reader has no passphrase (a stack file's `secure:`), or where only presence counts. */
export const SECRET_PRESENT = "(secret)";

const SECTIONS = ["host", "container", "boxes", "service", "servers", "gateway", "readiness", "generateApiKey"] as const;

/** Keys whose values are secrets: only their presence is read. */
const SECRET_KEYS = ["sshPrivateKey", "sshPrivateKeyPassphrase", "apiKey"] as const;

/** JSON text (Pulumi's form of an object value) parsed; anything else as it is. */
function objectValue(value: unknown): unknown {
    if (typeof value !== "string") return value;
    try {
        return JSON.parse(value) as unknown;
    } catch {
        return value;
    }
}

/** The raw sections of a stack's config, for validateStackConfig. */
export function rawStackConfig(source: ConfigSource): Record<string, unknown> {
    const raw: Record<string, unknown> = {};
    for (const name of SECTIONS) {
        const value = source(name);
        if (value !== undefined) raw[name] = objectValue(value);
    }
    // Secrets in Pulumi config are refused (core/config/schema.ts RETIRED_SECRET_KEYS): only their presence is read.
    for (const name of SECRET_KEYS) {
        if (source(name) !== undefined) raw[name] = SECRET_PRESENT;
    }
    return raw;
}

/** A Pulumi.<stack>.yaml's `config:` map as a source; an encrypted value (`secure:`) reads as a stand-in of a valid key's shape. */
export function stackFileSource(doc: unknown, secretStandIn: string): ConfigSource {
    const config = isRecord(doc) && isRecord(doc.config) ? doc.config : {};
    return (name) => {
        const value = config[`${CONFIG_NAMESPACE}:${name}`];
        return isRecord(value) && typeof value.secure === "string" ? secretStandIn : value;
    };
}

/**
 * host.sshPrivateKeyPath, for the providers' SSH credentials: of the box
 * whose host is at `target` (its address and port) when the stack declares
 * boxes, else of the one host.
 */
export function sshPrivateKeyPath(source: ConfigSource, target?: { address: string; port: number }): string | undefined {
    const raw = rawStackConfig(source);
    const hosts = Array.isArray(raw.boxes) ? raw.boxes.map((box) => (isRecord(box) ? box.host : undefined)) : [raw.host];
    const matches = (host: unknown) => isRecord(host) && (target === undefined || (host.address === target.address && Number(host.port ?? 22) === target.port));
    const host = hosts.find(matches);
    return isRecord(host) && typeof host.sshPrivateKeyPath === "string" ? host.sshPrivateKeyPath : undefined;
}
