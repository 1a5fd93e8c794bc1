import * as pulumi from "./pulumi";
import { validateStackConfig } from "../core/config/config";
import { formatConfigIssues } from "../core/config/issues";
import type { StackConfig } from "../core/config/schema";
import { rawStackConfig } from "../core/config/stack-config-source";
import { deploySecretsMessage, givenKeyProblems } from "../core/secrets/deploy-secrets";

/** The raw sections of a stack's config, as Pulumi holds them (core/config/stack-config-source.ts). */
export function readRawStackConfig(config: pulumi.Config): Record<string, unknown> {
    return rawStackConfig((name) => pulumi.getConfig(`${config.name}:${name}`));
}

/**
 * Validates the whole stack config once, before any resource is declared, so
 * that `pulumi preview` fails with one message listing every bad key.
 */
export function loadStackConfig(config = new pulumi.Config()): StackConfig {
    // The providers run where the program runs, with its environment: SSH_AUTH_SOCK there is the agent they use.
    // A source's revision that is not a full commit is refused by the SglangService's check, which can ask the Hub
    // what it names now (this load cannot wait for an answer): the refusal gives the commit to pin.
    const result = validateStackConfig(readRawStackConfig(config), { sshAgentAvailable: Boolean(process.env.SSH_AUTH_SOCK), revisionsAtCheck: true });
    if (!result.ok) {
        throw new pulumi.RunError(formatConfigIssues(result.issues, pulumi.getStack()));
    }
    // A key the run gives is judged now, as the deploy would judge it, and never passed on: only the providers read it to write the box.
    const keyProblems = givenKeyProblems(process.env, {
        apiKey: result.config.servers.some((s) => s.requireApiKey),
        gatewayAdminKey: result.config.gateway !== undefined,
    });
    if (keyProblems.length > 0) {
        throw new pulumi.RunError(deploySecretsMessage(keyProblems));
    }
    for (const warning of result.warnings ?? []) {
        pulumi.log.warn(warning);
    }
    for (const notice of result.notices ?? []) {
        pulumi.log.info(notice);
    }
    return result.config;
}
