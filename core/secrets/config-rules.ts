/**
 * The config rules about credentials and who may reach a server: the SSH key
 * and pinned host key, secrets kept out of service.environment, the secret
 * environment's names, where the server listens and whether it must
 * authenticate.
 */
import { API_KEY_SET_HELP, ENV_NAME, isLoopback } from "../config/values";
import { pulumiKey } from "../config/namespace";
import type { ServiceConfig } from "../config/schema";
import { forbiddenCharacter } from "../sglang/extra-args";
import { GPU_SCOPE_ENV } from "../unit/systemd-unit";
import { credentialValueRule, secretNameRule } from "./secret-like";
import { isPlaceholderHostKey } from "./host-key";
import { API_KEY_ENV, DEFAULT_LISTEN_HOST } from "../sglang/rules";
import { Findings } from "../config/findings";
import { BoxInput } from "../config/rule-input";

export function sshKeyRule(box: BoxInput, sshAgentAvailable: boolean | undefined, f: Findings): void {
    const { host } = box;
    if (!host) return;
    // Without a key file the providers use ssh-agent (SSH_AUTH_SOCK): only a known absence of one is worth a word.
    if (host.sshPrivateKeyPath === undefined && sshAgentAvailable === false) {
        f.warn(
            `${pulumiKey("host.sshPrivateKeyPath")} is not set and no ssh-agent runs (SSH_AUTH_SOCK is not set): ` +
                `preview works, but \`pulumi up\` cannot log in to ${host.address}. Start ssh-agent and \`ssh-add\` the key, or set host.sshPrivateKeyPath.`,
        );
    }
    if (isPlaceholderHostKey(host.hostKey)) {
        f.warn(
            `${pulumiKey("host.hostKey")} is the placeholder key: preview works, but \`pulumi up\` will refuse to connect to ${host.address}. ` +
                `Replace it with \`ssh-keyscan -t ed25519 ${host.address}\` output (without the host name), verified out of band.`,
        );
    }
}

export function environmentRule(service: ServiceConfig, f: Findings): void {
    for (const [name, value] of Object.entries(service.environment)) {
        const path = `service.environment.${name}`;
        if (!ENV_NAME.test(name)) {
            f.issue(path, value, `${path}: the variable name must be letters, digits and _ (not starting with a digit): rename it.`);
            continue;
        }
        if (name === API_KEY_ENV) {
            f.issue(
                path,
                "[secret]",
                `${path} must not be set here: the API key is a secret: set ${pulumiKey("service.requireApiKey")}: true and give the deploy the key in SGLANG_SERVE_API_KEY (it goes to 0600 files, never into the unit).`,
            );
            continue;
        }
        // The value is never quoted: it may be the secret.
        const secretName = secretNameRule(name);
        const credential = secretName === undefined ? credentialValueRule(value) : undefined;
        if (secretName !== undefined || credential !== undefined) {
            f.issue(
                path,
                "[secret]",
                `${path}: ${secretName !== undefined ? `${name} looks like a secret (${secretName})` : `its value looks like ${credential}`}, ` +
                    "and service.environment goes in clear into the 0644 unit, the state and every preview: " +
                    `move the name to ${pulumiKey("service.secretEnvironment")} and give its value to the deploy in SGLANG_SERVE_SECRET_ENVIRONMENT (\`${name}=...\`).`,
            );
            continue;
        }
        if (service.gpus !== undefined && (GPU_SCOPE_ENV as readonly string[]).includes(name)) {
            f.issue(
                path,
                value,
                `${path} is set beside service.gpus, which sets ${GPU_SCOPE_ENV.join(" and ")} itself (CUDA_VISIBLE_DEVICES=${service.gpus.join(",")}, in nvidia-smi's order): remove it from service.environment.`,
            );
            continue;
        }
        // Any printable text: the unit quotes it for Environment= (core/unit/systemd-unit.ts), and systemd does not expand $ there.
        const bad = forbiddenCharacter(value);
        if (bad) {
            f.issue(path, value, `${path} holds ${bad}, which an Environment= line cannot carry intact: remove it.`);
            continue;
        }
    }
}

export function secretEnvironmentRule(service: ServiceConfig, f: Findings): void {
    const seen = new Set<string>();
    service.secretEnvironment.forEach((name, i) => {
        const path = `service.secretEnvironment[${i}]`;
        if (!ENV_NAME.test(name)) {
            f.issue(path, name, `${path}: the variable name must be letters, digits and _ (not starting with a digit): rename it.`);
        } else if (name === API_KEY_ENV) {
            f.issue(
                path,
                name,
                `${path}: ${API_KEY_ENV} is the stack's own variable for the API key: set ${pulumiKey("service.requireApiKey")}: true instead.`,
            );
        } else if (name in service.environment) {
            f.issue(path, name, `${path}: ${name} is in service.environment too: keep it in one of them (secretEnvironment for a secret).`);
        } else if (seen.has(name)) {
            f.issue(path, name, `${path}: ${name} is listed twice: remove one.`);
        }
        seen.add(name);
    });
}

export function listenRule(service: ServiceConfig, f: Findings): void {
    const listen = service.listenHost ?? DEFAULT_LISTEN_HOST;
    if (isLoopback(listen) && !isLoopback(service.endpointHost)) {
        f.issue(
            "service.listenHost",
            service.listenHost,
            `service.listenHost is ${service.listenHost ?? `unset (SGLang listens on ${DEFAULT_LISTEN_HOST})`}, so the server is unreachable at endpointHost ${service.endpointHost}: set listenHost: 0.0.0.0 or the container's address.`,
            ["service.endpointHost"],
        );
    }
}

/** A server other machines can reach must authenticate, unless the config says it need not. */
export function authenticationRule(service: ServiceConfig, f: Findings): void {
    const listen = service.listenHost ?? DEFAULT_LISTEN_HOST;
    if (service.requireApiKey) {
        if (service.allowUnauthenticated) {
            f.warn(`${pulumiKey("service.allowUnauthenticated")} is true but an API key is set: the key is used and the server authenticates.`);
        }
        return;
    }
    if (isLoopback(listen)) return;
    if (service.allowUnauthenticated) {
        f.warn(
            `The server listens on ${listen}:${service.port} without an API key (${pulumiKey("service.allowUnauthenticated")}: true): ` +
                "anyone who reaches that port can use it.",
        );
        return;
    }
    f.issue(
        "service.requireApiKey",
        service.requireApiKey,
        `service.requireApiKey is false but service.listenHost is ${listen}: the server would answer anyone who reaches port ${service.port} without authentication. ` +
            `Set service.requireApiKey: true (and ${API_KEY_SET_HELP}); or listen on 127.0.0.1; ` +
            "or, if an open endpoint is really intended, set service.allowUnauthenticated: true.",
        ["service.listenHost", "service.allowUnauthenticated", "service.port"],
    );
}
