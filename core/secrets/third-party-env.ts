/**
 * The environment of a process that runs code the stack does not own, on the
 * machine that runs the stack: the declared SGLang release's code for the
 * preview's verdict (sglang-release/oracle.py, with huggingface_hub and the
 * release's other packages) and pip installing it (sglang-release/install.sh).
 *
 * Built from an allowlist, never as "the deploy's environment minus a few
 * names" (issue 34 finding 1): a runner's environment also holds the deploy
 * key's agent (SSH_AUTH_SOCK: root on the box), the state backend's and the
 * cloud's credentials (AWS_*, AZURE_*, GOOGLE_*), the state's passphrase
 * (PULUMI_CONFIG_PASSPHRASE), GitHub's token and the deploy's own secrets
 * (SGLANG_SERVE_*_KEY), and new ones appear without anyone editing a deny
 * list. A process started with the environment below never has them in
 * os.environ or /proc/self/environ. (An agent socket is still a file a
 * process of the same user could find by its path: that is why deploy jobs
 * run on a runner of their own, docs/operator-guide.md, "CI: what runs where".)
 */

/** Which third-party process: the release's code needs no network; pip needs its sources and the proxies. */
export type ThirdPartyUse = "release-code" | "pip";

/**
 * Every variable passed, by name, with why. What runs the interpreter (PATH,
 * the pyenv that CI or a workstation selects it with, setup-python's library
 * path), where the user's files and the cache are (HOME, the cache root), the
 * locale and the temporary folder; SGLANG_SERVE_PYTHON is the interpreter
 * install.sh runs pip with (a path, no secret).
 */
const ALWAYS: readonly string[] = [
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    // The cache root (sglang-release/oracle.ts cacheRoot(); install.sh and oracle.py read the same).
    "SGLANG_SERVE_CACHE",
    "XDG_CACHE_HOME",
    "SGLANG_SERVE_PYTHON",
    // The interpreter's own selection: pyenv's shims read these; actions/setup-python sets LD_LIBRARY_PATH to its libpython.
    "PYENV_ROOT",
    "PYENV_VERSION",
    "LD_LIBRARY_PATH",
];

/** The locale's categories (LC_ALL, LC_CTYPE, ...). */
const LOCALE = /^LC_[A-Z]+$/;

/**
 * pip's own source variables, and nothing that changes where or how it
 * installs: the index and the local wheel folders (PIP_INDEX_URL,
 * PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX), its config file and
 * cache, the CA bundle and client certificate it verifies the index with
 * (PIP_CERT, PIP_CLIENT_CERT, and the bundle variables its HTTP client reads),
 * its proxy, timeout and retries. Left out on purpose: PIP_TRUSTED_HOST (turns
 * off TLS checks), PIP_NO_BINARY (would build, so run, a source package),
 * PIP_TARGET/PIP_PREFIX/PIP_ROOT/PIP_USER (where it writes), and every other PIP_.
 */
const PIP: readonly string[] = [
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONFIG_FILE",
    "PIP_CACHE_DIR",
    "PIP_NO_CACHE_DIR",
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_PROXY",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_TIMEOUT",
    "PIP_RETRIES",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/** The proxy variables, in both cases, as curl and Python's urllib read them. */
const PROXY = /^(HTTPS?_PROXY|NO_PROXY|ALL_PROXY)$/i;

/** Whether `name` may reach a third-party process of this use. */
export function passesToThirdParty(name: string, use: ThirdPartyUse): boolean {
    if (ALWAYS.includes(name) || LOCALE.test(name)) return true;
    switch (use) {
        case "release-code":
            return false;
        case "pip":
            return PIP.includes(name) || PROXY.test(name);
        default: {
            const never: never = use;
            throw new Error(`unknown third-party use ${String(never)}`);
        }
    }
}

/** The environment for a third-party process of `use`: only the allowed variables of `env`, set ones only. */
export function thirdPartyEnvironment(env: Readonly<Record<string, string | undefined>>, use: ThirdPartyUse): Record<string, string> {
    return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && passesToThirdParty(e[0], use)));
}
