import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { projectCopy } from "../../lab/deployment";

// providers/plugin-bundle.cjs: the dynamic-provider plugin loads the
// providers from one bundle of them, kept in the project's cache and checked
// against the checkout's files at every load. Each case runs node in a child
// process (its own module cache), with a cache folder of its own.

const repo = path.resolve(__dirname, "..", "..");
const sdkPluginEntry = path.join(repo, "node_modules", "@pulumi", "pulumi", "cmd", "dynamic-provider", "index.js");

/** Runs `script` (CommonJS) in node with the cache at `cache`; its stdout, parsed as JSON. */
function runNode(script: string, cache: string): unknown {
    const out = execFileSync(process.execPath, ["-e", script], {
        cwd: repo,
        env: { ...process.env, SGLANG_SERVE_CACHE: cache },
        encoding: "utf8",
        timeout: 120_000,
    });
    return JSON.parse(out.trim().split("\n").pop()!);
}

/** A project with its own copies of the folders the providers import, node_modules linked, for edits. */
function editableProject(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-bundle-"));
    for (const f of ["tsconfig.json", "package.json", "ts-hook.cjs"]) fs.copyFileSync(path.join(repo, f), path.join(dir, f));
    for (const d of ["providers", "core", "remote", "sglang-release", "weights"]) fs.cpSync(path.join(repo, d), path.join(dir, d), { recursive: true });
    fs.symlinkSync(path.join(repo, "node_modules"), path.join(dir, "node_modules"));
    return dir;
}

interface Loaded {
    planted: string;
    names: string[];
    own?: { dir: string; file: string };
}

