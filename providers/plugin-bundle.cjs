// The providers as the dynamic-provider plugin loads them: providers/*.ts
// and everything they import, one bundle, built by esbuild and kept in the
// project's cache.
//
// The SDK's dynamic-provider plugin (a node process of its own in every
// engine run) loads providers/context.ts and providers/<kind>.ts through the
// project's ts-hook.cjs (components/dynamic-provider.ts). Through tsx that is
// tsx itself and about 120 modules, each resolved, read and looked up in
// tsx's transform cache: 0.24 to 0.37 CPU-s. From this bundle, 0.08 to 0.11,
// the check below included (measured 2026-12-07, Node 24.22.3, node's
// compile cache warm, 12 runs each). ts-hook.cjs installs it in that plugin
// only: the test workers and scripts keep tsx, module for module, so the
// module a test holds is the one the code under test uses.
//
// What runs is what the checkout holds now, as through tsx: the bundle is
// kept per providers folder, with the sha256 of every file esbuild read to
// build it (and tsconfig.json, esbuild's package.json and this file) and the
// list of providers/*.ts. Every load
// reads them all again and builds anew on any difference (in a child
// process: esbuild's plugins are asynchronous and require is not). The
// bundle runs as a module of the providers folder: its packages (the SDK,
// ssh2, ...) are the checkout's node_modules, not copies, and its source map
// names each .ts file and line in a stack trace. A module that reads
// __dirname or __filename is given its own.
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const Module = require("node:module");
const os = require("node:os");
const path = require("node:path");

const providersDir = __dirname;
const root = path.dirname(providersDir);
/** The module the bundle runs as (not a file: the source map's paths are relative to it). */
const bundleModulePath = path.join(providersDir, "plugin-bundle.js");
const HEADER = "// sglang-serve providers bundle: ";
/** The bundle's entry, written by build() (no file): each providers/<name>.ts as the export <name>. */
const ENTRY = "<providers/*.ts>";

function sha256(data) {
    return crypto.createHash("sha256").update(data).digest("hex");
}

/** providers/*.ts by name (`context`, `sglang-service`, ...): the bundle's entries. */
function entryNames() {
    return fs
        .readdirSync(providersDir)
        .filter((f) => f.endsWith(".ts"))
        .map((f) => f.slice(0, -".ts".length))
        .sort();
}

/** Where this providers folder's bundle is kept: <project cache>/providers-bundle/<folder's digest>.js (one per checkout). */
function bundleFile() {
    const cache = process.env.SGLANG_SERVE_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "sglang-serve");
    return path.join(cache, "providers-bundle", `${sha256(providersDir).slice(0, 16)}.js`);
}

function digestOf(file) {
    return sha256(fs.readFileSync(path.join(root, file)));
}

/** The kept bundle's text when it was built from the files as they are now, else undefined. */
function keptBundle(file, entries) {
    let text;
    try {
        text = fs.readFileSync(file, "utf8");
    } catch {
        return undefined;
    }
    const end = text.indexOf("\n");
    if (!text.startsWith(HEADER) || end < 0) return undefined;
    let record;
    try {
        record = JSON.parse(text.slice(HEADER.length, end));
    } catch {
        return undefined;
    }
    if (record.entries.join("\n") !== entries.join("\n")) return undefined;
    for (const [input, digest] of Object.entries(record.inputs)) {
        try {
            if (digestOf(input) !== digest) return undefined;
        } catch {
            return undefined;
        }
    }
    return text;
}

/**
 * Builds the bundle and writes it to `file` (a temporary file renamed over
 * it, so a reader sees the old bundle or the new one). Run in a child
 * process by load().
 */
