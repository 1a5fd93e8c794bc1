/**
 * A pinned source of weights as the config declares it
 * (service.model.source, service.speculative.draftModelSource): a Hugging
 * Face model repository `org/name` at a full 40-hex commit, optional
 * allow/ignore patterns (huggingface_hub's fnmatch patterns), an endpoint
 * for a mirror. The values each key accepts, one alphabet or predicate each;
 * the schema (core/config/schema.ts) and the rules (config-rules.ts here)
 * use them. No schema import: the schema imports this file.
 */
import { isLoopbackAuthority } from "../config/values";
import { urlHasCredentials } from "../secrets/secret-like";

/** The Hub itself, where huggingface_hub goes without HF_ENDPOINT. */
export const DEFAULT_HUB_ENDPOINT = "https://huggingface.co";

/**
 * `org/name` as the Hub allows repository ids (huggingface_hub's
 * validate_repo_id: letters, digits, `-_.`, no `--` or `..`, at most 96
 * characters); the organisation is required, so the folder name
 * `<org>--<name>` is never ambiguous.
 */
export const HF_REPO_ID = /^(?!.*(--|\.\.))[A-Za-z0-9][A-Za-z0-9_.-]{0,95}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$/;

/** What a revision may be written as before the rules judge it: a commit, a branch or a tag name (git's ref alphabet, conservatively). */
export const REVISION_TEXT = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

/** A full commit id as the Hub writes it: 40 lowercase hex digits. */
export const COMMIT_ID = /^[0-9a-f]{40}$/;

/** A huggingface_hub allow/ignore pattern: fnmatch characters, no quotes, spaces or shell syntax. */
export const FILE_PATTERN = /^[A-Za-z0-9_.*?[\]!/-]{1,200}$/;

export function isCommitId(revision: string): boolean {
    return COMMIT_ID.test(revision);
}

/** How a revision that is not a commit id reads: an abbreviated or upper-case commit, or a branch or tag name. */
export function revisionKind(revision: string): "commit" | "upper-case commit" | "abbreviated commit" | "branch or tag" {
    if (COMMIT_ID.test(revision)) return "commit";
    if (/^[0-9A-Fa-f]{40}$/.test(revision)) return "upper-case commit";
    if (/^[0-9a-f]{7,39}$/.test(revision)) return "abbreviated commit";
    return "branch or tag";
}

/** The folder name of a repository under the models root: `org--name` (as the Hub cache names it, without `models--`). */
export function repoFolderName(hf: string): string {
    const [org, name] = hf.split("/");
    return `${org}--${name}`;
}

/**
 * Why `url` cannot be a Hub endpoint, or undefined when it can. https://
 * only (plain http only to a loopback host), no credentials (the token comes
 * from service.secretEnvironment's HF_TOKEN), no query. Never quotes the URL.
 */
export function hubEndpointProblem(url: string): string | undefined {
    if (urlHasCredentials(url)) {
        return (
            "must be a URL without credentials: the token goes in service.secretEnvironment (HF_TOKEN) and its value in " +
            "SGLANG_SERVE_SECRET_ENVIRONMENT, never in config, the state or a command line"
        );
    }
    const shape = /^(https?):\/\/([A-Za-z0-9.:[\]-]+)(\/[A-Za-z0-9._~/%+-]*)?$/.exec(url);
    if (!shape) return `must be an https:// URL of letters, digits and ._~/%+- (e.g. ${DEFAULT_HUB_ENDPOINT}, or a mirror's)`;
    if (shape[1] === "http" && !isLoopbackAuthority(shape[2]!)) {
        return (
            `is plain http:// to ${shape[2]}, which is not a loopback host: anyone on the path could hand the box other weights and read the token. ` +
            `Use https:// (e.g. ${DEFAULT_HUB_ENDPOINT}); plain http only for a loopback host (127.0.0.0/8, localhost, [::1])`
        );
    }
    return undefined;
}

/** The endpoint without a trailing slash: what the box and the preview send requests to. */
export function hubEndpoint(source: { endpoint?: string }): string {
    return (source.endpoint ?? DEFAULT_HUB_ENDPOINT).replace(/\/+$/, "");
}
