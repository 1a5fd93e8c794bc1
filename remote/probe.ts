// HTTP probes of the SGLang server from this machine (node's http/https, no
// dependency). Network failures are values, not exceptions: the readiness gate
// polls a server that is expected to refuse connections for a while.
//
// The bearer key is only ever put in the Authorization header; it is not in any
// returned error string.

import * as http from "http";
import * as https from "https";

export interface ProbeOptions {
  /** Sent as "Authorization: Bearer <key>" (SGLang --api-key). */
  bearer?: string;
  timeoutMs: number;
  /** Bodies beyond this are cut off and reported as an error. Default 8 MiB. */
  maxBodyBytes?: number;
}

export type HttpResult =
  /** `body` is the parsed JSON, or undefined when the body is not JSON (then see `text`). */
  | { status: number; body: unknown; text: string }
  | { error: string; code?: string };

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

function request(method: "GET" | "POST", url: string, body: string | undefined, opts: ProbeOptions): Promise<HttpResult> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.resolve({ error: `invalid URL ${url}` });
  }
  const lib = parsed.protocol === "https:" ? https : parsed.protocol === "http:" ? http : null;
  if (!lib) return Promise.resolve({ error: `unsupported protocol in ${url}` });
  const where = `${method} ${parsed.origin}${parsed.pathname}`;
  const maxBody = opts.maxBodyBytes ?? 8 * 1024 * 1024;

  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(body));
  }

  return new Promise<HttpResult>((resolve) => {
    let done = false;
    const finish = (r: HttpResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    // agent: false: one connection per probe, closed after it, so no pooled
    // keep-alive socket outlives the gate or keeps the process running.
    const req = lib.request(parsed, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > maxBody) {
          req.destroy();
          finish({ error: `${where}: response larger than ${maxBody} bytes` });
          return;
        }
        chunks.push(c);
      });
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown = undefined;
        if (text.trim() !== "") {
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
        }
        finish({ status: res.statusCode ?? 0, body: json, text });
      });
      res.on("error", (e: NodeJS.ErrnoException) => finish(networkError(where, e)));
    });
    const timer = setTimeout(() => {
      finish({ error: `${where}: no answer within ${opts.timeoutMs} ms`, code: "TIMEOUT" });
      req.destroy();
    }, opts.timeoutMs);
    req.on("error", (e: NodeJS.ErrnoException) => finish(networkError(where, e)));
    req.end(body);
  });
}

function networkError(where: string, e: NodeJS.ErrnoException): HttpResult {
  const code = e.code;
  const what =
    code === "ECONNREFUSED"
      ? "connection refused"
      : code === "ECONNRESET"
        ? "connection reset"
        : code === "EHOSTUNREACH"
          ? "host unreachable"
          : e.message;
  return { error: `${where}: ${what}${code && what !== e.message ? ` (${code})` : ""}`, ...(code ? { code } : {}) };
}
