// The read-only key's authorized_keys line and the shell script that installs
// it with the gate (gate/sglang-serve-read-gate) on a box: what
// `npm run read-gate -- install-script` prints for an operator to pipe into
// `ssh root@<box> sh`. Pure: the gate's text comes in as a value.
import { sha256 } from "../digest";
import { fingerprintOfKeyBlob } from "../secrets/host-key";
import { GateReads, gateReads } from "./reads";
import { shQuote } from "../shell";

export const DEFAULT_GATE_PATH = "/usr/local/sbin/sglang-serve-read-gate";
/** Where sshd looks by default for the user the stack logs in as; `~/` is that user's $HOME on the box. */
export const DEFAULT_AUTHORIZED_KEYS = "~/.ssh/authorized_keys";
const HEREDOC_END = "SGLANG_SERVE_READ_GATE_END";

/**
 * Which reads the key may run: containers through pct on a Proxmox host, or
 * the box it logs into (direct topology); and the interpreters and model
 * folders its box-facts read may use (service.python, service.model.path and
 * the drafter's path, from the stack file), pinned in the key's line.
 */
export type GateScope = ({ vmids: readonly number[] } | { direct: true }) & {
    pythons?: readonly string[];
    models?: readonly string[];
    /** service.venv.root: the gate allows `<root>/venv-<x.y.z>/bin/python3`, each release's venv the stack stages there. */
    venvRoots?: readonly string[];
};

export interface ReadKeyOptions {
    /** The read-only key's public line, as in its .pub file. */
    publicKey: string;
    scope: GateScope;
    /** Where the gate lives on the box. Default DEFAULT_GATE_PATH. */
    gatePath?: string;
    /** sshd `from=` patterns (the runner's addresses), optional. */
    from?: string;
    /** The line's comment. Default "sglang-serve-read". */
    comment?: string;
}

export interface InstallOptions extends ReadKeyOptions {
    /** The gate's source (gate/sglang-serve-read-gate); the script installs it with the reads (renderGate). */
    gateText: string;
    /** The authorized_keys file on the box: absolute, or `~/...`. Default DEFAULT_AUTHORIZED_KEYS. */
    authorizedKeys?: string;
}

export class ReadGateOptionError extends Error {}

const KEY_TYPES = new Set([
    "ssh-ed25519",
    "sk-ssh-ed25519@openssh.com",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-rsa",
]);
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** A path that goes into command="..." and the script unquoted-safe: no spaces, quotes or shell syntax. */
const SAFE_PATH = /^\/[A-Za-z0-9_./+-]+$/;
const FROM_PATTERNS = /^[A-Za-z0-9.:*?!,/_-]+$/;
const COMMENT = /^[A-Za-z0-9_.@:+-]{1,100}$/;

export interface PublicKey {
    type: string;
    blob: string;
    /** SHA256:... as ssh-keygen -l prints it. */
    fingerprint: string;
}

/** The `<type> <base64>` of a .pub file's text; errors name what was given and what to give. */
export function parsePublicKey(text: string): PublicKey {
    const trimmed = text.trim();
    if (/PRIVATE KEY/.test(trimmed)) {
        throw new ReadGateOptionError(
            "--public-key: that is a private key; give the read-only key's .pub file (the private key goes into the CI secret SGLANG_SERVE_READ_SSH_KEY)",
        );
    }
    const lines = trimmed.split("\n").filter((l) => l.trim() !== "");
    const [type, blob] = (lines[0] ?? "").trim().split(/\s+/);
    if (lines.length !== 1 || !type || !KEY_TYPES.has(type) || !blob || !BASE64.test(blob)) {
        throw new ReadGateOptionError(
            `--public-key: ${JSON.stringify(trimmed.slice(0, 80))} is not one OpenSSH public key line ("ssh-ed25519 AAAA... comment"); ` +
                "give the .pub file of the read-only key (make one with ssh-keygen -t ed25519 -N '' -f ~/.ssh/sglang-serve-read-<stack>)",
        );
    }
    return { type, blob, fingerprint: fingerprintOfKeyBlob(Buffer.from(blob, "base64")) };
}

function gatePathOf(opts: ReadKeyOptions): string {
    const p = opts.gatePath ?? DEFAULT_GATE_PATH;
    if (!SAFE_PATH.test(p) || p.split("/").includes("..")) {
        throw new ReadGateOptionError(
            `--gate-path ${JSON.stringify(p)} must be an absolute path of letters, digits and ._/+- (it goes into the key's command="...")`,
        );
    }
    return p;
}

