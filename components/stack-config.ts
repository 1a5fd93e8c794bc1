import * as pulumi from "@pulumi/pulumi";
import { formatConfigIssues, StackConfig, validateStackConfig } from "../core/config";

/** The raw sections of a stack's config, as Pulumi holds them (secrets left out). */
export function readRawStackConfig(config: pulumi.Config): Record<string, unknown> {
    return {
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
