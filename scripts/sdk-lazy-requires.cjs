// Modules that the engine's node processes load at start and never use in
// this project's runs, deferred to their first use. scripts/pulumi.sh puts
// this file in NODE_OPTIONS, so it is in every node process of an engine run:
// the program (`@pulumi/pulumi/cmd/run`) and the SDK's dynamic-provider plugin
// (`@pulumi/pulumi/cmd/dynamic-provider`, started by the engine for every
// engine run that reads or changes a dynamic resource, and once more by each
// `up`/`preview` to check the default provider's config), which load these
// before any project file. A plain `pulumi` run without it works the same,
// only slower (and with the source positions of source-map-support, below).
//
// - The TypeScript compiler (the plugin, through `typescript-shim.js`): the
//   SDK parses function bodies with it to serialize closures, and this
//   project's providers are module text (components/dynamic-provider.ts).
//   Loading it and npm's arborist was about 0.4 CPU-s of each plugin start: a
//   start took 1.0-1.26 CPU-s, 0.62-0.71 without them (process accounting,
//   2026-12-04, @pulumi/pulumi 3.248.0, Node 20). @pulumi/pulumi 3.276.0 no
//   longer loads arborist at all. The program does not load the compiler: it
//   imports the SDK's parts (components/pulumi.ts).
// - The Automation API (the plugin: the closure serializer loads the SDK's
//   index, which loads `./automation`: js-yaml, execa, its workspace) and
//   normalize-package-data (the closure serializer's package.json reader,
//   with its SPDX licence tables): only for closures, which the plugin never
//   serializes here.
// - The OpenTelemetry exporter, SDK and gRPC instrumentation that the
//   program's `cmd/run/tracing.js` loads for `--tracing URL` (its `start()`),
//   whether or not tracing is on. `@opentelemetry/api`, which every span
//   goes through, is not deferred.
// - zod's translations of its messages into other languages
//   (`z.locales`: about 40 files), which zod loads with itself in the program
//   and the plugin (core/config/schema.ts); English, the one used, is loaded
//   by zod on its own.
// Measured 2026-12-06 (Node 24, @pulumi/pulumi 3.276.0, 6 no-op `up`s of the
// lab's direct stack each, CPU-s of its node processes, medians): the program
// 1.02 before these four, 0.85 after; the plugin 0.87 and 0.25 (its second
// start) before, 0.80 and 0.18 after; the whole `up` 2.90 before, 2.58 after.
//
// And one module is replaced, not deferred: source-map-support, which the
// program and the plugin install first thing (`source-map-support/register`)
// to map stack frames through source maps. Its stand-in is never used, so it
// is never loaded, and node's own source maps, which tsx turns on
// (ts-hook.cjs), map the frames instead. source-map-support does not see
// tsx's maps: it put every resource's source position (the state's
// `sourcePosition`, which the SDK reads from a stack trace) in the transpiled
// code (`components/gpu-host.ts#2,1376`), where node's maps give the line of
// the TypeScript (`#53,23`; tests/e2e/engine-smoke-set.ts holds it). Mapping
// every debuggable promise's stack through it was about 0.18 CPU-s of a
// preview of the lab's stack (2.51 with it, 2.33 without, 6 previews each,
// 2026-12-06).
//
// How: `Module._load` answers those requests, from those files only, with a
// stand-in that requires the real module the first time it is used, so a
// caller that does use it gets the real thing. The module is resolved first,
// so a missing one still fails (or takes the SDK's own fallback) as before.
// Each stand-in has the shape its caller reads at load:
// - "namespace": `__importStar(require(x))`: an object; `__esModule` reads
//   true until loaded (`__importStar` then returns it as it is, without
//   listing its keys);
// - "function": `__importDefault(require(x)).default(...)` of a module that
//   is a function: callable, `__esModule` unset (so `__importDefault` wraps it);
// - "members": `const { A, b } = require(x)` of classes and functions only:
//   each name read gives a stand-in that calls or constructs the real one
//   (`new A()` is an instance of the real `A`).
"use strict";
const Module = require("node:module");
const path = require("node:path");

const pulumiFile = (f) => path.join("@pulumi", "pulumi", f);
const tracing = pulumiFile(path.join("cmd", "run", "tracing.js"));
const DEFERRED = [
    { request: "source-map-support/register", from: pulumiFile(path.join("cmd", "run", "index.js")), shape: "namespace" },
    { request: "source-map-support/register", from: pulumiFile(path.join("cmd", "dynamic-provider", "index.js")), shape: "namespace" },
    { request: "typescript", from: pulumiFile("typescript-shim.js"), shape: "namespace" },
    { request: "./automation", from: pulumiFile("index.js"), shape: "namespace" },
    { request: "normalize-package-data", from: pulumiFile(path.join("runtime", "closure", "codePaths.js")), shape: "function" },
    { request: "@opentelemetry/resources", from: tracing, shape: "members" },
    { request: "@opentelemetry/sdk-trace-base", from: tracing, shape: "members" },
    { request: "@opentelemetry/exporter-zipkin", from: tracing, shape: "members" },
    { request: "@opentelemetry/instrumentation-grpc", from: tracing, shape: "members" },
    { request: "@opentelemetry/sdk-trace-node", from: tracing, shape: "members" },
    { request: "@opentelemetry/instrumentation", from: tracing, shape: "members" },
    { request: "../locales/index.cjs", from: path.join("zod", "v4", "core", "index.cjs"), shape: "namespace" },
    { request: "../locales/index.cjs", from: path.join("zod", "v4", "classic", "external.cjs"), shape: "namespace" },
];

// A callable, constructible stand-in with no own keys a Proxy must keep (a bound function has no `prototype`).
const callable = () => function () {}.bind(null);

function forwarding(target) {
    return {
        get: (_, key) => Reflect.get(target(), key),
        has: (_, key) => Reflect.has(target(), key),
        ownKeys: () => Reflect.ownKeys(target()),
        getOwnPropertyDescriptor: (_, key) => {
            const d = Reflect.getOwnPropertyDescriptor(target(), key);
            return d && { ...d, configurable: true };
        },
        apply: (_, self, args) => Reflect.apply(target(), self, args),
        construct: (_, args) => Reflect.construct(target(), args),
    };
}

function deferred(load, request, parent, shape) {
    let real;
    const target = () => (real ??= load.call(Module, request, parent, false));
    if (shape === "members") {
        const members = new Map();
        const member = (key) => {
            if (!members.has(key))
                members.set(
                    key,
                    new Proxy(
                        callable(),
                        forwarding(() => target()[key]),
                    ),
                );
            return members.get(key);
        };
        return new Proxy({}, { get: (_, key) => (real === undefined && typeof key === "string" ? member(key) : Reflect.get(target(), key)) });
    }
    const handler = forwarding(target);
    const get = handler.get;
    handler.get = (t, key) => (key === "__esModule" && real === undefined ? shape === "namespace" || undefined : get(t, key));
    return new Proxy(shape === "function" ? callable() : {}, handler);
}

if (!Module._load.sglangServeDeferred) {
    const load = Module._load;
    const wrapped = function (request, parent) {
        const from = parent && parent.filename;
        const d = from && DEFERRED.find((d) => d.request === request && from.endsWith(path.sep + d.from));
        if (d) {
            try {
                Module._resolveFilename(request, parent, false);
            } catch {
                return load.apply(this, arguments);
            }
            return deferred(load, request, parent, d.shape);
        }
        return load.apply(this, arguments);
    };
    wrapped.sglangServeDeferred = true;
    Module._load = wrapped;
}
