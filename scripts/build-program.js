#!/usr/bin/env node
// Compiles the stack program and the dynamic-provider implementations from
// TypeScript to JavaScript in <project>/.build (esbuild, file by file, no
// bundling, ~0.1 s), so that neither the program nor the provider process
// pays for a TypeScript compiler at every engine run. Type-checking is
// `npm run typecheck` (part of `npm test`), as before.
//
// It also writes .build/build-id, a hash of the output, the lockfile and the
// Node.js version: the plugin launcher runs one warm provider host per build
// (providers/host/main.ts), so changed code never runs in an old host.
//
//   node scripts/build-program.js [projectDir]
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

const project = path.resolve(process.argv[2] || path.join(__dirname, ".."));
const out = path.join(project, ".build");
const roots = ["index.ts", "components", "core", "providers", "remote"];

function sources(entry) {
    const full = path.join(project, entry);
    if (!fs.existsSync(full)) return [];
    if (fs.statSync(full).isFile()) return [full];
    return fs.readdirSync(full).flatMap((name) => sources(path.join(entry, name)));
}

const entryPoints = roots.flatMap(sources).filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"));
const result = require("esbuild").buildSync({
    entryPoints,
    write: false,
    outdir: out,
    outbase: project,
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcemap: true,
    logLevel: "warning",
});

// Write only what changed: another engine run's provider host may be loading
// these files right now, and a rewrite (truncate, then write) could show it half a file.
const hash = crypto.createHash("sha256");
for (const file of [...result.outputFiles].sort((a, b) => (a.path < b.path ? -1 : 1))) {
    hash.update(path.relative(out, file.path)).update("\0").update(file.contents);
    let current;
    try {
        current = fs.readFileSync(file.path);
    } catch {
        current = undefined;
    }
    if (!current || !current.equals(file.contents)) {
        fs.mkdirSync(path.dirname(file.path), { recursive: true });
        fs.writeFileSync(file.path, file.contents);
    }
}
const lock = path.join(project, "package-lock.json");
hash.update(process.version).update(fs.existsSync(lock) ? fs.readFileSync(lock) : "");
const id = hash.digest("hex").slice(0, 32) + "\n";
const idFile = path.join(out, "build-id");
fs.mkdirSync(out, { recursive: true });
if (!fs.existsSync(idFile) || fs.readFileSync(idFile, "utf8") !== id) fs.writeFileSync(idFile, id);