/** The gate's arguments for a scope: `--vmid 129` (repeated) or `--direct`, then `--python P` and `--model M` (each repeatable). */
export function gateArgs(scope: GateScope): string[] {
    const pins = [...pinArgs("--python", scope.pythons), ...pinArgs("--model", scope.models), ...pinArgs("--venv-root", scope.venvRoots)];
    if ("direct" in scope) return ["--direct", ...pins];
    if (scope.vmids.length === 0) throw new ReadGateOptionError("give --vmid <vmid> (the container the key may read through pct) or --direct");
    for (const v of scope.vmids) {
        if (!Number.isInteger(v) || v < 100 || v > 999_999_999)
            throw new ReadGateOptionError(`--vmid ${v} is not a Proxmox container id (an integer from 100)`);
    }
    return [...[...new Set(scope.vmids)].sort((a, b) => a - b).flatMap((v) => ["--vmid", String(v)]), ...pins];
}

/** A pinned path goes into command="..." and the gate compares it as is: absolute, plain characters, no "..", at most 256 characters. */
function pinArgs(option: "--python" | "--model" | "--venv-root", paths: readonly string[] | undefined): string[] {
    return [...new Set(paths ?? [])].sort().flatMap((p) => {
        if (!SAFE_PATH.test(p) || p.length > 256 || p.split("/").includes("..")) {
            const field = { "--python": "service.python", "--model": "service.model.path", "--venv-root": "service.venv.root" }[option];
            throw new ReadGateOptionError(
                `${option} ${JSON.stringify(p)} (${field}) must be an absolute path of letters, digits and ._/+-, without "..", at most 256 characters`,
            );
        }
        return [option, p];
    });
}

/** The line of the gate's source that the install script replaces with the reads. */
const READS_LINE = "READS = None  # SGLANG_SERVE_READ_GATE_READS";

/**
 * The gate as installed: its source (gate/sglang-serve-read-gate) with the
 * reads the stack's builders render (core/read-gate/reads.ts) in place of
 * READS_LINE, as a raw string literal of JSON (every `'` written \u0027, so
 * the literal cannot end early).
 */
