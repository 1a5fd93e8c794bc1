/**
 * The key of a served config (issue 37): what determines how a server serves,
 * digested, so the serving-quality gate can tell a return to a config that
 * served before from a new one (core/serving/serving-history.ts). Its inputs:
 * - the SGLang release (service.sglangVersion),
 * - the drafter: its folder's digest (core/box/box-facts.ts folderDigest, what the
 *   rollout records as drafterDigest), absent without a separate drafter,
 * - the launch: the rendered command line (program and subcommand, then each
 *   flag as argparse keeps it, core/sglang/flag-map.ts, in name order: argparse does
 *   not care about their order) and the server's environment (what the unit
 *   sets: SGLANG_* switches, CUDA_VISIBLE_DEVICES from service.gpus). The
 *   secrets (the API key, secretEnvironment) are not in it: they change who
 *   may ask, not how it serves.
 * The readiness settings are not in it either: they judge a config, they are
 * not part of it.
 */
import { sha256 } from "../digest";

export interface ServedConfig {
    /** service.sglangVersion; null for a state written before the stack recorded it. */
    sglangVersion: string | null;
    /** The drafter folder's digest; null without a separate drafter (or when it could not be read). */
    drafter: string | null;
    /** The rendered command before its flags (core/sglang/flag-map.ts). */
    command: readonly string[];
    /** Each flag as argparse keeps it (core/sglang/flag-map.ts). */
    flags: Readonly<Record<string, string>>;
    /** The server's environment as the unit sets it. */
    environment: Readonly<Record<string, string>>;
}

/** Hex digits of a key: 64 bits, plenty for the few configs a history keeps, and short enough to read in the state. */
const KEY_LENGTH = 16;

const sortedEntries = (m: Readonly<Record<string, string>>): [string, string][] => Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** The digest of the launch alone: the command, its flags and its environment, each map in name order. */
export function launchDigest(config: Pick<ServedConfig, "command" | "flags" | "environment">): string {
    return sha256(JSON.stringify({ command: config.command, flags: sortedEntries(config.flags), environment: sortedEntries(config.environment) }));
}

/** The config's key: the release, the drafter and the launch's digest, digested. */
export function servedConfigKey(config: ServedConfig): string {
    return sha256(JSON.stringify({ sglangVersion: config.sglangVersion, drafter: config.drafter, launch: launchDigest(config) })).slice(0, KEY_LENGTH);
}
