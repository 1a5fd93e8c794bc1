/**
 * What looks like a secret in a stack's plain settings: variable names
 * (`HF_TOKEN`, `PASSWD`, `OPENAI_APIKEY`) and values (`hf_…`, `sk-…`,
 * `postgres://u:pw@h/db`). service.environment goes in clear into the 0644
 * unit, the state and every preview, so anything that looks like one is
 * refused there with the fix (service.secretEnvironment; issue 34, finding 7).
 * Each answer names the rule it matched, never the value.
 */

/** Name rules, tried in order on the upper-cased name; `why` finishes "looks like a secret: …". */
const SECRET_NAME_RULES: ReadonlyArray<{ test: RegExp; why: string }> = [
    { test: /TOKEN/, why: "it holds TOKEN" },
    { test: /SECRET/, why: "it holds SECRET" },
    { test: /PASSW(OR)?D|PASSPHRASE/, why: "it names a password or passphrase" },
    { test: /(^|_)(PASS|PWD)($|_)/, why: "it names a password (PASS or PWD)" },
    { test: /CREDENTIAL/, why: "it holds CREDENTIAL" },
    { test: /PRIVATE/, why: "it holds PRIVATE" },
    { test: /API_?KEY|ACCESS_?KEY/, why: "it names an API or access key" },
    { test: /_KEY$/, why: "it ends in _KEY" },
    { test: /(^|_)O?AUTH(ORIZATION|TOKEN)?($|_)/, why: "it names an authorization (AUTH)" },
];

/** Variables that only look like it: the shell's working directory. */
const NOT_SECRET_NAMES: readonly string[] = ["PWD", "OLDPWD"];

/** Why `name` looks like a secret's name (the rule it matched), or undefined. Case-insensitive. */
export function secretNameRule(name: string): string | undefined {
    const upper = name.toUpperCase();
    if (NOT_SECRET_NAMES.includes(upper)) return undefined;
    return SECRET_NAME_RULES.find((rule) => rule.test.test(upper))?.why;
}

/** Names that look like secrets (secretNameRule). */
export function looksSecret(name: string): boolean {
    return secretNameRule(name) !== undefined;
}

/**
 * Value rules: the prefixes providers give their keys, and credentials in a
 * URL. A prefix counts at the start of the value or after a character that is
 * not a letter or digit (`--token hf_…`), followed by enough key characters
 * that a word such as `sk-learn` does not match.
 */
const SECRET_VALUE_RULES: ReadonlyArray<{ test: RegExp; why: string }> = [
    { test: /(^|[^A-Za-z0-9])hf_[A-Za-z0-9]{20,}/, why: "a Hugging Face token (hf_…)" },
    { test: /(^|[^A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}/, why: "an API key (sk-…)" },
    { test: /(^|[^A-Za-z0-9])(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/, why: "a GitHub token (ghp_…)" },
    { test: /(^|[^A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}/, why: "a GitLab token (glpat-…)" },
    { test: /(^|[^A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/, why: "a Slack token (xox…-)" },
    { test: /(^|[^A-Za-z0-9])(AKIA|ASIA)[0-9A-Z]{16}($|[^0-9A-Z])/, why: "an AWS access key id (AKIA…)" },
    { test: /-----BEGIN [A-Z ]*PRIVATE KEY-----/, why: "a private key (-----BEGIN … PRIVATE KEY-----)" },
    { test: /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#@\s]*:[^/?#@\s]*@/, why: "a URL with credentials (scheme://user:password@…)" },
];

/** What `value` looks like when it looks like a credential (the rule it matched, never the value), or undefined. */
export function credentialValueRule(value: string): string | undefined {
    return SECRET_VALUE_RULES.find((rule) => rule.test.test(value))?.why;
}

/** Whether a URL carries credentials (`user:password@` or a bare `token@` before the host). */
export function urlHasCredentials(url: string): boolean {
    return /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*@/.test(url);
}
