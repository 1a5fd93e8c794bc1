// The mirror's HTTP front: the address HF_ENDPOINT names. It passes every
// request to olah unchanged except where olah (0.5.4, offline, local mirrors)
// does not answer as the Hub does for what huggingface_hub uses; there it
// builds the Hub's answer from olah's own answers (see lab/README.md, "The
// Hugging Face mirror"):
//
// - GET /api/models/{repo}/revision/{rev}?blobs=true: olah ignores `blobs`
//   (its siblings are `{rfilename}` only); the Hub gives each sibling `size`,
//   `blobId` and, for LFS files, `lfs: {sha256, size, pointerSize}`
//   (huggingface_hub ModelInfo / RepoSibling). Filled from olah's tree.
// - GET /api/models/{repo} (no revision): olah offline answers 404 (it looks
//   only in its cache of huggingface.co); the Hub answers the default
//   branch's. Answered as /revision/main.
// - HEAD/GET /{repo}/resolve/{rev}/{file}: olah's HEAD has Content-Length,
//   X-Repo-Commit and ETag (an LFS file's: the sha256 of the bytes it holds)
//   but no X-Linked-Etag / X-Linked-Size; its GET has none of these headers
//   and ignores Range. The front adds X-Linked-Etag (the pointer's sha256,
//   as the Hub reports it whatever the bytes) and X-Linked-Size for LFS
//   files, the same headers on GET, and answers `Range: bytes=a-[b]` with
//   206 and Content-Range (olah's body, the first a bytes skipped).
// - Not found: olah answers every miss (repository, revision, file) with
//   401 RepoNotFound, and a GET of a missing file with a 500 (a KeyError in
//   LocalMirrorRepo.get_file). The Hub answers 401 RepoNotFound only for a
//   repository it does not have, 404 RevisionNotFound for a revision that
//   does not resolve, 404 EntryNotFound (with X-Repo-Commit) for a missing
//   file; huggingface_hub raises RepositoryNotFoundError,
//   RevisionNotFoundError, RemoteEntryNotFoundError from these.
//
// The front listens before olah is up and holds requests until olah answers
// (as a socket-activated service would), so a restarted mirror is back at
// once. faults.ts's dieMidDownload is applied here.
import { once } from "events";
import * as fs from "fs";
import * as http from "http";
import { MirrorFaults, readMirrorFaults } from "./faults";

export interface FrontOptions {
    olah: { host: string; port: number };
    /** Resolves when olah accepts connections. */
    olahReady: Promise<void>;
    faultsFile: string;
    accessLog: string;
    /** What dieMidDownload does once its bytes are sent: the whole mirror dies. */
    die: () => void;
}

interface Upstream {
    status: number;
    headers: http.IncomingHttpHeaders;
    body: http.IncomingMessage;
}

function olahRequest(o: FrontOptions, method: string, url: string, headers: http.OutgoingHttpHeaders = {}, body?: Buffer): Promise<Upstream> {
    return new Promise((resolve, reject) => {
        const req = http.request({ host: o.olah.host, port: o.olah.port, method, path: url, headers }, (res) =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: res }),
        );
        req.on("error", reject);
        req.end(body);
    });
}

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const c of s) parts.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
    return Buffer.concat(parts);
}

async function olahJson<T>(o: FrontOptions, method: string, url: string, host: string, form?: string): Promise<{ status: number; value?: T; raw: Buffer }> {
    const headers: http.OutgoingHttpHeaders = { host };
    if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const r = await olahRequest(o, method, url, headers, form === undefined ? undefined : Buffer.from(form));
    const raw = await readAll(r.body);
    if (r.status !== 200) return { status: r.status, raw };
    return { status: r.status, value: JSON.parse(raw.toString("utf8")) as T, raw };
}

/** An entry of olah's tree and paths-info answers (the Hub's format). */
interface PathInfo {
    type: "file" | "directory";
    oid: string;
    size: number;
    path: string;
    lfs?: { oid: string; size: number; pointerSize: number };
}

interface ModelInfoBody {
    sha: string;
    siblings?: Array<{ rfilename: string }>;
    [key: string]: unknown;
}

const INFO = /^\/api\/models\/([^/]+)\/([^/]+)(?:\/revision\/([^/]+))?$/;
const RESOLVE = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/;

