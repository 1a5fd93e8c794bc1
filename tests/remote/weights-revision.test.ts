import assert from "node:assert/strict";
import { readConfigJson } from "../../remote/weights-revision";

const COMMIT = "0123456789abcdef0123456789abcdef01234567";

/** A fetch that answers `body` once, with the headers given, and says whether the body was read. */
function answering(body: string, headers: Record<string, string>) {
    const seen = { read: false, url: "" };
    const fetch = (async (url: string) => {
        seen.url = url;
        // No queue ahead of a reader (highWaterMark 0): pull runs only when the body is read.
        const stream = new ReadableStream<Uint8Array>(
            {
                pull(controller) {
                    seen.read = true;
                    controller.enqueue(new TextEncoder().encode(body));
                    controller.close();
                },
            },
            { highWaterMark: 0 },
        );
        return new Response(stream, { status: 200, headers });
    }) as unknown as typeof globalThis.fetch;
    return { fetch, seen };
}

describe("a revision's config.json from the Hub (remote/weights-revision.ts readConfigJson)", () => {
    it("reads config.json at the commit's resolve URL and returns its text", async () => {
        const { fetch, seen } = answering('{"architectures": ["Qwen3ForCausalLM"]}', { "content-type": "application/json" });
        const text = await readConfigJson("http://127.0.0.1:8090", "org/m", COMMIT, 100, { fetch });
        assert.equal(text, '{"architectures": ["Qwen3ForCausalLM"]}');
        assert.equal(seen.url, `http://127.0.0.1:8090/org/m/resolve/${COMMIT}/config.json`);
    });

    it("refuses one whose announced length is over the bound without reading its body", async () => {
        const { fetch, seen } = answering("x".repeat(10), { "content-length": "300000" });
        await assert.rejects(
            readConfigJson("http://127.0.0.1:8090", "org/m", COMMIT, 262144, { fetch }),
            /config\.json is 300000 bytes, more than the 262144 the preview reads/,
        );
        assert.equal(seen.read, false);
    });

    it("refuses one over the bound that announces no length, once read", async () => {
        const { fetch } = answering(`{"pad": "${"x".repeat(200)}"}`, {});
        await assert.rejects(
            readConfigJson("http://127.0.0.1:8090", "org/m", COMMIT, 100, { fetch }),
            /config\.json is 211 bytes, more than the 100 the preview reads/,
        );
    });
});
