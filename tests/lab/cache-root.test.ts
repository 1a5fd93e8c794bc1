import assert from "node:assert/strict";
import * as os from "os";
import * as path from "path";
import { cacheRoot, releaseCacheRoot } from "../../sglang-release/oracle";

// One cache for the releases and the lab's rootfs, found as install.sh and oracle.py find theirs.
describe("the project's cache", () => {
    const saved = { SGLANG_SERVE_CACHE: process.env.SGLANG_SERVE_CACHE, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME };
    const set = (name: keyof typeof saved, value: string | undefined) => {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    };

    afterEach(() => {
        for (const [name, value] of Object.entries(saved)) set(name as keyof typeof saved, value);
    });

    it("is SGLANG_SERVE_CACHE when set, else sglang-serve under XDG_CACHE_HOME, else under ~/.cache", () => {
        set("SGLANG_SERVE_CACHE", "/srv/cache");
        set("XDG_CACHE_HOME", "/xdg");
        assert.equal(cacheRoot(), "/srv/cache");
        set("SGLANG_SERVE_CACHE", undefined);
        assert.equal(cacheRoot(), "/xdg/sglang-serve");
        set("XDG_CACHE_HOME", undefined);
        assert.equal(cacheRoot(), path.join(os.homedir(), ".cache", "sglang-serve"));
    });

    it("keeps the releases in its sglang folder", () => {
        set("SGLANG_SERVE_CACHE", undefined);
        set("XDG_CACHE_HOME", "/xdg");
        assert.equal(releaseCacheRoot(), "/xdg/sglang-serve/sglang");
    });
});