describe("the providers' bundle for the dynamic-provider plugin (providers/plugin-bundle.cjs)", function () {
    const made: string[] = [];
    const tmp = (prefix: string) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
        made.push(dir);
        return dir;
    };
    after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

    it("gives each providers/*.ts the exports tsx gives it; another checkout's bundle is dropped after a week unwritten", () => {
        const cache = tmp("sglang-serve-bundle-cache-");
        const kept = path.join(cache, "providers-bundle");
        fs.mkdirSync(kept);
        const weekOld = new Date(Date.now() - 8 * 86_400_000);
        fs.writeFileSync(path.join(kept, "0000000000000000.js"), "");
        fs.utimesSync(path.join(kept, "0000000000000000.js"), weekOld, weekOld);
        fs.writeFileSync(path.join(kept, "1111111111111111.js"), "");
        const got = runNode(
            `const b = require(${JSON.stringify(path.join(repo, "providers", "plugin-bundle.cjs"))}).load();
            const out = { names: {}, tsx: {} };
            for (const [name, m] of Object.entries(b)) out.names[name] = Object.keys(m).sort();
            require(${JSON.stringify(path.join(repo, "ts-hook.cjs"))});
            for (const name of Object.keys(b)) out.tsx[name] = Object.keys(require(${JSON.stringify(path.join(repo, "providers"))} + "/" + name + ".ts")).sort();
            console.log(JSON.stringify(out));`,
            cache,
        ) as { names: Record<string, string[]>; tsx: Record<string, string[]> };
        const onDisk = fs
            .readdirSync(path.join(repo, "providers"))
            .filter((f) => f.endsWith(".ts"))
            .map((f) => f.slice(0, -3))
            .sort();
        assert.deepEqual(Object.keys(got.names).sort(), onDisk);
        assert.deepEqual(got.names, got.tsx);
        assert.ok(got.names["sglang-service"]!.includes("provider"), "sglang-service exports its provider");
        const bundles = fs.readdirSync(kept);
        assert.equal(bundles.length, 2, `this folder's bundle and the recent one (${bundles.join(", ")})`);
        assert.ok(bundles.includes("1111111111111111.js") && !bundles.includes("0000000000000000.js"));
    });

    it("runs what the checkout holds now: a change to a file a provider imports, and a new providers file, are in the next load; a module reading __dirname gets its own", () => {
        const cache = tmp("sglang-serve-bundle-cache-");
        const project = editableProject();
        made.push(project);
        const loadAndReport = `globalThis.planted = "none";
            const b = require(${JSON.stringify(path.join(project, "providers", "plugin-bundle.cjs"))}).load();
            console.log(JSON.stringify({ planted: globalThis.planted, names: Object.keys(b).sort(), own: b["zz-new"] }));`;
        const first = runNode(loadAndReport, cache) as Loaded;
        assert.equal(first.planted, "none");
        // core/is-record.ts is imported by the providers, not one of them.
        fs.appendFileSync(path.join(project, "core", "is-record.ts"), '\n(globalThis as { planted?: string }).planted = "edited";\n');
        const second = runNode(loadAndReport, cache) as Loaded;
        assert.equal(second.planted, "edited", "the edit to core/is-record.ts is what runs");
        // A module that reads __dirname and __filename is given its own, not the bundle's (remote/weights-staging.ts reads the box-side program beside it).
        fs.writeFileSync(path.join(project, "core", "zz-where.ts"), "export const dir = __dirname;\nexport const file = __filename;\n");
        fs.writeFileSync(path.join(project, "providers", "zz-new.ts"), 'export { dir, file } from "../core/zz-where";\n');
        const third = runNode(loadAndReport, cache) as Loaded;
        assert.deepEqual(third.names, [...first.names, "zz-new"].sort());
        assert.deepEqual(third.own, { dir: path.join(project, "core"), file: path.join(project, "core", "zz-where.ts") });
        // A change to how the bundle is built (this loader) builds it anew too.
        const [bundleFile] = fs.readdirSync(path.join(cache, "providers-bundle")).map((f) => path.join(cache, "providers-bundle", f));
        const builtFrom = () =>
            (
                JSON.parse(
                    fs
                        .readFileSync(bundleFile!, "utf8")
                        .split("\n")[0]!
                        .replace(/^[^{]*/, ""),
                ) as { inputs: Record<string, string> }
            ).inputs;
        const loader = path.join(project, "providers", "plugin-bundle.cjs");
        fs.appendFileSync(loader, "// changed\n");
        runNode(loadAndReport, cache);
        assert.equal(builtFrom()["providers/plugin-bundle.cjs"], createHash("sha256").update(fs.readFileSync(loader)).digest("hex"));
    });

    /** What the SDK's plugin entry, run as the engine runs it in a project copy, gets for providers/context.ts and sglang-service.ts through ts-hook.cjs. */
    function pluginLoads(cache: string): Record<string, unknown> {
        const copy = projectCopy("sglang-serve-bundle-copy-");
        made.push(copy);
        const preload = path.join(tmp("sglang-serve-bundle-preload-"), "after-main.cjs");
        // Runs once the SDK's entry is the main module and has bound its port (as the engine starts the plugin).
        fs.writeFileSync(
            preload,
            `setTimeout(() => {
                try {
                    require(${JSON.stringify(path.join(copy, "ts-hook.cjs"))});
                    const context = require(${JSON.stringify(path.join(copy, "providers", "context.ts"))});
                    const service = require(${JSON.stringify(path.join(copy, "providers", "sglang-service.ts"))});
                    const loaded = Object.keys(require.cache);
                    console.log(JSON.stringify({
                        configure: typeof context.configureProviders,
                        provider: typeof service.provider,
                        tsx: loaded.some((f) => f.includes("/node_modules/tsx/")),
                        projectModules: loaded.filter((f) => f.endsWith(".ts")).length,
                    }));
                } catch (e) {
                    console.log(JSON.stringify({ error: e.message }));
                }
                process.exit(0);
            }, 100);`,
        );
        const out = execFileSync(process.execPath, ["--require", preload, sdkPluginEntry, "127.0.0.1:1"], {
            cwd: copy,
            env: { ...process.env, SGLANG_SERVE_CACHE: cache },
            encoding: "utf8",
            timeout: 120_000,
        });
        return JSON.parse(out.trim().split("\n").pop()!) as Record<string, unknown>;
    }

    it("is what the SDK's plugin loads through ts-hook.cjs, with no tsx and no project module of its own", () => {
        const cache = tmp("sglang-serve-bundle-cache-");
        assert.deepEqual(pluginLoads(cache), { configure: "function", provider: "object", tsx: false, projectModules: 2 });
        assert.equal(fs.readdirSync(path.join(cache, "providers-bundle")).length, 1);
    });

    it("leaves the plugin on tsx where no bundle can be kept (the cache is not a folder), and the providers still load", () => {
        const notAFolder = path.join(tmp("sglang-serve-bundle-cache-"), "a-file");
        fs.writeFileSync(notAFolder, "");
        const got = pluginLoads(notAFolder);
        assert.equal(got.configure, "function");
        assert.equal(got.provider, "object");
        assert.equal(got.tsx, true);
        assert.ok((got.projectModules as number) > 2, `each project file its own module through tsx (${String(got.projectModules)})`);
    });
});
