/**
 * Reads of the Hub (or a mirror) from the machine that runs the stack, over
 * HTTP with fetch: what a revision names now (`GET
 * /api/models/{repo}/revision/{rev}`, the preview's answer to a branch or
 * tag: the commit to pin, core/weights/revision-pins.ts), and a commit's
 * files with their sizes and hashes (`?blobs=true`, what
 * model_info(files_metadata=True) reads: the preview's count of what `up`
 * fetches, core/weights/disk.ts). The token, when given, goes in the
 * Authorization header only, and never into a message.
 */
import { hubEndpoint } from "../core/weights/hf-source";
import { HubRevision, parseHubRevision } from "../core/weights/hub-files";
import { ResolvedRevision, RevisionQuery, revisionQueryKey } from "../core/weights/revision-pins";

export interface HubReadOptions {
    /** HF_TOKEN's value, from the deploy's secrets; absent: no Authorization. */
    token?: string;
    /** Default 15 s. */
    timeoutMs?: number;
    /** A seam for tests; default the global fetch. */
    fetch?: typeof fetch;
}

export class HubReadError extends Error {}

function revisionUrl(endpoint: string, hf: string, revision: string, blobs: boolean): string {
    const [org, name] = hf.split("/");
    return `${hubEndpoint({ endpoint })}/api/models/${encodeURIComponent(org!)}/${encodeURIComponent(name!)}/revision/${encodeURIComponent(revision)}${blobs ? "?blobs=true" : ""}`;
}

/** The Hub's revision info, parsed; throws HubReadError naming the URL (never the token) and the Hub's own error. */
async function readRevisionInfo(endpoint: string, hf: string, revision: string, blobs: boolean, o: HubReadOptions): Promise<HubRevision | { sha: string }> {
    const url = revisionUrl(endpoint, hf, revision, blobs);
    const doFetch = o.fetch ?? fetch;
    let response: Response;
    try {
        response = await doFetch(url, {
            headers: { accept: "application/json", ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) },
            signal: AbortSignal.timeout(o.timeoutMs ?? 15_000),
            redirect: "follow",
        });
    } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause?.code;
        throw new HubReadError(`GET ${url} failed: ${(e as Error).message}${cause ? ` (${cause})` : ""}`);
    }
    const text = await response.text();
    if (!response.ok) {
        const hubError = response.headers.get("x-error-code") ?? "";
        const message = response.headers.get("x-error-message") ?? text.slice(0, 200).replace(/\s+/g, " ");
        throw new HubReadError(`GET ${url} answered ${response.status}${hubError ? ` ${hubError}` : ""}${message ? `: ${message}` : ""}`);
    }
    let body: unknown;
    try {
        body = JSON.parse(text);
    } catch {
        throw new HubReadError(`GET ${url} answered ${response.status} with no JSON`);
    }
    try {
        if (blobs) return parseHubRevision(body);
        const sha = (body as { sha?: unknown }).sha;
        if (typeof sha !== "string") throw new Error("the Hub's answer has no commit (sha)");
        return { sha };
    } catch (e) {
        throw new HubReadError(`GET ${url}: ${(e as Error).message}`);
    }
}

/** The commit a branch, tag or commit names now. */
export async function resolveRevision(endpoint: string, hf: string, revision: string, o: HubReadOptions = {}): Promise<string> {
    return (await readRevisionInfo(endpoint, hf, revision, false, o)).sha;
}

/** A commit's files, with sizes, git blob ids and LFS sha256s. */
export async function readRevisionFiles(endpoint: string, hf: string, revision: string, o: HubReadOptions = {}): Promise<HubRevision> {
    return (await readRevisionInfo(endpoint, hf, revision, true, o)) as HubRevision;
}

/**
 * What each unpinned revision names now, for validateStackConfig's
 * resolvedRevisions (each repository, revision and endpoint asked once, all
 * at once). A read that fails is an answer too: the refusal then says why.
 */
export async function resolveUnpinned(queries: readonly RevisionQuery[], o: HubReadOptions = {}): Promise<Map<string, ResolvedRevision>> {
    const keys = [...new Map(queries.map((q) => [revisionQueryKey(q), q])).values()];
    const answers = await Promise.all(
        keys.map(async (q): Promise<[string, ResolvedRevision]> => {
            try {
                return [revisionQueryKey(q), { sha: await resolveRevision(q.endpoint, q.hf, q.revision, o) }];
            } catch (e) {
                return [revisionQueryKey(q), { error: (e as Error).message }];
            }
        }),
    );
    return new Map(answers);
}
