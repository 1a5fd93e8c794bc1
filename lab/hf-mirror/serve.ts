// The mirror's process: `node --require ./ts-hook.cjs lab/hf-mirror/serve.ts
// --dir D --address A --port P --olah-port Q --olah-venv V`. It starts olah
// on A:Q (a child in its process group) and listens on A:P with the front
// (front.ts) at once; it prints `listening <url>` when the front is bound.
// It ends when olah ends (exit 1), on SIGTERM or SIGINT, and when its stdin
// closes (whoever started it is gone), taking olah with it. The
// dieMidDownload fault SIGKILLs both: the mirror dies as a crashed one does.
import { spawn } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import { frontHandler } from "./front";
import { mirrorDir } from "./mirror-dir";
import { olahArgv, olahConfigToml, olahEnv } from "./olah";

function args(argv: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (let i = 0; i < argv.length; i += 2) {
        const [k, v] = [argv[i]!, argv[i + 1]];
        if (!k.startsWith("--") || v === undefined) throw new Error(`serve.ts: expected --name value pairs, got ${argv.join(" ")}`);
        out[k.slice(2)] = v;
    }
    for (const k of ["dir", "address", "port", "olah-port", "olah-venv"]) if (!out[k]) throw new Error(`serve.ts: --${k} is required`);
    return out;
}

/** Resolves once host:port accepts a connection (polled every 50 ms). */
async function accepting(host: string, port: number, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
        const ok = await new Promise<boolean>((resolve) => {
            const s = net.connect({ host, port }, () => {
                s.destroy();
                resolve(true);
            });
            s.on("error", () => resolve(false));
        });
        if (ok) return;
        if (Date.now() > until) throw new Error(`olah did not accept connections on ${host}:${port} within ${timeoutMs / 1000} s`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

function main(): void {
    const a = args(process.argv.slice(2));
    const d = mirrorDir(a.dir!);
    const olahAt = { host: a.address!, port: Number(a["olah-port"]) };
    const publicNetloc = `${a.address}:${a.port}`;
    for (const p of [d.olahCache, d.olahLogs]) fs.mkdirSync(p, { recursive: true });
    fs.writeFileSync(d.olahConfig, olahConfigToml(d, olahAt, publicNetloc));

    const out = fs.openSync(d.olahOut, "a");
    const [cmd, ...rest] = olahArgv(a["olah-venv"]!, d);
    const olah = spawn(cmd!, rest, { cwd: d.dir, env: olahEnv(), stdio: ["ignore", out, out] });
    const stop = (code: number) => {
        olah.kill("SIGKILL");
        process.exit(code);
    };
    olah.on("exit", (code, signal) => {
        process.stderr.write(`hf-mirror: olah ended (${signal ?? `exit ${code}`}); see ${d.olahOut}\n`);
        process.exit(1);
    });
    process.on("SIGTERM", () => stop(0));
    process.on("SIGINT", () => stop(0));
    process.stdin.on("end", () => stop(0));
    process.stdin.resume();

    const olahReady = accepting(olahAt.host, olahAt.port, 120_000);
    olahReady.catch((e: Error) => {
        process.stderr.write(`hf-mirror: ${e.message}; see ${d.olahOut}\n`);
        stop(1);
    });
    const server = http.createServer(
        frontHandler({
            olah: olahAt,
            olahReady,
            faultsFile: d.faultsFile,
            accessLog: d.accessLog,
            die: () => {
                olah.kill("SIGKILL");
                process.kill(process.pid, "SIGKILL");
            },
        }),
    );
    server.on("error", (e) => {
        process.stderr.write(`hf-mirror: the front cannot listen on ${publicNetloc}: ${e.message}\n`);
        stop(1);
    });
    server.listen(Number(a.port), a.address, () => process.stdout.write(`listening http://${publicNetloc}\n`));
}

main();
