// How node runs the project's TypeScript (`node --require ./ts-hook.cjs`,
// Pulumi.yaml's nodeargs, .mocharc.json, the dynamic providers): tsx's
// require hook, for the project's own .ts files only. Plain .js files (the
// SDK and every other package) load with node's own loader: tsx
// looks at every .js file it is handed (for ESM syntax, and source maps),
// which made loading @pulumi/pulumi cost about 0.75 CPU-s more per process,
// once per engine run. What tsx adds for .ts stays: the transpile (cached by
// content), its resolver, source-mapped stack traces.
//
// In the SDK's dynamic-provider plugin, providers/*.ts load from one bundle
// of them, checked against the checkout's files at each load
// (providers/plugin-bundle.cjs); tsx is registered there only if another .ts
// file is loaded.
"use strict";
const Module = require("node:module");
const path = require("node:path");

/** Registers tsx's require hook (its .ts handler and resolver), keeping node's own loader for .js; returns tsx's .ts handler. */
function registerTsx() {
    const nodeJs = Module._extensions[".js"];
    require("tsx/cjs");
    Module._extensions[".js"] = nodeJs;
    return Module._extensions[".ts"];
}

const main = require.main?.filename ?? "";
if (Module._extensions[".ts"]) {
    // Registered already: this file was required before in this process.
} else if (main.endsWith(path.join("@pulumi", "pulumi", "cmd", "dynamic-provider", "index.js"))) {
    let tsx;
    require("./providers/plugin-bundle.cjs").install(() => {
        if (!tsx) {
            const bundled = Module._extensions[".ts"];
            tsx = registerTsx();
            Module._extensions[".ts"] = bundled;
        }
        return tsx;
    });
} else {
    registerTsx();
}
