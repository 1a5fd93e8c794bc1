// A container's config file on the Proxmox host, read and rewritten under
// Proxmox's own config lock: pve-container's PVE::LXC::Config->lock_config
// takes an exclusive flock on /run/lock/lxc/pve-config-<vmid>.lock (10 s
// timeout) around every read-modify-write of /etc/pve/lxc/<vmid>.conf, so
// `pct set`, the API and vzdump never interleave with this edit.
//
// The edit itself is pure (core/box/pct-config.ts). The file travels as base64
// both ways and is edited as latin1 text, so its bytes come back unchanged.
// The lock is held by one remote command, which writes only if the file
// still has the digest the edit was computed from (like Proxmox's `digest`
// parameter); otherwise the file is read and edited again.

import { sha256 } from "../core/digest";
import type { RemoteRunner } from "./remote-host";

export interface PctConfigPaths {
    /** `/etc/pve/lxc/<vmid>.conf` */
    config: string;
    /** `/run/lock/lxc/pve-config-<vmid>.lock` (PVE::LXC::Config->config_file_lock) */
    lock: string;
}

/** The paths pve-container uses; `root` prefixes both (tests run against a directory). */
export function pctConfigPaths(vmid: number, root = ""): PctConfigPaths {
    if (!Number.isInteger(vmid) || vmid <= 0) throw new Error(`invalid vmid ${String(vmid)}`);
    return { config: `${root}/etc/pve/lxc/${vmid}.conf`, lock: `${root}/run/lock/lxc/pve-config-${vmid}.lock` };
}

/** pve-container's lock_config waits this long for the lock. */
export const CONFIG_LOCK_TIMEOUT_SECONDS = 10;

const EXIT_LOCK_TIMEOUT = 75;
const EXIT_CHANGED = 76;
const EXIT_MISSING = 77;

// $1 config, $2 lock file, $3 expected sha256, $4 lock timeout. The new text
// arrives base64 on stdin. umask 027: a new file is 0640 like Proxmox's; no
// chmod (pmxcfs, /etc/pve, sets modes itself).
const WRITE_SCRIPT = [
    `set -u`,
    `conf="$1"; lock="$2"; want="$3"`,
    `[ -f "$conf" ] || { echo "sglang-serve: $conf does not exist" >&2; exit ${EXIT_MISSING}; }`,
    `mkdir -p "$(dirname "$lock")" || exit 1`,
    `exec 9>>"$lock" || exit 1`,
    `flock -w "$4" 9 || { echo "sglang-serve: timeout waiting for $lock" >&2; exit ${EXIT_LOCK_TIMEOUT}; }`,
    `have=$(sha256sum < "$conf" | cut -d' ' -f1)`,
    `[ "$have" = "$want" ] || { echo "sglang-serve: $conf changed since it was read" >&2; exit ${EXIT_CHANGED}; }`,
    `umask 027; t="$conf.tmp.$$"`,
    `if base64 -d > "$t" && mv -f "$t" "$conf"; then exit 0; else rc=$?; rm -f "$t"; exit $rc; fi`,
].join("\n");

const READ_SCRIPT = `[ -f "$1" ] || { echo "sglang-serve: $1 does not exist" >&2; exit ${EXIT_MISSING}; }; base64 -w0 < "$1"`;

export class PctConfigFileError extends Error {}

/** The file's text (latin1: one character per byte). */
export async function readPctConfigFile(remote: RemoteRunner, paths: PctConfigPaths): Promise<string> {
    const r = await remote.run(["sh", "-c", READ_SCRIPT, "sh", paths.config]);
    if (r.code === EXIT_MISSING) throw new PctConfigFileError(`${paths.config} does not exist on ${remote.describe()}`);
    if (r.code !== 0) throw new PctConfigFileError(`cannot read ${paths.config} on ${remote.describe()} (exit ${r.code}): ${r.stderr.trim()}`);
    return Buffer.from(r.stdout.trim(), "base64").toString("latin1");
}

export interface PctConfigEditResult {
    changed: boolean;
    before: string;
    after: string;
}

/**
 * Reads the file, computes `edit(text)`, and writes the result under
 * Proxmox's config lock if the file is still the one read (else reads and
 * edits again, `attempts` times). `edit` may throw to refuse (a locked
 * config): nothing is written then. Nothing is written when the text stays
 * the same.
 */
export async function editPctConfigFile(
    remote: RemoteRunner,
    paths: PctConfigPaths,
    edit: (text: string) => string,
    opts: { lockTimeoutSeconds?: number; attempts?: number } = {},
): Promise<PctConfigEditResult> {
    const attempts = opts.attempts ?? 3;
    const timeout = opts.lockTimeoutSeconds ?? CONFIG_LOCK_TIMEOUT_SECONDS;
    for (let attempt = 1; ; attempt++) {
        const before = await readPctConfigFile(remote, paths);
        const after = edit(before);
        if (after === before) return { changed: false, before, after };
        const digest = sha256(Buffer.from(before, "latin1"));
        const r = await remote.run(["sh", "-c", WRITE_SCRIPT, "sh", paths.config, paths.lock, digest, String(timeout)], {
            stdin: Buffer.from(after, "latin1").toString("base64"),
        });
        if (r.code === 0) return { changed: true, before, after };
        if (r.code === EXIT_CHANGED && attempt < attempts) continue;
        const where = remote.describe();
        if (r.code === EXIT_LOCK_TIMEOUT) {
            throw new PctConfigFileError(
                `cannot take Proxmox's config lock ${paths.lock} on ${where} within ${timeout} s: another task (pct, the API, a backup) ` +
                    `holds it; nothing was changed. Run up again when it has finished.`,
            );
        }
        if (r.code === EXIT_CHANGED) {
            throw new PctConfigFileError(
                `${paths.config} on ${where} kept changing while it was edited (${attempts} tries); nothing was changed. Run up again.`,
            );
        }
        throw new PctConfigFileError(`cannot write ${paths.config} on ${where} (exit ${r.code}): ${r.stderr.trim()}`);
    }
}
