import assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { ConfigIssue, formatConfigIssues } from "../../core/config/issues";
import { fieldConfig } from "./fixtures";

// readiness.minHealthySeconds and readiness.startAttempts (issue 13): defaults,
// and messages that name the key, the value and the fix.

function withReadiness(readiness: Record<string, unknown>): unknown {
    return { ...fieldConfig(), readiness };
}

function issueAt(raw: unknown, path: string): ConfigIssue {
    const result = validateStackConfig(raw);
    assert.equal(result.ok, false, "expected the config to be rejected");
    const found = result.ok ? undefined : result.issues.find((i) => i.path === path);
    assert.ok(found, `no issue at ${path}: ${result.ok ? "" : formatConfigIssues(result.issues)}`);
    return found;
}

function readinessOf(raw: unknown) {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    return result.config.readiness;
}

describe("stack config: the healthy window and start attempts", () => {
    it("defaults to a 30 s healthy window and two start attempts", () => {
        const readiness = readinessOf(fieldConfig());
        assert.equal(readiness.minHealthySeconds, 30);
        assert.equal(readiness.startAttempts, 2);
    });

    it("takes 0 (no window), one attempt, and numbers set with pulumi config set --path (strings)", () => {
        const readiness = readinessOf(withReadiness({ minHealthySeconds: "0", startAttempts: "1" }));
        assert.equal(readiness.minHealthySeconds, 0);
        assert.equal(readiness.startAttempts, 1);
    });

    it("rejects a negative or fractional window, naming the key, the value and the fix", () => {
        const negative = issueAt(withReadiness({ minHealthySeconds: -5 }), "readiness.minHealthySeconds");
        assert.equal(negative.value, -5);
        assert.match(negative.message, /must be 0 \(no healthy window\) or more seconds/);
        const fraction = issueAt(withReadiness({ minHealthySeconds: 2.5 }), "readiness.minHealthySeconds");
        assert.match(fraction.message, /whole number of seconds/);
        assert.match(formatConfigIssues([fraction]), /sglang-serve:readiness\.minHealthySeconds = 2\.5/);
    });

    it("rejects a window that one poll would cover", () => {
        const issue = issueAt(withReadiness({ minHealthySeconds: 3, pollIntervalSeconds: 2 }), "readiness.minHealthySeconds");
        assert.match(issue.message, /shorter than two polls \(pollIntervalSeconds 2\).*Use at least 4 s .* or 0 to turn the window off/);
        readinessOf(withReadiness({ minHealthySeconds: 4, pollIntervalSeconds: 2 }));
    });

    it("rejects zero start attempts and more than ten", () => {
        assert.match(issueAt(withReadiness({ startAttempts: 0 }), "readiness.startAttempts").message, /at least 1 \(1 starts once and never retries\)/);
        assert.match(
            issueAt(withReadiness({ startAttempts: 11 }), "readiness.startAttempts").message,
            /at most 10: each attempt may take the whole startupTimeoutSeconds/,
        );
    });
});
