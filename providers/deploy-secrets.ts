/**
 * The deploy run's secret values (core/secrets/deploy-secrets.ts), from this
 * process's environment (the engine starts the provider plugin with the
 * CLI's): read when a provider writes the box or authenticates, never an
 * input, never in the state.
 */
import { DeclaredSecrets, deployApiKeyFrom, DeploySecrets, deploySecretsFrom, deploySecretsMessage, givesDeploySecrets } from "../core/secrets/deploy-secrets";

/** The declared values; throws naming every problem (a value missing, malformed, or not declared). */
export function deploySecrets(declared: DeclaredSecrets): DeploySecrets {
    const result = deploySecretsFrom(process.env, declared);
    if (!result.ok) throw new Error(deploySecretsMessage(result.problems));
    return result.secrets;
}

/** The values when the run gives any (a deploy), undefined when it gives none (a preview or drift check without them). */
export function deploySecretsIfGiven(declared: DeclaredSecrets): DeploySecrets | undefined {
    return givesDeploySecrets(process.env) ? deploySecrets(declared) : undefined;
}

/** The deploy run's API key (service.requireApiKey), for the readiness check's requests. */
export function deployApiKey(): string {
    const key = deployApiKeyFrom(process.env);
    if (!key.ok) throw new Error(key.problem);
    return key.apiKey;
}
