import * as assert from "node:assert/strict";
import { redact } from "../../core/secrets/redact";

describe("redact", () => {
    it("masks every occurrence of the API key in a journal line that echoes SGLang's server_args", () => {
        const key = "0123456789abcdef0123";
        const line = `[2026-12-01 10:00:01] server_args=ServerArgs(model_path='/models/Qwen3.6-27B', api_key='${key}', port=30000) ${key}`;
        const masked = redact(line, [key]);
        assert.equal(masked.indexOf(key), -1);
        assert.match(masked, /api_key='\[secret\]'/);
    });

    it("leaves text alone when there is no secret", () => {
        assert.equal(redact("Load weight begin. avail mem=46.89 GB", [undefined]), "Load weight begin. avail mem=46.89 GB");
    });
});
