// Finding, asking and stopping the warm provider hosts of this user
// (providers/host/main.ts; started by tools/engine/providerlauncher, which
// computes the same directory).
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import type { HostStats } from "../../remote/ssh";

export interface HostStatus {
    pid: number;
    /** The project directory it serves. */
    root: string;
    buildId: string;
    startedAt: string;
    /** Engine runs connected now. */
    engineConnections: number;
    idleStopSeconds: number;
    /** SSH connections opened and commands run per host since it started. */
    ssh: Record<string, HostStats>;
}

/** $XDG_RUNTIME_DIR/sglang-serve, else /tmp/sglang-serve-<uid>: where the hosts' sockets are. */
export function hostRuntimeDir(env: NodeJS.ProcessEnv = process.env): string {
    return env.XDG_RUNTIME_DIR ? path.join(env.XDG_RUNTIME_DIR, "sglang-serve") : `/tmp/sglang-serve-${process.getuid!()}`;
}

export function hostSockets(dir = hostRuntimeDir()): string[] {
    try {
        return fs
            .readdirSync(dir)
            .filter((f) => f.endsWith(".sock"))
            .map((f) => path.join(dir, f));
    } catch {
        return [];
    }
}

function ask(socket: string, op: "status" | "stop"): Promise<Record<string, unknown> | undefined> {
    return new Promise((resolve, reject) => {
        const c = net.connect(socket);
        let buf = "";
        c.setEncoding("utf8");
        c.on("connect", () => c.write(`${JSON.stringify({ op })}\n`));
        c.on("data", (d) => (buf += d));
        c.on("error", reject);
        c.on("close", () => resolve(buf.trim() ? (JSON.parse(buf.split("\n")[0]!) as Record<string, unknown>) : undefined));
    });
}

/** Status of every host that answers; sockets nobody answers on are left out. */
export async function hostStatuses(dir = hostRuntimeDir()): Promise<Array<HostStatus & { socket: string }>> {
    const out: Array<HostStatus & { socket: string }> = [];
    for (const socket of hostSockets(dir)) {
        const r = await ask(socket, "status").catch(() => undefined);
        if (r?.status) out.push({ ...(r.status as HostStatus), socket });
    }
    return out;
}

/** Stops the hosts (all, or those serving `root`) and waits until their sockets are gone. Returns how many stopped. */
export async function stopHosts(opts: { dir?: string; root?: string } = {}): Promise<number> {
    let stopped = 0;
    const real = (p: string) => {
        try {
            return fs.realpathSync(p);
        } catch {
            return path.resolve(p);
        }
    };
    for (const host of await hostStatuses(opts.dir)) {
        if (opts.root && real(opts.root) !== real(host.root)) continue;
        await ask(host.socket, "stop").catch(() => undefined);
        const end = Date.now() + 10_000;
        while (fs.existsSync(host.socket) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
        stopped++;
    }
    return stopped;
}
