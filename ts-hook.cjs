// How node runs the project's TypeScript (`node --require ./ts-hook.cjs`,
// Pulumi.yaml's nodeargs, .mocharc.json, the dynamic providers): tsx's
// require hook, for the project's own .ts files only. Plain .js files (the
// SDK and every other package) load with node's own loader: tsx
// looks at every .js file it is handed (for ESM syntax, and source maps),
// which made loading @pulumi/pulumi cost about 0.75 CPU-s more per process,
// once per engine run. What tsx adds for .ts stays: the transpile (cached by
// content), its resolver, source-mapped stack traces.
"use strict";
const Module = require("node:module");

if (!Module._extensions[".ts"]) {
    const nodeJs = Module._extensions[".js"];
    require("tsx/cjs");
    Module._extensions[".js"] = nodeJs;
}
