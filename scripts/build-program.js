#!/usr/bin/env node
// Compiles the stack program and the dynamic-provider implementations from
// TypeScript to JavaScript in <project>/.build (esbuild, file by file, no
// bundling, ~0.1 s), so that neither the program nor the provider process
// pays for a TypeScript compiler at every engine run. Type-checking is
// `npm run typecheck` (part of `npm test`), as before.
//
//   node scripts/build-program.js [projectDir]
"use strict";
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
require("esbuild").buildSync({
    entryPoints,
    outdir: out,
    outbase: project,
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcemap: true,
    logLevel: "warning",
});
