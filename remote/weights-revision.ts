/**
 * Reads of the Hub (or a mirror) from the machine that runs the stack, over
 * HTTP with fetch: what a revision names now (`GET
 * /api/models/{repo}/revision/{rev}`, the preview's answer to a branch or
 * tag: the commit to pin, core/weights/revision-pins.ts), and a commit's
 * files with their sizes and hashes (`?blobs=true`, what
 * model_info(files_metadata=True) reads: the preview's count of what `up`
 * fetches, core/weights/disk.ts), and a commit's config.json (`GET
 * /{repo}/resolve/{commit}/config.json`, a few KB: what the preview's box
 * facts and SGLang's own verdict judge before anything is downloaded,
 * providers/sglang-server/source-config.ts). The token, when given, goes in
 * the Authorization header only, and never into a message.
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

/** `org/name` as a URL path: each part encoded. */
function repoPath(hf: string): string {
    const [org, name] = hf.split("/");
    return `${encodeURIComponent(org!)}/${encodeURIComponent(name!)}`;
}

function revisionUrl(endpoint: string, hf: string, revision: string, blobs: boolean): string {
    return `${hubEndpoint({ endpoint })}/api/models/${repoPath(hf)}/revision/${encodeURIComponent(revision)}${blobs ? "?blobs=true" : ""}`;
}

/** The request's headers: the token in Authorization only. */
function hubHeaders(accept: string, o: HubReadOptions): Record<string, string> {
    return { accept, ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) };
}

/** GET `url`: the response, or HubReadError naming the URL (never the token) and why. */
async function hubGet(url: string, accept: string, o: HubReadOptions): Promise<Response> {
    try {
        return await (o.fetch ?? fetch)(url, { headers: hubHeaders(accept, o), signal: AbortSignal.timeout(o.timeoutMs ?? 15_000), redirect: "follow" });
    } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause?.code;
        throw new HubReadError(`GET ${url} failed: ${(e as Error).message}${cause ? ` (${cause})` : ""}`);
    }
}

/** A response that is not 2xx as HubReadError: the status, the Hub's error code and message. */
function hubAnswerError(url: string, response: Response, text: string): HubReadError {
    const hubError = response.headers.get("x-error-code") ?? "";
    const message = response.headers.get("x-error-message") ?? text.slice(0, 200).replace(/\s+/g, " ");
    return new HubReadError(`GET ${url} answered ${response.status}${hubError ? ` ${hubError}` : ""}${message ? `: ${message}` : ""}`);
}

/** The Hub's revision info, parsed; throws HubReadError naming the URL (never the token) and the Hub's own error. */
async function readRevisionInfo(endpoint: string, hf: string, revision: string, blobs: boolean, o: HubReadOptions): Promise<HubRevision | { sha: string }> {
    const url = revisionUrl(endpoint, hf, revision, blobs);
    const response = await hubGet(url, "application/json", o);
    const text = await response.text();
    if (!response.ok) throw hubAnswerError(url, response, text);
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
 * A commit's config.json as the Hub serves it (`/{repo}/resolve/{commit}/config.json`),
 * at most `maxBytes`; throws HubReadError when it cannot be read, is larger, or is not JSON.
 */
export async function readConfigJson(endpoint: string, hf: string, revision: string, maxBytes: number, o: HubReadOptions = {}): Promise<string> {
    const url = `${hubEndpoint({ endpoint })}/${repoPath(hf)}/resolve/${encodeURIComponent(revision)}/config.json`;
    const response = await hubGet(url, "application/json, */*", o);
    const tooLarge = (bytes: number) => new HubReadError(`GET ${url}: config.json is ${bytes} bytes, more than the ${maxBytes} the preview reads`);
    // A length the answer announces is refused before its body is read; without one, after.
    const announced = Number(response.headers.get("content-length") ?? NaN);
    if (response.ok && announced > maxBytes) {
        await response.body?.cancel();
        throw tooLarge(announced);
    }
    const text = await response.text();
    if (!response.ok) throw hubAnswerError(url, response, text);
    if (Buffer.byteLength(text) > maxBytes) throw tooLarge(Buffer.byteLength(text));
    try {
        JSON.parse(text);
    } catch {
        throw new HubReadError(`GET ${url} answered ${response.status} with a config.json that is not JSON`);
    }
    return text;
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
