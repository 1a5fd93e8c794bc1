/**
 * What each SGLang release does with the settings the stack owns, as facts
 * read from the release's own source (python/sglang/srt/server_args.py,
 * srt/environ.py at the tag) and checked against the release itself by the
 * differential test (tests/lab/releases/differential.ts runs the real
 * wheels' ServerArgs). Line numbers are 0.5.11's server_args.py.
 */
import { compareVersions, parseVersion } from "./rules";

export interface SglangRelease {
    version: string;
    /** `--speculative-algorithm` choices, case-sensitive (5367). */
    speculativeAlgorithms: readonly string[];
    /** `SGLANG_ENABLE_SPEC_V2`'s default (environ.py: EnvBool(True) in 0.5.11, False before). */
    specV2Default: boolean;
    /**
     * Speculation on a hybrid model with the radix cache under no_buffer:
     * 0.5.9 disables the radix cache and logs it; from 0.5.10 a ValueError
     * (2441-2456).
     */
    radixWithNoBuffer: "disable-radix" | "error";
    /** extra_buffer together with --disable-radix-cache: a ValueError from 0.5.10 (2395-2401); 0.5.9 does not check. */
    extraBufferRejectsDisabledRadix: boolean;
    /**
     * EAGLE-family topk > 1 with spec v2 on: 0.5.9 (2368-2382) and 0.5.10
     * raise "Spec v2 currently only supports topk = 1"; 0.5.11 falls back to
     * spec v1 with a warning (3459-3466).
     */
    topkAboveOneWithSpecV2: "error" | "spec-v1";
}

const BASE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"] as const;

export const SGLANG_RELEASES: readonly SglangRelease[] = [
    {
        version: "0.5.9",
        speculativeAlgorithms: BASE_ALGORITHMS,
        specV2Default: false,
        radixWithNoBuffer: "disable-radix",
        extraBufferRejectsDisabledRadix: false,
        topkAboveOneWithSpecV2: "error",
    },
    {
        version: "0.5.10",
        speculativeAlgorithms: BASE_ALGORITHMS,
        specV2Default: false,
        radixWithNoBuffer: "error",
        extraBufferRejectsDisabledRadix: true,
        topkAboveOneWithSpecV2: "error",
    },
    {
        version: "0.5.11",
        speculativeAlgorithms: ["DFLASH", ...BASE_ALGORITHMS],
        specV2Default: true,
        radixWithNoBuffer: "error",
        extraBufferRejectsDisabledRadix: true,
        topkAboveOneWithSpecV2: "spec-v1",
    },
];

/**
 * The facts for a release: its own, or for a release not in the table, those
 * of the newest listed release before it (or the oldest), with `verified`
 * false so that the config can warn.
 */
export function sglangRelease(version: string): SglangRelease & { verified: boolean } {
    const exact = SGLANG_RELEASES.find((r) => r.version === version);
    if (exact) return { ...exact, verified: true };
    if (!parseVersion(version)) return { ...SGLANG_RELEASES[SGLANG_RELEASES.length - 1]!, version, verified: false };
    const before = SGLANG_RELEASES.filter((r) => compareVersions(r.version, version) < 0);
    return { ...(before[before.length - 1] ?? SGLANG_RELEASES[0]!), version, verified: false };
}
