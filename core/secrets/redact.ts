/**
 * Secrets out of text that goes to logs, progress lines and error messages:
 * journal lines (SGLang's `server_args=ServerArgs(...)` echoes the API key),
 * library messages that might echo a key or passphrase, unit-file lines in a
 * drift report. One module for every way the stack does it.
 */

export const SECRET_MASK = "[secret]";

/** Each known secret value replaced with the mask (values under 4 characters are not secrets worth the noise). */
export function redact(text: string, secrets: readonly (string | undefined)[], mask = SECRET_MASK): string {
    return secrets.reduce<string>((t, secret) => (secret && secret.length >= 4 ? t.split(secret).join(mask) : t), text);
}

/**
 * Secret-looking assignments in free text whose values are not known (a unit
 * file line): `--api-key abc` and `SGLANG_API_KEY=abc` keep their names, lose
 * their values.
 */
export function maskSecretAssignments(line: string): string {
    return line
        .replace(/(--api-key(?:=|\s+))(\S+)/g, `$1${SECRET_MASK}`)
        .replace(/\b([A-Z0-9_]*(?:API_KEY|TOKEN|PASSWORD|PASSPHRASE|SECRET)[A-Z0-9_]*=)(\S+)/g, `$1${SECRET_MASK}`);
}
