/**
 * The deploy run's secrets: the server's API key and its secret environment.
 *
 * They come from the environment of the engine run that deploys (the
 * `<stack>` GitHub environment's secrets, or the operator's shell), read by
 * the providers when they write the box, and never from Pulumi config: a
 * Pulumi secret lands in the state (the dynamic providers' default provider
 * records the whole stack config as its inputs), encrypted with a passphrase
 * every job that loads the state must hold, pull-request previews included
 * (issue 19). The stack config declares only that they exist
 * (service.requireApiKey, service.secretEnvironment): a preview renders the
 * same unit without their values, and proves their presence on the box by the
 * 0600 files' hash, never by a value.
 */
import { apiKeyProblem, ENV_NAME } from "../config/values";
import { API_KEY_ENV } from "../sglang/rules";
import { renderEnvironmentFile, renderServerConfigFile } from "../unit/systemd-unit";

/** The API key's value in a deploy run. */
export const API_KEY_VARIABLE = "SGLANG_SERVE_API_KEY";
/** The secret environment's values in a deploy run: `NAME=value` lines (a dotenv file's text). */
export const SECRET_ENVIRONMENT_VARIABLE = "SGLANG_SERVE_SECRET_ENVIRONMENT";
/** The gateway's admin key in a deploy run (sglang-serve:gateway): only it may change the gateway's worker list. */
export const GATEWAY_ADMIN_KEY_VARIABLE = "SGLANG_SERVE_GATEWAY_ADMIN_KEY";

/** What the stack config says exists (plain: names only, no values). */
export interface DeclaredSecrets {
    /** service.requireApiKey. */
    apiKey: boolean;
    /** service.secretEnvironment: the variable names. */
    environment: readonly string[];
}

/** The values, as the providers write them to the box. */
export interface DeploySecrets {
    apiKey?: string;
    environment: Record<string, string>;
}

export type DeploySecretsResult = { ok: true; secrets: DeploySecrets } | { ok: false; problems: string[] };

/** Whether the declared server has any secret at all (then it has the 0600 EnvironmentFile). */
export function declaresSecrets(declared: DeclaredSecrets | undefined): boolean {
    return declared !== undefined && (declared.apiKey || declared.environment.length > 0);
}

/** `NAME=value` lines; blank lines and `#` comments skipped. Values are never quoted in messages. */
function parseSecretLines(text: string, problems: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    text.split("\n").forEach((raw, i) => {
        const line = raw.replace(/\r$/, "").trim();
        if (line === "" || line.startsWith("#")) return;
        const eq = line.indexOf("=");
        const name = eq > 0 ? line.slice(0, eq).trim() : "";
        if (!ENV_NAME.test(name)) {
            problems.push(`${SECRET_ENVIRONMENT_VARIABLE} line ${i + 1} is not NAME=value with a name of letters, digits and _: fix that line`);
            return;
        }
        out[name] = line.slice(eq + 1).trim();
    });
    return out;
}

/** Characters a secret value may hold: it is written unquoted into the EnvironmentFile. */
const SECRET_VALUE = /^[A-Za-z0-9._~+/=:@,%-]+$/;

/**
 * The declared secrets' values from a deploy run's environment, or every
 * problem (a missing value, a bad line, a value the files cannot hold, a
 * value given for a name the config does not declare). Never quotes a value.
 */
export function deploySecretsFrom(env: Readonly<Record<string, string | undefined>>, declared: DeclaredSecrets): DeploySecretsResult {
    const problems: string[] = [];
    const secrets: DeploySecrets = { environment: {} };
    if (declared.apiKey) {
        const key = deployApiKeyFrom(env);
        if (key.ok) secrets.apiKey = key.apiKey;
        else problems.push(key.problem);
    }
    const given = env[SECRET_ENVIRONMENT_VARIABLE] === undefined ? {} : parseSecretLines(env[SECRET_ENVIRONMENT_VARIABLE]!, problems);
    for (const name of declared.environment) {
        const value = given[name];
        if (value === undefined) {
            problems.push(
                `service.secretEnvironment declares ${name} but ${SECRET_ENVIRONMENT_VARIABLE} has no ${name}=... line: add it to the deploy's secrets`,
            );
        } else if (!SECRET_VALUE.test(value)) {
            problems.push(`the value of ${name} in ${SECRET_ENVIRONMENT_VARIABLE} is empty or has characters outside [A-Za-z0-9._~+/=:@,%-]`);
        } else {
            secrets.environment[name] = value;
        }
    }
    for (const name of Object.keys(given)) {
        if (!declared.environment.includes(name)) {
            problems.push(`${SECRET_ENVIRONMENT_VARIABLE} gives ${name}, which service.secretEnvironment does not declare: declare it or remove the line`);
        }
    }
    return problems.length > 0 ? { ok: false, problems } : { ok: true, secrets };
}