/** A single `bytes=a-` or `bytes=a-b` range (what huggingface_hub sends), else undefined (served whole, as many servers do). */
export function parseRange(header: string | undefined, total: number): { start: number; end: number } | "unsatisfiable" | undefined {
    const m = header === undefined ? null : /^bytes=(\d+)-(\d*)$/.exec(header.trim());
    if (!m) return undefined;
    const start = Number(m[1]);
    const end = m[2] === "" ? total - 1 : Math.min(Number(m[2]), total - 1);
    if (start >= total || end < start) return "unsatisfiable";
    return { start, end };
}

export function frontHandler(o: FrontOptions): http.RequestListener {
    const log = (entry: Record<string, unknown>) => fs.appendFileSync(o.accessLog, JSON.stringify({ t: new Date().toISOString(), ...entry }) + "\n");

    async function passThrough(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
        const body = await readAll(req);
        const up = await olahRequest(o, req.method ?? "GET", req.url ?? "/", req.headers, body.length > 0 ? body : undefined);
        res.writeHead(up.status, up.headers);
        for await (const c of up.body) if (!res.write(c)) await once(res, "drain");
        res.end();
    }

    function sendJson(req: http.IncomingMessage, res: http.ServerResponse, status: number, raw: Buffer): void {
        res.writeHead(status, { "content-type": "application/json", "content-length": raw.length });
        res.end(req.method === "HEAD" ? undefined : raw);
    }

    function hubError(
        req: http.IncomingMessage,
        res: http.ServerResponse,
        status: number,
        code: string,
        message: string,
        headers: http.OutgoingHttpHeaders = {},
    ): void {
        const raw = Buffer.from(JSON.stringify({ error: message }));
        res.writeHead(status, {
            ...headers,
            "x-error-code": code,
            "x-error-message": message,
            "content-type": "application/json",
            "content-length": raw.length,
        });
        res.end(req.method === "HEAD" ? undefined : raw);
    }

    /** olah missed `rev` (or a file at it): the Hub's answer for what is missing (see the header). */
    async function notFound(
        req: http.IncomingMessage,
        res: http.ServerResponse,
        org: string,
        name: string,
        rev: string,
        olahAnswer?: { status: number; raw: Buffer },
    ): Promise<void> {
        const host = req.headers.host ?? "";
        if (olahAnswer === undefined) {
            const at = await olahJson<ModelInfoBody>(o, "GET", `/api/models/${org}/${name}/revision/${rev}`, host);
            if (at.value) return hubError(req, res, 404, "EntryNotFound", "Entry not found", { "x-repo-commit": at.value.sha });
            olahAnswer = at;
        }
        const refs = await olahJson<unknown>(o, "GET", `/api/models/${org}/${name}/refs`, host);
        if (refs.status === 200) return hubError(req, res, 404, "RevisionNotFound", `Invalid rev id: ${decodeURIComponent(rev)}`);
        if (olahAnswer.status === 401) return hubError(req, res, 401, "RepoNotFound", "Repository not found");
        return sendJson(req, res, olahAnswer.status, olahAnswer.raw);
    }

    async function info(req: http.IncomingMessage, res: http.ServerResponse, org: string, name: string, rev: string, query: URLSearchParams): Promise<void> {
        const host = req.headers.host ?? "";
        const r = await olahJson<ModelInfoBody>(o, "GET", `/api/models/${org}/${name}/revision/${rev}`, host);
        if (!r.value) return notFound(req, res, org, name, rev, r);
        const blobs = ["true", "1"].includes((query.get("blobs") ?? "").toLowerCase());
        if (blobs && r.value.siblings) {
            // Trailing slash: olah's tree route 307-redirects there otherwise.
            const tree = await olahJson<PathInfo[]>(o, "GET", `/api/models/${org}/${name}/tree/${r.value.sha}/?recursive=true`, host);
            const byPath = new Map((tree.value ?? []).map((e) => [e.path, e]));
            r.value.siblings = r.value.siblings.map((s) => {
                const e = byPath.get(s.rfilename);
                if (!e) return s;
                return {
                    rfilename: s.rfilename,
                    size: e.size,
                    blobId: e.oid,
                    ...(e.lfs ? { lfs: { sha256: e.lfs.oid, size: e.lfs.size, pointerSize: e.lfs.pointerSize } } : {}),
                };
            });
        }
        sendJson(req, res, 200, Buffer.from(JSON.stringify(r.value)));
    }

    async function resolve(req: http.IncomingMessage, res: http.ServerResponse, org: string, name: string, rev: string, file: string): Promise<number> {
        const host = req.headers.host ?? "";
        const head = await olahRequest(o, "HEAD", `/${org}/${name}/resolve/${rev}/${file}`, { host });
        head.body.resume();
        const commit = head.headers["x-repo-commit"];
        if (head.status !== 200 || typeof commit !== "string") {
            await notFound(req, res, org, name, rev);
            return 0;
        }
        const total = Number(head.headers["content-length"]);
        const headers: http.OutgoingHttpHeaders = { "x-repo-commit": commit, "accept-ranges": "bytes" };
        if (head.headers.etag) headers.etag = head.headers.etag;
        const paths = await olahJson<PathInfo[]>(
            o,
            "POST",
            `/api/models/${org}/${name}/paths-info/${commit}`,
            host,
            new URLSearchParams({ paths: decodeURIComponent(file) }).toString(),
        );
        const lfs = paths.value?.[0]?.lfs;
        if (lfs) {
            headers["x-linked-etag"] = `"${lfs.oid}"`;
            headers["x-linked-size"] = String(lfs.size);
        }
        if (req.method === "HEAD") {
            res.writeHead(200, { ...headers, "content-length": total });
            res.end();
            return 0;
        }
        const range = parseRange(req.headers.range, total);
        if (range === "unsatisfiable") {
            res.writeHead(416, { ...headers, "content-range": `bytes */${total}`, "content-length": 0 });
            res.end();
            return 0;
        }
        const { start, end } = range ?? { start: 0, end: total - 1 };
        const faults: MirrorFaults = readMirrorFaults(o.faultsFile);
        const die = faults.dieMidDownload?.file === decodeURIComponent(file) ? faults.dieMidDownload.afterBytes : undefined;
        const up = await olahRequest(o, "GET", `/${org}/${name}/resolve/${commit}/${file}`, { host });
        if (range) res.writeHead(206, { ...headers, "content-range": `bytes ${start}-${end}/${total}`, "content-length": end - start + 1 });
        else res.writeHead(200, { ...headers, "content-length": total });
        let pos = 0;
        let sent = 0;
        for await (const raw of up.body) {
            let c = raw as Buffer;
            if (pos + c.length <= start) {
                pos += c.length;
                continue;
            }
            if (pos < start) {
                c = c.subarray(start - pos);
                pos = start;
            }
            c = c.subarray(0, end + 1 - pos);
            if (die !== undefined && sent + c.length >= die) {
                const last = c.subarray(0, die - sent);
                await new Promise<void>((done) => res.write(last, () => done()));
                const { dieMidDownload: _fired, ...rest } = readMirrorFaults(o.faultsFile);
                fs.writeFileSync(o.faultsFile, JSON.stringify(rest));
                log({ method: req.method, url: req.url, range: req.headers.range ?? null, status: range ? 206 : 200, bytes: die, died: true });
                o.die();
                return die;
            }
            if (!res.write(c)) await once(res, "drain");
            pos += c.length;
            sent += c.length;
            if (pos > end) break;
        }
        up.body.destroy();
        // olah's body ended short (it died): the client must see a short body, not a complete one.
        if (sent < end - start + 1) res.destroy();
        else res.end();
        return sent;
    }

    return (req, res) => {
        const url = new URL(req.url ?? "/", "http://mirror");
        const started = Date.now();
        let bytes: number | undefined;
        res.on("close", () =>
            log({ method: req.method, url: req.url, range: req.headers.range ?? null, status: res.statusCode, bytes: bytes ?? null, ms: Date.now() - started }),
        );
        const handle = async () => {
            await o.olahReady;
            const get = req.method === "GET" || req.method === "HEAD";
            const i = get ? INFO.exec(url.pathname) : null;
            const r = get ? RESOLVE.exec(url.pathname) : null;
            if (i) return info(req, res, i[1]!, i[2]!, i[3] ?? "main", url.searchParams);
            if (r && !["api", "datasets", "spaces"].includes(r[1]!)) {
                bytes = await resolve(req, res, r[1]!, r[2]!, r[3]!, r[4]!);
                return;
            }
            return passThrough(req, res);
        };
        handle().catch((e: Error) => {
            if (!res.headersSent) {
                res.writeHead(502, { "content-type": "application/json" });
                res.end(JSON.stringify({ error: `lab mirror front: ${e.message}` }));
            } else res.destroy();
        });
    };
}
