import assert from "node:assert/strict";
import * as http from "http";
import * as net from "net";
import { endpointUrl, httpGetJson, httpPostJson } from "../../remote/probe";

// Against a real HTTP server on 127.0.0.1.
describe("HTTP probe", () => {
    let server: http.Server;
    let base: string;
    const seen: Array<{ method: string; url: string; auth: string | undefined; body: string }> = [];

    before(async () => {
        server = http.createServer((req, res) => {
            let body = "";
            req.on("data", (c: Buffer) => (body += c.toString()));
            req.on("end", () => {
                seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
                if (req.url === "/health") {
                    res.writeHead(503).end();
                } else if (req.url === "/slow") {
                    setTimeout(() => res.writeHead(200).end("{}"), 2_000);
                } else if (req.url === "/text") {
                    res.writeHead(200, { "content-type": "text/plain" }).end("not json");
                } else {
                    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ echo: body ? JSON.parse(body) : null }));
                }
            });
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    });
    after(async () => {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
    });
    beforeEach(() => {
        seen.length = 0;
    });

    it("returns the status of a GET, with an empty body as undefined", async () => {
        assert.deepEqual(await httpGetJson(`${base}/health`, { timeoutMs: 2_000 }), { status: 503, body: undefined, text: "" });
    });

    it("POSTs JSON with the bearer key and parses the JSON answer", async () => {
        const r = await httpPostJson(`${base}/v1/chat/completions`, { max_tokens: 16 }, { bearer: "sk-1", timeoutMs: 2_000 });
        assert.deepEqual(r, { status: 200, body: { echo: { max_tokens: 16 } }, text: '{"echo":{"max_tokens":16}}' });
        assert.equal(seen[0]!.auth, "Bearer sk-1");
        assert.equal(seen[0]!.method, "POST");
    });

    it("sends no Authorization header without a key", async () => {
        await httpGetJson(`${base}/server_info`, { timeoutMs: 2_000 });
        assert.equal(seen[0]!.auth, undefined);
    });

    it("keeps a non-JSON body as text", async () => {
        assert.deepEqual(await httpGetJson(`${base}/text`, { timeoutMs: 2_000 }), { status: 200, body: undefined, text: "not json" });
    });

    it("returns a refused connection as an error value", async () => {
        const port = await new Promise<number>((resolve) => {
            const s = net.createServer().listen(0, "127.0.0.1", () => {
                const p = (s.address() as net.AddressInfo).port;
                s.close(() => resolve(p));
            });
        });
        const r = await httpGetJson(`http://127.0.0.1:${port}/health`, { timeoutMs: 2_000 });
        assert.deepEqual(r, { error: `GET http://127.0.0.1:${port}/health: connection refused (ECONNREFUSED)`, code: "ECONNREFUSED" });
    });

    it("returns a timeout as an error value, without the key", async () => {
        const r = await httpGetJson(`${base}/slow`, { timeoutMs: 200, bearer: "sk-secret" });
        assert.ok("error" in r);
        assert.match(r.error, /no answer within 200 ms/);
        assert.ok(!r.error.includes("sk-secret"));
    });

    it("joins an endpoint and a path", () => {
        assert.equal(endpointUrl("http://10.1.230.172:30000/", "/health"), "http://10.1.230.172:30000/health");
        assert.equal(endpointUrl("http://10.1.230.172:30000", "v1/models"), "http://10.1.230.172:30000/v1/models");
    });
});
