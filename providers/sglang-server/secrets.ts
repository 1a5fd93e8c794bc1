/**
 * The SglangService's secrets (the API key and the secret environment):
 * declared by the config (names only), their values filled in from the
 * deploy run when the provider writes the box (providers/deploy-secrets.ts),
 * compared with the box without a digest of them reaching the state, and
 * masked in messages. The values are never inputs and never in the state.
 */
import { sha256 } from "../../core/digest";
import { DeclaredSecrets, declaresSecrets, renderSecretFiles, secretValues } from "../../core/secrets/deploy-secrets";
import { parseEnvironmentFile } from "../../core/unit/systemd-unit";
import { deploySecrets, deploySecretsIfGiven } from "../deploy-secrets";
import type { ServiceProps } from "./props";

/** The digest of an EnvironmentFile the unit read compares the box's with: "" when there is none (core/unit/unit-read.ts). */
export function environmentFileHash(text: string | undefined): string {
    return text === undefined ? "" : sha256(text);
}

/** What the service records when the box's EnvironmentFile is the declared one (never its digest: a weak key could be guessed from it). */
export const SECRETS_AS_DECLARED = "declared";

/** The secrets the props declare; a state written before they were declared had a key when it had an EnvironmentFile. */
export function declaredSecrets(props: ServiceProps): DeclaredSecrets {
    return props.secrets ?? { apiKey: props.environmentFile !== undefined, environment: [] };
}

/** The props with the deploy run's secret values filled in, to write the box and authenticate (a deploy needs every declared value). */
export function withDeploySecrets(props: ServiceProps): ServiceProps {
    const values = deploySecrets(declaredSecrets(props));
    return { ...props, ...renderSecretFiles(values), apiKey: values.apiKey };
}

/** The props without secret values (a state written before this version held them: dropped). */
export function withoutSecretValues<T extends ServiceProps>(props: T): T {
    const { environmentFile: _f, serverConfigFile: _c, apiKey: _k, ...declared } = props;
    return declared as T;
}

/**
 * The EnvironmentFile the unit read asks the box about: the one the props
 * carry (a rollout), else the one the deploy run's values render (a deploy's
 * refresh), else none (a preview or drift check without the values: the box
 * answers only whether it has one).
 */
export function expectedEnvironmentHash(props: ServiceProps): string {
    if (props.environmentFile !== undefined) return environmentFileHash(props.environmentFile);
    const values = deploySecretsIfGiven(declaredSecrets(props));
    return values ? environmentFileHash(renderSecretFiles(values).environmentFile) : "";
}

/** The unit read's answer as the service records it: SECRETS_AS_DECLARED, "differs" or "" (none). */
export function recordedSecrets(answer: string, expected: string): string {
    return expected !== "" && answer === expected ? SECRETS_AS_DECLARED : answer;
}

/**
 * Whether the box's secrets differ from the declared ones. With the values
 * (a deploy, whose refresh asked the box about the declared file) by that
 * answer; without them (a preview or drift check in a job that holds no
 * secret) by presence: the 0600 file is there exactly when secrets are declared.
 */
export function secretsDiffer(recorded: string | undefined, news: ServiceProps): boolean {
    const declared = declaredSecrets(news);
    if (deploySecretsIfGiven(declared)) return recorded !== SECRETS_AS_DECLARED;
    return ((recorded ?? "") !== "") !== declaresSecrets(declared);
}

/** The secret values the props carry at deploy, for masking messages. */
export function secretValuesOf(props: ServiceProps): string[] {
    const lines = props.environmentFile === undefined ? {} : parseEnvironmentFile(props.environmentFile);
    return secretValues({ apiKey: props.apiKey, environment: lines });
}
