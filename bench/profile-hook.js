// Preloaded into every node process of one profiled engine run by
// `npm run bench` (NODE_OPTIONS=--require <this file>): writes, as JSON
// lines to $SGLANG_BENCH_PROFILE_LOG, when the process started; how long it
// spent loading the Pulumi SDK, TypeScript, ts-node, gRPC, ssh2, zod and the
// project's own code (.ts through tsx or ts-node; inclusive, outermost load
// only); every dynamic-provider RPC (check, diff,
// read, ...) with its duration; and when it exited. Plain JavaScript: it runs
// before any TypeScript loader.
"use strict";
const fs = require("fs");
const Module = require("module");
const { performance } = require("perf_hooks");

const LOG = process.env.SGLANG_BENCH_PROFILE_LOG;
const LOADED = Symbol.for("sglang-serve.bench.profileHook");
// Worker threads share the process: skip them.
if (LOG && !globalThis[LOADED] && require("worker_threads").isMainThread) {
    globalThis[LOADED] = true;
    const argv = process.argv.join(" ");
    const role = /cmd[\\/]run/.test(argv)
        ? "program"
        : /dynamic-provider/.test(argv)
          ? "provider"
          : process.argv.includes("-e") || process.execArgv.includes("-e") || process.argv.length <= 1
            ? "resolver"
            : "other";
    const pid = process.pid;
    const write = (o) => {
        try {
            fs.appendFileSync(LOG, JSON.stringify({ pid, role, t: performance.timeOrigin + performance.now(), ...o }) + "\n");
        } catch {
            /* the bench may be gone */
        }
    };
    write({ ev: "start", startedAt: performance.timeOrigin });

    // Libraries whose load time is reported (inclusive, outermost load only).
    const LIBS = [
        ["sdk", /node_modules[\\/]@pulumi[\\/]pulumi[\\/]index\.js$/],
        ["typescript", /node_modules[\\/]typescript[\\/]lib[\\/]typescript\.js$/],
        ["ts-node", /node_modules[\\/]ts-node[\\/]dist[\\/]index\.js$/],
        ["ssh2", /node_modules[\\/]ssh2[\\/]lib[\\/]index\.js$/],
        ["zod", /node_modules[\\/]zod[\\/]/],
        ["grpc", /node_modules[\\/]@grpc[\\/]grpc-js[\\/]build[\\/]src[\\/]index\.js$/],
    ];
    const stack = [];
    const totals = {};
    let projectFiles = 0;
    const origLoad = Module._load;
    Module._load = function (request, parent, isMain) {
        let file = "";
        try {
            file = Module._resolveFilename(request, parent, isMain);
        } catch {
            return origLoad.apply(this, arguments);
        }
        if (Module._cache[file]) return origLoad.apply(this, arguments);
        let kind = null;
        for (const [name, re] of LIBS) if (re.test(file)) kind = name;
        // The project's own code: TypeScript (through tsx or ts-node).
        if (!kind && !/node_modules/.test(file) && /\.ts$/.test(file) && !/\.d\.ts$/.test(file)) kind = "project";
        if (!kind) return origLoad.apply(this, arguments);
        if (kind === "project") projectFiles++;
        const outermost = !stack.includes(kind);
        stack.push(kind);
        const t0 = performance.now();
        try {
            const exported = origLoad.apply(this, arguments);
            if (kind === "grpc" && role === "provider" && exported && exported.Server && !exported.Server.prototype.__benchWrapped) {
                // Time every provider RPC (check, diff, read, update, ...) from request to response.
                const addService = exported.Server.prototype.addService;
                exported.Server.prototype.addService = function (service, implementation) {
                    // The SDK passes a class instance: its methods live on the prototype chain.
                    const names = new Set();
                    for (let o = implementation; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
                        for (const n of Object.getOwnPropertyNames(o)) if (n !== "constructor") names.add(n);
                    }
                    const wrapped = {};
                    for (const name of names) {
                        const fn = implementation[name];
                        wrapped[name] =
                            typeof fn !== "function"
                                ? fn
                                : function (call, callback) {
                                      const s = performance.now();
                                      const startT = performance.timeOrigin + s;
                                      const done = (err, value, ...rest) => {
                                          write({
                                              ev: "rpc",
                                              method: name,
                                              start: startT,
                                              ms: performance.now() - s,
                                              error: err ? String(err.message || err).slice(0, 200) : undefined,
                                          });
                                          return callback(err, value, ...rest);
                                      };
                                      return fn.call(implementation, call, done);
                                  };
                    }
                    return addService.call(this, service, wrapped);
                };
                exported.Server.prototype.__benchWrapped = true;
            }
            return exported;
        } finally {
            stack.pop();
            if (outermost) {
                const ms = performance.now() - t0;
                totals[kind] = (totals[kind] ?? 0) + ms;
                write({ ev: "load", kind, file, ms, nested: stack.length > 0, projectFiles });
            }
        }
    };
    process.on("exit", () => {
        write({ ev: "exit", loadMs: totals, projectFiles, uptimeMs: performance.now() });
    });
}
