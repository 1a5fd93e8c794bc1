// The SDK's dynamic-provider plugin (`@pulumi/pulumi/cmd/dynamic-provider`,
// started by the engine for every engine run that reads or changes a dynamic
// resource) loads the whole SDK, and with it the TypeScript compiler, which it
// never calls here: the SDK parses function bodies with it to serialize
// closures, and this project's providers are module text
// (components/dynamic-provider.ts). Loading it and npm's arborist was about
// 0.4 CPU-s of each plugin start: a start took 1.0-1.26 CPU-s, 0.62-0.71
// without them (process accounting, 2026-12-04, @pulumi/pulumi 3.248.0,
// Node 20). @pulumi/pulumi 3.276.0 no longer loads arborist at all; the
// compiler is still loaded by `typescript-shim.js`. The program does not load
// it: it imports the SDK's parts (components/pulumi.ts).
//
// Here it is a proxy that requires the real module the first time one of
// its properties is read, so a caller that does use it gets the real thing.
// Only that `require`, from that SDK file, is deferred; a
// missing `typescript` still takes the SDK's own fallback (its vendored copy),
// because the package is resolved before it is deferred.
//
// scripts/pulumi.sh puts it in NODE_OPTIONS, since the plugin loads the SDK
// before any project file. A plain `pulumi` run without it works the same,
// only slower.
"use strict";
const Module = require("node:module");
const path = require("node:path");

const DEFERRED = [{ request: "typescript", from: path.join("@pulumi", "pulumi", "typescript-shim.js") }];

function deferred(load, request, parent) {
    let real;
    const target = () => (real ??= load.call(Module, request, parent, false));
    return new Proxy(
        {},
        {
            // `__importStar` (codePaths.js) returns a module marked `__esModule` as it is, without listing its keys.
            get: (_, key) => (key === "__esModule" && real === undefined ? true : Reflect.get(target(), key)),
            has: (_, key) => Reflect.has(target(), key),
            ownKeys: () => Reflect.ownKeys(target()),
            getOwnPropertyDescriptor: (_, key) => {
                const d = Reflect.getOwnPropertyDescriptor(target(), key);
                return d && { ...d, configurable: true };
            },
        },
    );
}

if (!Module._load.sglangServeDeferred) {
    const load = Module._load;
    const wrapped = function (request, parent) {
        const from = parent && parent.filename;
        if (from && DEFERRED.some((d) => d.request === request && from.endsWith(d.from))) {
            try {
                Module._resolveFilename(request, parent, false);
            } catch {
                return load.apply(this, arguments);
            }
            return deferred(load, request, parent);
        }
        return load.apply(this, arguments);
    };
    wrapped.sglangServeDeferred = true;
    Module._load = wrapped;
}
