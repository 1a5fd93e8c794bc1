// The provider host: serves the dynamic resources' gRPC provider to the engine.
//
//   node .build/providers/host/main.js <engine>            one engine connection (a process per engine run)
//   node .build/providers/host/main.js --daemon <socket>   the warm host (started by the plugin launcher,
//                                                           tools/engine/providerlauncher)
//
// The warm host is one process per user, project directory and build. Each
// connection on its unix socket is one engine run's plugin: it gets a gRPC
// server of its own (its own config, provider modules and output) and the
// process keeps what is expensive to redo on every run: Node.js with the
// modules loaded, and the SSH connections (remote/ssh.ts pool: one per host,
// reused only by callers with the same key and host-key pin). It exits after
// SGLANG_SERVE_PROVIDER_HOST_IDLE_SECONDS (default 600) without connections,
// when its project directory or build is gone, and on SIGTERM.
//
// Protocol, one JSON object per line. Plugin -> host: {"op":"open","engine":"<address>"}.
// Host -> plugin: {"port":N} (or {"error":"..."}), then {"out":"line"} / {"err":"line"}
// for that connection's progress. Closing the socket ends the connection's server.
// {"op":"status"} answers {"status":{...}}; {"op":"stop"} ends the host
// (providers/host/control.ts, `npm run provider-host`).
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import * as readline from "readline";
import { getSshPool } from "../../remote/ssh";
import type { HostStatus } from "./control";
import { ProviderConnection } from "./service";

async function serveOne(engine: string | undefined): Promise<void> {
    if (!engine) {
        console.error("fatal: Missing <engine> address");
        process.exit(1);
    }
    const connection = new ProviderConnection({ out: (l) => console.log(l), err: (l) => console.error(l) });
    const { port } = await connection.listen();
    console.log(String(port));
}

function log(message: string): void {
    process.stderr.write(`${new Date().toISOString()} ${message}\n`);
}

async function serveWarm(socketPath: string): Promise<void> {
    const idleMs = Number(process.env.SGLANG_SERVE_PROVIDER_HOST_IDLE_SECONDS ?? 600) * 1000;
    const root = process.cwd();
    const self = __filename;
    const buildIdFile = path.join(root, ".build", "build-id");
    const readBuildId = () => {
        try {
            return fs.readFileSync(buildIdFile, "utf8");
        } catch {
            return undefined;
        }
    };
    const buildId = readBuildId();
    // Connections stay open as long as the host may be asked again.
    getSshPool({ idleTimeoutMs: idleMs, log });
    const startedAt = new Date();
    let open = 0;
    let idleTimer: NodeJS.Timeout | undefined;
    let stopping = false;

    const stop = async (why: string) => {
        if (stopping) return;
        stopping = true;
        log(`stopping: ${why}`);
        server.close();
        try {
            fs.unlinkSync(socketPath);
        } catch {
            /* already gone */
        }
        await getSshPool().closeAll();
        // A clean stop leaves nothing to read: drop the log the launcher opened (<socket>.log).
        try {
            fs.unlinkSync(socketPath.replace(/\.sock$/, ".log"));
        } catch {
            /* not there */
        }
        process.exit(0);
    };
    const idle = () => {
        if (idleTimer) clearTimeout(idleTimer);
        idleTimer = open === 0 ? setTimeout(() => void stop(`no engine connection for ${idleMs / 1000} s`), idleMs) : undefined;
    };

    const server = net.createServer((socket) => {
        open++;
        idle();
        let closeServer: (() => void) | undefined;
        const send = (msg: object) => {
            if (!socket.destroyed) socket.write(`${JSON.stringify(msg)}\n`);
        };
        socket.on("error", () => socket.destroy());
        socket.on("close", () => {
            closeServer?.();
            open--;
            idle();
        });
        const lines = readline.createInterface({ input: socket });
        lines.once("line", (line) => {
            let req: { op?: string };
            try {
                req = JSON.parse(line);
            } catch {
                send({ error: "unreadable request" });
                socket.end();
                return;
            }
            if (req.op === "status") {
                const status: HostStatus = {
                    pid: process.pid,
                    root,
                    buildId: (buildId ?? "").trim(),
                    startedAt: startedAt.toISOString(),
                    engineConnections: open - 1,
                    idleStopSeconds: idleMs / 1000,
                    ssh: getSshPool().stats(),
                };
                send({ status });
                socket.end();
                return;
            }
            if (req.op === "stop") {
                socket.end();
                void stop("asked to stop");
                return;
            }
            if (req.op !== "open") {
                send({ error: `unknown op ${JSON.stringify(req.op)}` });
                socket.end();
                return;
            }
            const connection = new ProviderConnection({ out: (l) => send({ out: l }), err: (l) => send({ err: l }) });
            connection.listen().then(
                ({ port, close }) => {
                    if (socket.destroyed) return close();
                    closeServer = close;
                    send({ port });
                },
                (e) => {
                    send({ error: `cannot start a provider server: ${(e as Error).message}` });
                    socket.end();
                },
            );
        });
    });

    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        const mask = process.umask(0o077); // the socket is the user's only
        server.listen(socketPath, () => {
            process.umask(mask);
            resolve();
        });
    });
    log(`serving ${root} on ${socketPath} (pid ${process.pid})`);
    idle();
    // Test projects and old builds come and go: a host whose project or build is gone has nothing to serve,
    // and once the code is rebuilt, new engine runs go to a host of the new build.
    setInterval(() => {
        if (!fs.existsSync(path.join(root, "Pulumi.yaml")) || !fs.existsSync(self)) void stop("project or build removed");
        else if (open === 0 && readBuildId() !== buildId) void stop("the project was rebuilt");
    }, 2000);
    process.on("SIGTERM", () => void stop("SIGTERM"));
    process.on("SIGINT", () => void stop("SIGINT"));
    // One connection's stray failure must not end the others' runs.
    process.on("uncaughtException", (e) => log(`uncaught: ${e.stack ?? e}`));
    process.on("unhandledRejection", (e) => log(`unhandled rejection: ${(e as Error)?.stack ?? e}`));
}

const args = process.argv.slice(2);
if (args[0] === "--daemon") {
    serveWarm(args[1]).catch((e) => {
        log(`cannot serve on ${args[1]}: ${(e as Error).message}`);
        process.exit(1);
    });
} else {
    serveOne(args[0]).catch((e) => {
        console.error(`fatal: ${(e as Error).stack ?? e}`);
        process.exit(1);
    });
}
