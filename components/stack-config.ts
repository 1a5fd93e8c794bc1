import * as pulumi from "./pulumi";
import { formatConfigIssues, StackConfig, validateStackConfig } from "../core/config";

/** Stands in for a secret's value in validation, which only checks that it is set. */
const SECRET_PRESENT = "(secret)";

/** The raw sections of a stack's config, as Pulumi holds them (secrets left out). */
export function readRawStackConfig(config: pulumi.Config): Record<string, unknown> {
    // Secrets are validated for presence only here: their values stay inside Outputs.
    const hasSshKey = pulumi.getConfig(`${config.name}:sshPrivateKey`) !== undefined;
    return {
        sshPrivateKey: hasSshKey ? SECRET_PRESENT : undefined,
        host: config.getObject("host"),
        container: config.getObject("container"),
        service: config.getObject("service"),
        readiness: config.getObject("readiness"),
    };
}

/**
 * Validates the whole stack config once, before any resource is declared, so
 * that `pulumi preview` fails with one message listing every bad key.
 */
export function loadStackConfig(config = new pulumi.Config()): StackConfig {
    const result = validateStackConfig(readRawStackConfig(config));
    if (!result.ok) {
        throw new pulumi.RunError(formatConfigIssues(result.issues));
    }
    for (const warning of result.warnings ?? []) {
        pulumi.log.warn(warning);
    }
    return result.config;
}
