// olah (vtuber-plan/olah, PyPI `olah`, the release PINS names), the lab's
// Hugging Face mirror: offline, it answers the Hub's API and file routes for
// the git repositories under its mirrors-path (olah/mirror/repos.py
// LocalMirrorRepo: refs, revision info, tree, paths-info, commits, resolve
// with git LFS objects from .git/lfs/objects) and never calls huggingface.co.
// What it does not answer as the Hub does is added by front.ts.
import * as path from "path";
import { MirrorDir } from "./mirror-dir";

/** olah's config file (olah/configs.py read_toml): its own loopback address, offline, the lab's repositories. */
export function olahConfigToml(d: MirrorDir, olah: { host: string; port: number }, publicNetloc: string): string {
    const s = (v: string) => JSON.stringify(v); // a TOML basic string
    return [
        "[basic]",
        `host = ${s(olah.host)}`,
        `port = ${olah.port}`,
        `repos-path = ${s(d.olahCache)}`,
        `mirrors-path = [${s(d.mirrors)}]`,
        // Where olah tells clients it is (LFS redirects of proxied repositories; none offline): the front's address.
        `mirror-netloc = ${s(publicNetloc)}`,
        `mirror-lfs-netloc = ${s(publicNetloc)}`,
        "",
        "[accessibility]",
        // Never ask huggingface.co: repositories come from mirrors-path only, and startup skips the upstream check.
        "offline = true",
        "",
    ].join("\n");
}

/** How olah is run from its venv (a module, not the console script: the venv is moved into place after pip writes it). */
export function olahArgv(venv: string, d: MirrorDir): string[] {
    return [path.join(venv, "bin", "python"), "-m", "olah.server", "--config", d.olahConfig, "--log-path", d.olahLogs];
}

/** olah's environment: an allowlist (no proxies, no tokens); huggingface_hub inside it offline. */
export function olahEnv(): Record<string, string> {
    return {
        PATH: "/usr/local/bin:/usr/bin:/bin",
        LANG: "C.UTF-8",
        HF_HUB_OFFLINE: "1",
        HF_HUB_DISABLE_TELEMETRY: "1",
        PYTHONDONTWRITEBYTECODE: "1",
    };
}