async function build(file) {
    const esbuild = require("esbuild");
    const entries = entryNames();
    const ownDirname = {
        name: "own-dirname",
        setup(b) {
            b.onLoad({ filter: /\.ts$/, namespace: "file" }, async (args) => {
                const source = await fs.promises.readFile(args.path, "utf8");
                if (!/\b__(dirname|filename)\b/.test(source)) return undefined;
                // On the file's first line, so its source map lines stay right.
                const own = `const __dirname = ${JSON.stringify(path.dirname(args.path))}, __filename = ${JSON.stringify(args.path)}; `;
                return { contents: own + source, loader: "ts" };
            });
        },
    };
    const result = await esbuild.build({
        absWorkingDir: root,
        stdin: {
            contents: entries.map((name) => `export * as ${JSON.stringify(name)} from "./providers/${name}";`).join("\n"),
            resolveDir: root,
            sourcefile: ENTRY,
            loader: "ts",
        },
        bundle: true,
        platform: "node",
        format: "cjs",
        target: "node22",
        packages: "external",
        sourcemap: "inline",
        sourcesContent: false,
        outfile: bundleModulePath,
        write: false,
        metafile: true,
        logLevel: "error",
        plugins: [ownDirname],
    });
    // Besides what esbuild read: how it was built (this file, esbuild's version) and tsconfig.json.
    const builtWith = ["providers/plugin-bundle.cjs", path.relative(root, require.resolve("esbuild/package.json")), "tsconfig.json"];
    const inputs = Object.fromEntries(builtWith.map((f) => [f, digestOf(f)]));
    for (const input of Object.keys(result.metafile.inputs)) if (input !== ENTRY) inputs[input] = digestOf(input);
    const text = `${HEADER}${JSON.stringify({ entries, inputs })}\n${result.outputFiles[0].text}`;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
    // Other checkouts' bundles (and builds cut short) not written for a week: a checkout still there builds its own again.
    const dir = path.dirname(file);
    for (const name of fs.readdirSync(dir)) {
        const other = path.join(dir, name);
        try {
            if (other !== file && Date.now() - fs.statSync(other).mtimeMs > 7 * 86_400_000) fs.rmSync(other, { force: true });
        } catch {
            // removed by another build meanwhile
        }
    }
}

/** providers/*.ts's exports by name, from the bundle (built first when the files changed). */
function load() {
    const file = bundleFile();
    const entries = entryNames();
    let text = keptBundle(file, entries);
    if (text === undefined) {
        require("node:child_process").execFileSync(process.execPath, [__filename, "--build", file], { stdio: ["ignore", "ignore", "pipe"] });
        text = keptBundle(file, entries);
        if (text === undefined) throw new Error(`providers/plugin-bundle.cjs: the bundle built at ${file} does not match the providers' files`);
    }
    process.setSourceMapsEnabled(true);
    const bundle = new Module(bundleModulePath, module);
    bundle.filename = bundleModulePath;
    bundle.paths = Module._nodeModulePaths(providersDir);
    bundle._compile(text, bundleModulePath);
    return bundle.exports;
}

/**
 * Makes providers/<name>.ts load from the bundle in this process (one module
 * instance of each project file for all of them); any other .ts file loads
 * through `otherTs` (tsx's handler, registered by ts-hook.cjs when needed).
 * Where no bundle can be had (a cache that cannot be written, a file esbuild
 * refuses), every file loads through `otherTs`, as without the bundle: a
 * refused file fails there with tsx's own message.
 */
function install(otherTs) {
    let exportsByName;
    Module._extensions[".ts"] = function (module, filename) {
        if (exportsByName === undefined && path.dirname(filename) === providersDir) {
            try {
                exportsByName = load();
            } catch {
                exportsByName = null;
            }
        }
        if (!exportsByName || path.dirname(filename) !== providersDir) return otherTs()(module, filename);
        module.exports = exportsByName[path.basename(filename, ".ts")];
    };
}

if (require.main === module && process.argv[2] === "--build") {
    build(process.argv[3]).catch((e) => {
        process.stderr.write(`providers/plugin-bundle.cjs: ${e.message}\n`);
        process.exit(1);
    });
}

module.exports = { install, load };
