import * as pulumi from "./pulumi";
import { formatConfigIssues, StackConfig, validateStackConfig } from "../core/config";

/** Stands in for a secret's value in validation, which only checks that it is set. */
const SECRET_PRESENT = "(secret)";

/** The raw sections of a stack's config, as Pulumi holds them (the SSH key left out). */
export function readRawStackConfig(config: pulumi.Config): Record<string, unknown> {
    // The SSH key is validated for presence only: its value stays with the providers.
    const hasSshKey = pulumi.getConfig(`${config.name}:sshPrivateKey`) !== undefined;
    return {
        sshPrivateKey: hasSshKey ? SECRET_PRESENT : undefined,
        // The API key's value is checked (length, alphabet; an empty key turns SGLang's auth off);
        // validation never prints it, and the program uses it only as a secret Output.
        apiKey: pulumi.getConfig(`${config.name}:apiKey`),
        generateApiKey: config.getObject("generateApiKey"),
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
    // The providers run where the program runs, with its environment: SSH_AUTH_SOCK there is the agent they use.
    const result = validateStackConfig(readRawStackConfig(config), { sshAgentAvailable: Boolean(process.env.SSH_AUTH_SOCK) });
    if (!result.ok) {
        throw new pulumi.RunError(formatConfigIssues(result.issues));
    }
    for (const warning of result.warnings ?? []) {
        pulumi.log.warn(warning);
    }
    return result.config;
}
