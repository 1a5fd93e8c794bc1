import assert from "node:assert/strict";
import { API_KEY_VARIABLE, GATEWAY_ADMIN_KEY_VARIABLE, SECRET_ENVIRONMENT_VARIABLE } from "../../core/secrets/deploy-secrets";
import { thirdPartyEnvironment } from "../../core/secrets/third-party-env";

// Issue 34 finding 1: the release's code and pip run with an environment built
// from an allowlist, not the deploy's environment minus the stack's own names.

/** A deploy job's environment on a runner: what it needs, and what must never reach third-party code. */
const RUNNER = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/runner",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    TMPDIR: "/tmp/job",
    SGLANG_SERVE_CACHE: "/srv/cache",
    XDG_CACHE_HOME: "/home/runner/.cache",
    SGLANG_SERVE_PYTHON: "/opt/hostedtoolcache/Python/3.11.9/x64/bin/python3",
    PYENV_ROOT: "/root/.pyenv",
    PIP_INDEX_URL: "https://pypi.example/simple",
    PIP_FIND_LINKS: "/opt/wheels",
    PIP_CERT: "/etc/ssl/certs/ca-certificates.crt",
    PIP_CONFIG_FILE: "/etc/pip.conf",
    HTTPS_PROXY: "http://proxy:3128",
    no_proxy: "localhost",
    // Never:
    SSH_AUTH_SOCK: "/tmp/ssh-XXXX/agent.1",
    SSH_AGENT_PID: "1",
    AWS_ACCESS_KEY_ID: "AKIA",
    AWS_SECRET_ACCESS_KEY: "secret",
    AWS_SESSION_TOKEN: "token",
    AZURE_STORAGE_KEY: "k",
    GOOGLE_APPLICATION_CREDENTIALS: "/creds.json",
    PULUMI_CONFIG_PASSPHRASE: "pass",
    PULUMI_BACKEND_URL: "s3://state",
    PULUMI_ACCESS_TOKEN: "pul-x",
    GITHUB_TOKEN: "ghs_x",
    ACTIONS_RUNTIME_TOKEN: "x",
    [API_KEY_VARIABLE]: "k".repeat(32),
    [SECRET_ENVIRONMENT_VARIABLE]: "HF_TOKEN=x",
    [GATEWAY_ADMIN_KEY_VARIABLE]: "a".repeat(32),
    SGLANG_SERVE_SSH_KEY: "-----BEGIN",
    HF_TOKEN: "hf_x",
    PIP_TRUSTED_HOST: "pypi.example",
    PIP_NO_BINARY: ":all:",
    PIP_TARGET: "/usr/lib/python3/dist-packages",
    PYTHONPATH: "/tmp/planted",
    LD_PRELOAD: "/tmp/planted.so",
    UNSET: undefined,
};

const NEVER = [
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_BACKEND_URL",
    "PULUMI_ACCESS_TOKEN",
    "GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    API_KEY_VARIABLE,
    SECRET_ENVIRONMENT_VARIABLE,
    GATEWAY_ADMIN_KEY_VARIABLE,
    "SGLANG_SERVE_SSH_KEY",
    "HF_TOKEN",
    "PIP_TRUSTED_HOST",
    "PIP_NO_BINARY",
    "PIP_TARGET",
    "PYTHONPATH",
    "LD_PRELOAD",
];

describe("the environment of third-party code on the runner (an allowlist)", () => {
    it("gives the release's code the interpreter's path, HOME, the locale, the temporary folder and the cache root, and nothing else", () => {
        assert.deepEqual(thirdPartyEnvironment(RUNNER, "release-code"), {
            PATH: "/usr/bin:/bin",
            HOME: "/home/runner",
            LANG: "C.UTF-8",
            LC_ALL: "C.UTF-8",
            TMPDIR: "/tmp/job",
            SGLANG_SERVE_CACHE: "/srv/cache",
            XDG_CACHE_HOME: "/home/runner/.cache",
            SGLANG_SERVE_PYTHON: "/opt/hostedtoolcache/Python/3.11.9/x64/bin/python3",
            PYENV_ROOT: "/root/.pyenv",
        });
    });

    it("gives pip also its own source variables and the proxies, in either case", () => {
        const env = thirdPartyEnvironment(RUNNER, "pip");
        for (const name of ["PIP_INDEX_URL", "PIP_FIND_LINKS", "PIP_CERT", "PIP_CONFIG_FILE", "HTTPS_PROXY", "no_proxy", "PATH", "SGLANG_SERVE_CACHE"]) {
            assert.equal(env[name], RUNNER[name as keyof typeof RUNNER], name);
        }
    });

    for (const use of ["release-code", "pip"] as const) {
        it(`never gives ${use} the agent, a backend or cloud credential, a Pulumi or GitHub variable, the deploy's keys, or what changes where pip writes or what Python loads`, () => {
            const env = thirdPartyEnvironment(RUNNER, use);
            assert.deepEqual(
                NEVER.filter((name) => name in env),
                [],
            );
        });
    }

    it("leaves out a variable it does not know, whatever its name looks like (no deny list to keep up)", () => {
        assert.deepEqual(thirdPartyEnvironment({ PATH: "/bin", NEW_CLOUD_TOKEN: "x", npm_config_userconfig: "/x" }, "pip"), { PATH: "/bin" });
    });
});