/** The API key alone (the readiness check authenticates with it). */
export function deployApiKeyFrom(env: Readonly<Record<string, string | undefined>>): { ok: true; apiKey: string } | { ok: false; problem: string } {
    const key = env[API_KEY_VARIABLE];
    if (key === undefined) {
        return {
            ok: false,
            problem: `${API_KEY_VARIABLE} is not set: service.requireApiKey is true, so the deploy needs the key's value in ${API_KEY_VARIABLE}`,
        };
    }
    const problem = apiKeyProblem(key);
    return problem ? { ok: false, problem: `${API_KEY_VARIABLE} ${problem}` } : { ok: true, apiKey: key };
}

/** The gateway's admin key from a deploy run's environment (core/gateway/gateway.ts GATEWAY_ADMIN_KEY_VARIABLE), held to the API key's rules. */
export function gatewayAdminKeyFrom(env: Readonly<Record<string, string | undefined>>): { ok: true; adminKey: string } | { ok: false; problem: string } {
    const key = env[GATEWAY_ADMIN_KEY_VARIABLE];
    if (key === undefined) {
        return {
            ok: false,
            problem: `${GATEWAY_ADMIN_KEY_VARIABLE} is not set: the stack declares a gateway, whose worker list only the admin key may change; give the deploy a key (\`openssl rand -hex 32\`) in ${GATEWAY_ADMIN_KEY_VARIABLE}`,
        };
    }
    const problem = apiKeyProblem(key);
    return problem ? { ok: false, problem: `${GATEWAY_ADMIN_KEY_VARIABLE} ${problem}` } : { ok: true, adminKey: key };
}

/**
 * The keys a run gives, judged as the deploy judges them (length, characters),
 * for the preview: it has the values a deploy would have, and should fail as
 * the deploy would (issue 34, finding 9). `uses` says which keys the stack's
 * deploy reads: the API key when a server requires it, the admin key with a
 * gateway. A key not set is no problem here (a pull request's preview gives
 * none). The messages are the deploy's own, and never quote a value.
 */
export function givenKeyProblems(env: Readonly<Record<string, string | undefined>>, uses: { apiKey: boolean; gatewayAdminKey: boolean }): string[] {
    const problems: string[] = [];
    if (uses.apiKey && env[API_KEY_VARIABLE] !== undefined) {
        const key = deployApiKeyFrom(env);
        if (!key.ok) problems.push(key.problem);
    }
    if (uses.gatewayAdminKey && env[GATEWAY_ADMIN_KEY_VARIABLE] !== undefined) {
        const key = gatewayAdminKeyFrom(env);
        if (!key.ok) problems.push(key.problem);
    }
    return problems;
}

/** The error a run's secrets fail with, at the deploy (providers/deploy-secrets.ts) and at the preview (components/stack-config.ts) alike. */
export function deploySecretsMessage(problems: readonly string[]): string {
    return `the deploy's secrets: ${problems.join("; ")}`;
}

/** Whether the run gives any secret value at all: a run with none (a pull request's preview, a drift check) compares presence only. */
export function givesDeploySecrets(env: Readonly<Record<string, string | undefined>>): boolean {
    return env[API_KEY_VARIABLE] !== undefined || env[SECRET_ENVIRONMENT_VARIABLE] !== undefined;
}

/**
 * The 0600 files on the box: the EnvironmentFile (the secret environment, and
 * the API key as SGLANG_API_KEY for the on-box reads) and, with a key,
 * SGLang's config file (`--config`), where the server reads it.
 */
export function renderSecretFiles(secrets: DeploySecrets): { environmentFile?: string; serverConfigFile?: string } {
    const variables = { ...secrets.environment, ...(secrets.apiKey ? { [API_KEY_ENV]: secrets.apiKey } : {}) };
    return {
        environmentFile: Object.keys(variables).length > 0 ? renderEnvironmentFile(variables) : undefined,
        serverConfigFile: secrets.apiKey ? renderServerConfigFile(secrets.apiKey) : undefined,
    };
}

/** Every secret value, for masking messages. */
export function secretValues(secrets: DeploySecrets | undefined): string[] {
    if (!secrets) return [];
    return [...(secrets.apiKey ? [secrets.apiKey] : []), ...Object.values(secrets.environment)];
}
