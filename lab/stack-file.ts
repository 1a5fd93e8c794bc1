// A Pulumi.<stack>.yaml that the lab's tools write from a config they derive
// (the lab stack of `npm run lab`, the test deployments): its settings come
// from the derivation, its `encryptionsalt` and secret (`secure:`) values are
// the stack's own, kept from the file as Pulumi last wrote it. A secure value
// is ciphertext under the salt of the stack that set it, so it never travels
// to another stack's file, and neither does that salt (issue 22: kpro5's salt
// copied into the lab's file broke `npm run lab` once kpro5's key was set).
import * as fs from "fs";
import * as yaml from "js-yaml";

type Config = Record<string, unknown>;

/** A secret as Pulumi stores it in a stack file: `{ secure: <ciphertext> }`. */
export function isSecureValue(value: unknown): boolean {
    return value !== null && typeof value === "object" && "secure" in value;
}

/** `config` without its secure values: what may be copied from one stack's file to another's. */
export function withoutSecureValues<T extends Config>(config: T): Partial<T> {
    return Object.fromEntries(Object.entries(config).filter(([, v]) => !isSecureValue(v))) as Partial<T>;
}

/** A stack file's settings: its `config:` map without the secure values (another stack may derive from them). */
export function readStackConfig(file: string): Record<string, Config> {
    const doc = (yaml.load(fs.readFileSync(file, "utf8")) ?? {}) as { config?: Record<string, Config> };
    return withoutSecureValues(doc.config ?? {}) as Record<string, Config>;
}

/** The stack's own salt and secure values in `file`, as Pulumi wrote them (none when there is no file yet). */
function ownSecrets(file: string): { salt?: string; secure: Config } {
    if (!fs.existsSync(file)) return { secure: {} };
    // json: a repeated key takes its last value instead of failing: the lab files written before issue 22's fix
    // hold `encryptionsalt` twice, kpro5's first and the lab's own last.
    const doc = (yaml.load(fs.readFileSync(file, "utf8"), { json: true }) ?? {}) as { encryptionsalt?: string; config?: Config };
    const secure = Object.fromEntries(Object.entries(doc.config ?? {}).filter(([, v]) => isSecureValue(v)));
    return { salt: doc.encryptionsalt, secure };
}

/**
 * Writes `file` with `config` (its secure values dropped) and the stack's own
 * salt and secure values kept from the file as it was. `header` is a comment
 * line or lines put on top.
 */
export function writeStackFile(file: string, config: Config, header = ""): void {
    const own = ownSecrets(file);
    const salt = own.salt === undefined ? "" : `encryptionsalt: ${own.salt}\n`;
    // JSON is YAML, and leaves no doubt about a value's type (a version "0.5.11", a flag value "0755") in any YAML reader.
    fs.writeFileSync(file, `${header}${salt}config: ${JSON.stringify({ ...withoutSecureValues(config), ...own.secure })}\n`);
}