export function renderGate(gateText: string, reads: GateReads = gateReads()): string {
    const at = gateText.split("\n").filter((l) => l === READS_LINE).length;
    if (at !== 1) throw new Error(`the gate's source must hold the line ${JSON.stringify(READS_LINE)} once (it holds it ${at} times)`);
    const json = JSON.stringify(reads).replace(/'/g, "\\u0027");
    return gateText.replace(READS_LINE, () => `READS = r'''${json}'''`);
}

/** The forced command: what sshd runs for the key whatever the client asks. */
export function gateCommand(opts: ReadKeyOptions): string {
    return [gatePathOf(opts), ...gateArgs(opts.scope)].join(" ");
}

/** `command="<gate> --vmid 129",restrict[,from="..."] ssh-ed25519 AAAA... sglang-serve-read`. */
export function authorizedKeysLine(opts: ReadKeyOptions): string {
    const key = parsePublicKey(opts.publicKey);
    const comment = opts.comment ?? "sglang-serve-read";
    if (!COMMENT.test(comment)) throw new ReadGateOptionError(`--comment ${JSON.stringify(comment)} must be 1-100 characters of letters, digits and _.@:+-`);
    const options = [`command="${gateCommand(opts)}"`, "restrict"];
    if (opts.from !== undefined) {
        if (!FROM_PATTERNS.test(opts.from)) {
            throw new ReadGateOptionError(
                `--from ${JSON.stringify(opts.from)} must be sshd from= patterns: addresses, CIDRs or host names, comma-separated (no spaces or quotes)`,
            );
        }
        options.push(`from="${opts.from}"`);
    }
    return `${options.join(",")} ${key.type} ${key.blob} ${comment}`;
}

/** The authorized_keys path as a shell word on the box: `~/x` is "$HOME"/x there. */
function keysWord(authorizedKeys: string | undefined): string {
    const p = authorizedKeys ?? DEFAULT_AUTHORIZED_KEYS;
    const rest = p.startsWith("~/") ? p.slice(2) : undefined;
    const checked = rest !== undefined ? `/${rest}` : p;
    if (!SAFE_PATH.test(checked) || checked.split("/").includes("..")) {
        throw new ReadGateOptionError(`--authorized-keys ${JSON.stringify(p)} must be an absolute path or ~/..., of letters, digits and ._/+-`);
    }
    return rest !== undefined ? `"$HOME"/${shQuote(rest)}` : shQuote(p);
}

/** Every line of `$keys` naming the key blob `$blob` removed (its options may hold spaces: the blob is compared as a field). */
const WITHOUT_KEY = `awk -v b="$blob" '{ for (i = 1; i <= NF; i++) if ($i == b) next; print }'`;

const KEYS_PRELUDE = [
    'fail() { echo "sglang-serve read gate on $(hostname): $*" >&2; exit 1; }',
    // Proxmox: /root/.ssh/authorized_keys is a link to the cluster's /etc/pve/priv/authorized_keys; write the file, keep the link.
    'target=$keys; if [ -L "$keys" ]; then target=$(readlink -f "$keys"); fi',
];

/**
 * The POSIX sh script that, run on the box as the user the stack logs in as,
 * writes the gate (mode 0755, checked by its sha256), checks that it runs and
 * refuses `systemctl stop`, and then puts the key's gated line into
 * authorized_keys in place of any line with the same key (idempotent; other
 * lines stay as they are; the file stays 0600).
 */
export function renderInstallScript(opts: InstallOptions): string {
    const line = authorizedKeysLine(opts);
    const key = parsePublicKey(opts.publicKey);
    const gate = gatePathOf(opts);
    const args = gateArgs(opts.scope).join(" ");
    const keys = keysWord(opts.authorizedKeys);
    const gateText = renderGate(opts.gateText);
    if (!gateText.endsWith("\n") || gateText.split("\n").includes(HEREDOC_END)) {
        throw new Error(`the gate text must end with a newline and not hold a line ${HEREDOC_END}`);
    }
    const sha = sha256(gateText);
    return [
        "#!/bin/sh",
        "# sglang-serve: installs the read-only gate and the read-only key on this box.",
        "# Generated by `npm run read-gate -- install-script`; run as the user the stack logs in as:",
        "#   npm run -s read-gate -- install-script ... | ssh root@<box> sh",
        "set -eu",
        `gate=${shQuote(gate)}`,
        `keys=${keys}`,
        `line=${shQuote(line)}`,
        `blob=${shQuote(key.blob)}`,
        ...KEYS_PRELUDE,
        '[ -x /usr/bin/python3 ] || fail "the gate needs /usr/bin/python3: install it (apt-get install python3) and run this again"',
        'dir=$(dirname "$gate")',
        'mkdir -p "$dir"',
        'tmp="$gate.tmp.$$"; ktmp="$target.sglang-serve.$$"',
        'trap \'rm -f "$tmp" "$ktmp"\' EXIT',
        "umask 022",
        `cat > "$tmp" <<'${HEREDOC_END}'`,
        `${gateText}${HEREDOC_END}`,
        `[ "$(sha256sum < "$tmp" | cut -d' ' -f1)" = ${sha} ] || fail "the gate arrived changed (its sha256 is not ${sha}); nothing installed"`,
        'chmod 0755 "$tmp"',
        // Checked before it replaces a working gate: it runs, and refuses what the key must not do.
        '"$tmp" --version >/dev/null || fail "the new gate does not run (see above); nothing installed"',
        `if SSH_ORIGINAL_COMMAND='systemctl stop sglang-qwen.service' "$tmp" ${args} --check >/dev/null 2>&1; then fail "the new gate allowed systemctl stop; nothing installed"; fi`,
        'mv -f "$tmp" "$gate"',
        'if [ -n "$(find "$dir" -maxdepth 0 -perm /022)" ]; then echo "warning: $dir is writable by others than its owner: whoever can write there can change the gate" >&2; fi',
        'mkdir -p -m 700 "$(dirname "$target")"',
        "umask 077",
        `if [ -e "$target" ]; then ${WITHOUT_KEY} "$target" > "$ktmp"; else : > "$ktmp"; fi`,
        `printf '%s\\n' "$line" >> "$ktmp"`,
        'mv -f "$ktmp" "$target"',
        `echo "sglang-serve: $("$gate" --version) installed at $gate; key ${key.fingerprint} in $target may run only the read commands ($gate ${args})"`,
        "",
    ].join("\n");
}

/** The script that takes every line of a key out of authorized_keys (a rotated or retired read-only key). */
export function renderRemoveKeyScript(opts: { publicKey: string; authorizedKeys?: string }): string {
    const key = parsePublicKey(opts.publicKey);
    return [
        "#!/bin/sh",
        "# sglang-serve: removes a read-only key from authorized_keys (generated by `npm run read-gate -- remove-script`).",
        "set -eu",
        `keys=${keysWord(opts.authorizedKeys)}`,
        `blob=${shQuote(key.blob)}`,
        ...KEYS_PRELUDE,
        '[ -e "$target" ] || { echo "sglang-serve: no $target, nothing to remove"; exit 0; }',
        'ktmp="$target.sglang-serve.$$"',
        "trap 'rm -f \"$ktmp\"' EXIT",
        "umask 077",
        `${WITHOUT_KEY} "$target" > "$ktmp"`,
        'mv -f "$ktmp" "$target"',
        `echo "sglang-serve: key ${key.fingerprint} removed from $target"`,
        "",
    ].join("\n");
}
