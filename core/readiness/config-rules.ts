/** The config rules about the readiness section: budgets and windows that hold together. */
import { ReadinessConfig } from "../config/schema";
import { Findings } from "../config/findings";

export function readinessRule(readiness: ReadinessConfig, f: Findings): void {
    if (readiness.startupTimeoutSeconds < readiness.probeTimeoutSeconds) {
        f.issue(
            "readiness.startupTimeoutSeconds",
            readiness.startupTimeoutSeconds,
            `readiness.startupTimeoutSeconds (${readiness.startupTimeoutSeconds}) is shorter than one probe (probeTimeoutSeconds ${readiness.probeTimeoutSeconds}): allow about 900 s for loading and CUDA-graph capture.`,
        );
    }
    const { minHealthySeconds: window, pollIntervalSeconds: poll } = readiness;
    if (window > 0 && window < 2 * poll) {
        f.issue(
            "readiness.minHealthySeconds",
            window,
            `readiness.minHealthySeconds (${window}) is shorter than two polls (pollIntervalSeconds ${poll}): the healthy window would see one poll at most. ` +
                `Use at least ${2 * poll} s (the default 30 covers SGLang's 20 s health-check timeout), or 0 to turn the window off.`,
            ["readiness.pollIntervalSeconds"],
        );
    }
}
