/**
 * Facts about SGLang that hold across the releases the stack knows: versions,
 * the names SGLang reads, endpoints' timeouts. The owned settings (their
 * flags per release) are in core/sglang/settings.ts, what else differs per
 * release in core/sglang/releases.ts, and what ServerArgs does with a
 * command line in core/sglang/server-args.ts.
 */

/** A release as `major.minor.patch`; SGLang's own tags carry no suffix we rely on. */
export type Version = readonly [number, number, number];

export function parseVersion(text: string): Version | undefined {
    const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Negative when a < b, 0 when equal, positive when a > b. Throws on a malformed version. */
export function compareVersions(a: string, b: string): number {
    const va = mustParseVersion(a);
    const vb = mustParseVersion(b);
    for (let i = 0; i < 3; i++) {
        if (va[i] !== vb[i]) return va[i] - vb[i];
    }
    return 0;
}

export function versionAtLeast(version: string, minimum: string): boolean {
    return compareVersions(version, minimum) >= 0;
}

function mustParseVersion(text: string): Version {
    const v = parseVersion(text);
    if (!v) throw new Error(`not a major.minor.patch version: ${JSON.stringify(text)}`);
    return v;
}

/** `sglang serve` is the recommended entrypoint from here on; `launch_server` prints a deprecation warning. */
export const SERVE_LAUNCHER_SINCE = "0.5.10";

/**
 * The mamba radix-cache strategies the stack key `service.mambaSchedulerStrategy`
 * takes; `extra_buffer_lazy` is a choice from EXTRA_BUFFER_LAZY_SINCE.
 */
export const MAMBA_SCHEDULER_STRATEGIES = ["auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"] as const;
/** The first release whose strategy choices include `extra_buffer_lazy` (0.5.13's MAMBA_SCHEDULER_STRATEGY_CHOICES; not 0.5.12's). */
export const EXTRA_BUFFER_LAZY_SINCE = "0.5.13";

/** The environment switch for the V2 speculative worker (overlap scheduler); see core/sglang/releases.ts. */
export const SPEC_V2_ENV = "SGLANG_ENABLE_SPEC_V2";
/**
 * The first release without SPEC_V2_ENV: 0.5.14's srt/environ.py no longer
 * defines it (spec v2 is the only path; synchronous scheduling is
 * `--disable-overlap-schedule`), and nothing reads it, so the stack does not
 * write it into the unit of such a release.
 */
export const SPEC_V2_ENV_REMOVED_IN = "0.5.14";

/** Whether a release reads SPEC_V2_ENV at all. */
export function readsSpecV2Env(version: string): boolean {
    return !versionAtLeast(version, SPEC_V2_ENV_REMOVED_IN);
}

/**
 * How SGLang's `EnvBool` reads a variable (srt/environ.py): case-insensitive
 * true/1/yes/y and false/0/no/n; anything else warns and falls back to the
 * default (off). `undefined` means "not a boolean SGLang accepts".
 */
export function parseSglangBool(value: string): boolean | undefined {
    const v = value.toLowerCase();
    if (["true", "1", "yes", "y"].includes(v)) return true;
    if (["false", "0", "no", "n"].includes(v)) return false;
    return undefined;
}

/** Lets a `--context-length` above the model's derived one start with a warning instead of a ValueError (srt/environ.py, 0.5.9 to 0.5.23). */
export const ALLOW_LONGER_CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN";

/** SGLang's startup error for the radix-cache rule, verbatim (note the missing space after "no_buffer."). */
export function radixSpeculativeError(architecture: string): string {
    return (
        `ValueError: Speculative decoding for ${architecture} is not compatible with radix cache when using ` +
        `--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use ` +
        `--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`
    );
}

/** `SGLANG_HEALTH_CHECK_TIMEOUT` default: /health answers 503 after this long. */
export const HEALTH_CHECK_TIMEOUT_SECONDS = 20;
/** A probe must outlast SGLang's own health-check timeout, plus a margin for the network and the 1-token generation. */
export const MIN_PROBE_TIMEOUT_SECONDS = HEALTH_CHECK_TIMEOUT_SECONDS + 5;

export const DEFAULT_PORT = 30000;
/** SGLang binds here when `--host` is not given. */
export const DEFAULT_LISTEN_HOST = "127.0.0.1";
/**
 * The variable the 0600 EnvironmentFile defines with the API key: the on-box
 * reads find the key there (core/sglang/server-info-read.ts); SGLang itself reads it
 * from the 0600 config file given as `--config` (core/sglang/args.ts).
 */
export const API_KEY_ENV = "SGLANG_API_KEY";
