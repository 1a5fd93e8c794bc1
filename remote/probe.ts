// HTTP probes of the SGLang server from this machine (Node's fetch, with
// AbortSignal.timeout). Network failures are values, not exceptions: the
// readiness wait polls a server that is expected to refuse connections for a
// while.
//
// The bearer key is only ever put in the Authorization header; it is not in any
// returned error string.

export interface ProbeOptions {
    /** Sent as "Authorization: Bearer <key>" (SGLang --api-key). */
    bearer?: string;
    timeoutMs: number;
    /** Bodies beyond this are cut off and reported as an error. Default 8 MiB. */
    maxBodyBytes?: number;
}

export type HttpResult =
    /** `body` is the parsed JSON, or undefined when the body is not JSON (then see `text`). */
    { status: number; body: unknown; text: string } | { error: string; code?: string };

export function httpGetJson(url: string, opts: ProbeOptions): Promise<HttpResult> {
    return request("GET", url, undefined, opts);
}

export function httpPostJson(url: string, payload: unknown, opts: ProbeOptions): Promise<HttpResult> {
    return request("POST", url, JSON.stringify(payload), opts);
}

/** Join an endpoint ("http://host:port", maybe with a trailing slash) and a path ("/health"). */
export function endpointUrl(endpoint: string, path: string): string {
    return `${endpoint.replace(/\/+$/, "")}${path.startsWith("/") ? path : `/${path}`}`;
}

async function request(method: "GET" | "POST", url: string, body: string | undefined, opts: ProbeOptions): Promise<HttpResult> {
    let parsed: URL;
    try {
        parsed = new URL(url);
    } catch {
        return { error: `invalid URL ${url}` };
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { error: `unsupported protocol in ${url}` };
    const where = `${method} ${parsed.origin}${parsed.pathname}`;
    const maxBody = opts.maxBodyBytes ?? 8 * 1024 * 1024;

    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
    if (body !== undefined) headers["content-type"] = "application/json";

    const signal = AbortSignal.timeout(opts.timeoutMs);
    try {
        const res = await fetch(parsed, { method, headers, body, signal, redirect: "manual" });
        const chunks: Uint8Array[] = [];
        let size = 0;
        if (res.body) {
            for await (const chunk of res.body) {
                size += chunk.length;
                if (size > maxBody) {
                    await res.body.cancel().catch(() => undefined);
                    return { error: `${where}: response larger than ${maxBody} bytes` };
                }
                chunks.push(chunk);
            }
        }
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown = undefined;
        if (text.trim() !== "") {
            try {
                json = JSON.parse(text);
            } catch {
                json = undefined;
            }
        }
        return { status: res.status, body: json, text };
    } catch (e) {
        if (signal.aborted) return { error: `${where}: no answer within ${opts.timeoutMs} ms`, code: "TIMEOUT" };
        // fetch reports the socket's error as its cause.
        const cause = (e as { cause?: unknown }).cause;
        return networkError(where, (cause instanceof Error ? cause : e) as NodeJS.ErrnoException);
    }
}

function networkError(where: string, e: NodeJS.ErrnoException): HttpResult {
    const code = e.code;
    const what =
        code === "ECONNREFUSED" ? "connection refused" : code === "ECONNRESET" ? "connection reset" : code === "EHOSTUNREACH" ? "host unreachable" : e.message;
    return { error: `${where}: ${what}${code && what !== e.message ? ` (${code})` : ""}`, ...(code ? { code } : {}) };
}

/**
 * GET /server_info over HTTP: the body when the server answered a JSON
 * object, else why not. The one HTTP reader of it (the readiness wait, a
 * server checked without its box); refreshes read it on the box
 * (core/sglang/server-info-read.ts), from the same endpoint: every release the stack
 * knows (core/sglang/releases.ts) serves /server_info, and neither read falls
 * back to the older /get_server_info.
 */
export async function getServerInfo(
    endpoint: string,
    opts: ProbeOptions,
    get: (url: string, opts: ProbeOptions) => Promise<HttpResult> = httpGetJson,
): Promise<{ body: Record<string, unknown> } | { error: string }> {
    const res = await get(endpointUrl(endpoint, "/server_info"), opts);
    if ("error" in res) return { error: `GET /server_info: ${res.error}` };
    if (res.status !== 200) return { error: `GET /server_info answered HTTP ${res.status}: ${res.text.trim().slice(0, 300)}` };
    if (res.body === undefined || res.body === null || typeof res.body !== "object" || Array.isArray(res.body)) {
        return { error: `GET /server_info did not answer a JSON object` };
    }
    return { body: res.body as Record<string, unknown> };
}
