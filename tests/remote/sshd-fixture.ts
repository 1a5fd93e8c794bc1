// A real OpenSSH server for the tests, on a loopback address, with its own
// keys, config and PID file in a temporary directory. Needs root (sshd's
// privilege separation) and /usr/sbin/sshd.

import { ChildProcess, execFileSync, spawn } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import type { SshTarget } from "../../remote/ssh-target";

export const SSHD = "/usr/sbin/sshd";

function keygen(file: string, passphrase = ""): void {
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", passphrase, "-C", path.basename(file), "-f", file], { stdio: "ignore" });
}

/** The "type base64" part of a .pub file: what sglang-serve:host.hostKey holds. */
function pinOf(pubFile: string): string {
    const [type, b64] = fs.readFileSync(pubFile, "utf8").trim().split(/\s+/);
    return `${type} ${b64}`;
}

/** OpenSSH's own fingerprint of a public key file ("SHA256:..."). */
export function opensshFingerprint(pubFile: string): string {
    const out = execFileSync("ssh-keygen", ["-l", "-E", "sha256", "-f", pubFile], { encoding: "utf8" });
    return out.split(/\s+/)[1]!;
}

function freePort(address: string): Promise<number> {
    return new Promise((resolve, reject) => {
        const srv = net.createServer();
        srv.once("error", reject);
        srv.listen(0, address, () => {
            const { port } = srv.address() as net.AddressInfo;
            srv.close(() => resolve(port));
        });
    });
}

/** PIDs of every descendant of `pid`, from /proc. */
export function descendants(pid: number): number[] {
    const parent = new Map<number, number>();
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
            // "pid (comm) state ppid ...": comm may hold spaces, so parse after the last ")".
            const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
            parent.set(Number(entry), ppid);
        } catch {
            // The process exited while we looked.
        }
    }
    const out: number[] = [];
    const walk = (p: number): void => {
        for (const [child, pp] of parent) {
            if (pp === p) {
                out.push(child);
                walk(child);
            }
        }
    };
    walk(pid);
    return out;
}

function commOf(pid: number): string {
    try {
        return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
        return "";
    }
}

export class TestSshd {
    readonly address = "127.0.5.1";
    port = 0;
    readonly dir: string;
    private proc: ChildProcess | null = null;
    log = "";

    private constructor(dir: string) {
        this.dir = dir;
    }

    /** Keys and config; `start()` runs the daemon. */
    static async create(extraConfig: string[] = []): Promise<TestSshd> {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-sshd-"));
        fs.chmodSync(dir, 0o700);
        const d = new TestSshd(dir);
        keygen(d.file("host_key"));
        keygen(d.file("other_host_key"));
        keygen(d.file("client_key"));
        keygen(d.file("other_client_key"));
        keygen(d.file("protected_client_key"), "correct horse battery staple");
        fs.writeFileSync(
            d.file("authorized_keys"),
            fs.readFileSync(d.file("client_key.pub"), "utf8") + fs.readFileSync(d.file("protected_client_key.pub"), "utf8"),
            { mode: 0o600 },
        );
        fs.mkdirSync(d.file("bin"));
        fs.mkdirSync(d.file("home"));
        d.port = await freePort(d.address);
        fs.writeFileSync(
            d.file("sshd_config"),
            [
                `ListenAddress ${d.address}:${d.port}`,
                `HostKey ${d.file("host_key")}`,
                `AuthorizedKeysFile ${d.file("authorized_keys")}`,
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                // The temp dir lives under /tmp (mode 1777), which StrictModes rejects.
                "StrictModes no",
                `PidFile ${d.file("sshd.pid")}`,
                // Commands find the test's fake tools (pct) first, and run with an empty HOME, so bash reads no
                // dotfile of this machine (on CI and here root's ~/.bashrc runs pyenv init, whose rehash races
                // between sessions and writes to stderr). sshd keeps only the first SetEnv line (servconf.c), so
                // both are on this one. Sessions then start fast enough that sshd's late freeing of a session slot
                // shows, which the pool handles (remote/ssh-pool.ts, a refused channel opened again).
                `SetEnv PATH=${d.file("bin")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=${d.file("home")}`,
                "LogLevel VERBOSE",
                ...extraConfig,
                "",
            ].join("\n"),
        );
        return d;
    }

    file(name: string): string {
        return path.join(this.dir, name);
    }

    /** Start the daemon (again) on the same port; resolves once it listens. */
    async start(): Promise<void> {
        // Privilege separation needs this directory; a fresh container may lack it.
        fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
        const proc = spawn(SSHD, ["-D", "-e", "-f", this.file("sshd_config")], { stdio: ["ignore", "ignore", "pipe"] });
        this.proc = proc;
        await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`sshd did not start:\n${this.log}`)), 10_000);
            proc.stderr!.on("data", (d: Buffer) => {
                this.log += d.toString();
                if (this.log.includes("Server listening on")) {
                    clearTimeout(timer);
                    resolve();
                }
            });
            proc.once("exit", (code) => {
                clearTimeout(timer);
                reject(new Error(`sshd exited ${code}:\n${this.log}`));
            });
        });
    }

    /** Kill every session (the per-connection sshd processes and their commands); the daemon keeps listening. */
    killSessions(): number {
        if (!this.proc?.pid) return 0;
        const pids = descendants(this.proc.pid);
        for (const p of pids) {
            try {
                process.kill(p, "SIGKILL");
            } catch {
                // Already gone.
            }
        }
        return pids.length;
    }

    /** Wait until a command named `comm` runs under this sshd (a session is executing it). */
    async waitForCommand(comm: string, timeoutMs = 5000): Promise<void> {
        const deadline = Date.now() + timeoutMs;
        while (Date.now() < deadline) {
            if (this.proc?.pid && descendants(this.proc.pid).some((p) => commOf(p) === comm)) return;
            await new Promise((r) => setTimeout(r, 20));
        }
        throw new Error(`no ${comm} process under sshd within ${timeoutMs} ms`);
    }

    /** Stop the daemon and every session. */
    async stop(): Promise<void> {
        const proc = this.proc;
        if (!proc || proc.exitCode !== null) return;
        this.killSessions();
        await new Promise<void>((resolve) => {
            proc.once("exit", () => resolve());
            proc.kill("SIGKILL");
        });
        this.proc = null;
    }

    async destroy(): Promise<void> {
        await this.stop();
        fs.rmSync(this.dir, { recursive: true, force: true });
    }

    get hostKey(): string {
        return pinOf(this.file("host_key.pub"));
    }

    get otherHostKey(): string {
        return pinOf(this.file("other_host_key.pub"));
    }

    target(overrides: Partial<SshTarget> = {}): SshTarget {
        return {
            address: this.address,
            port: this.port,
            user: os.userInfo().username,
            hostKey: this.hostKey,
            privateKey: fs.readFileSync(this.file("client_key"), "utf8"),
            label: "test-sshd",
            ...overrides,
        };
    }
}
