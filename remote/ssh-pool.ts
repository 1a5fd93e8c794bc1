// SSH connection pool on ssh2: one connection per host, pinned host keys,
// bounded channels, bounded reconnects. What it runs commands on and what a
// command takes and gives are in ssh-target.ts, its error in ssh-error.ts,
// the pin in ssh-host-key.ts.
//
// Who holds the pool: the provider run (providers/provider-run.ts), one per
// dynamic-provider process, handed to every provider verb; tests hand in
// their own. Nothing here is process-wide: the module holds no connection.
//
// Secrets: the private key and its passphrase live only in the SshTarget
// passed in (memory), or the key stays in ssh-agent (SshTarget.agent: only
// the agent's socket path is here); stdin carries file contents. None of them is ever put in
// an error message, a log line or a command line (`redactTarget` is the last guard).

import { constants as osConstants } from "os";
import { Client, ClientChannel, ConnectConfig } from "ssh2";
import { fingerprintOfKeyBlob, keyTypeOfBlob } from "../core/secrets/host-key";
import { writeFileScript } from "../core/write-file-script";
import { SshError } from "./ssh-error";
import { hostKeyAlgorithms, parsePinnedHostKey, PinnedKey } from "./ssh-host-key";
import { ExecOptions, ExecResult, hostId, hostName, redactTarget, SshTarget } from "./ssh-target";

export interface HostStats {
    /** TCP+SSH connections opened (attempts, including failed ones). */
    connectionsOpened: number;
    /** Commands run (session channels opened). */
    commandsRun: number;
    /** Reconnects after a dropped or failed connection. */
    reconnects: number;
    /** Most channels open at once on one connection. */
    maxConcurrentChannels: number;
}

export interface SshPoolOptions {
    /** Concurrent session channels per connection. sshd's MaxSessions defaults to 10. Default 8. */
    maxChannelsPerConnection?: number;
    /** Reconnect attempts after a dropped connection. Default 3. */
    maxRetries?: number;
    /** First backoff before reconnecting; doubles per attempt. Default 250 ms. */
    retryBackoffMs?: number;
    /** TCP connect + SSH handshake + auth limit. Default 20 s. */
    connectTimeoutMs?: number;
    /** ssh2 keepalive: a dead peer is noticed after interval * countMax. Defaults 10 s, 3. */
    keepaliveIntervalMs?: number;
    keepaliveCountMax?: number;
    /** Idle connections are closed after this long (so scripts can exit). Default 60 s. */
    idleTimeoutMs?: number;
    /** Reconnect notices. Default: stderr. */
    log?: (message: string) => void;
    /** Every command sent (the command string only, never stdin); for tests and debugging. */
    onCommand?: (host: string, command: string) => void;
}

// ---------------------------------------------------------------------------
// Messages and transport errors

/** The command as shown in errors: bounded, so a long script does not drown the message. */
function commandSummary(command: string): string {
    const oneLine = command.replace(/\s+/g, " ");
    return oneLine.length <= 300 ? oneLine : `${oneLine.slice(0, 300)}…`;
}

function tail(text: string, maxLines: number, maxChars: number): string {
    const lines = text.trimEnd().split("\n").slice(-maxLines).join("\n");
    return lines.length <= maxChars ? lines : `…${lines.slice(-maxChars)}`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How often a session channel refused on a busy connection is opened again (see execOnce). */
const MAX_CHANNEL_REFUSALS = 16;

// Socket errors that mean "the network or the server went away", worth a reconnect.
const TRANSIENT_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "EHOSTDOWN"]);

interface Ssh2Error extends Error {
    level?: string;
    code?: string | number;
}

// ---------------------------------------------------------------------------
// The pool

interface Conn {
    id: string;
    target: SshTarget;
    client: Client;
    ready: Promise<void>;
    /** Set once the connection ended, errored or closed: never hand it out again. */
    dead: boolean;
    /** Why it died (ECONNRESET, end of stream, ...), for messages. */
    deathReason: string | null;
    /** Channels the pool holds (opening or open), at most maxChannels. */
    active: number;
    waiters: Array<() => void>;
    /** Channels the server accepted that have not closed yet. */
    open: number;
    /** Called when one of those closes. */
    closeWaiters: Array<() => void>;
    /** Whether the server has accepted a channel on this connection. */
    accepted: boolean;
    idleTimer: NodeJS.Timeout | null;
}

export class SshPool {
    private readonly conns = new Map<string, Conn>();
    private statsByHost = new Map<string, HostStats>();
    private readonly maxChannels: number;
    private readonly maxRetries: number;
    private readonly backoffMs: number;
    private readonly connectTimeoutMs: number;
    private readonly keepaliveIntervalMs: number;
    private readonly keepaliveCountMax: number;
    private readonly idleTimeoutMs: number;
    log: (message: string) => void;
    private readonly onCommand?: (host: string, command: string) => void;

    constructor(options: SshPoolOptions = {}) {
        this.maxChannels = options.maxChannelsPerConnection ?? 8;
        this.maxRetries = options.maxRetries ?? 3;
        this.backoffMs = options.retryBackoffMs ?? 250;
        this.connectTimeoutMs = options.connectTimeoutMs ?? 20_000;
        this.keepaliveIntervalMs = options.keepaliveIntervalMs ?? 10_000;
        this.keepaliveCountMax = options.keepaliveCountMax ?? 3;
        this.idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
        this.log = options.log ?? ((m) => process.stderr.write(`${m}\n`));
        this.onCommand = options.onCommand;
    }

    /** Run a command; a non-zero exit is returned, not thrown. Throws SshError for transport problems. */
    async exec(target: SshTarget, command: string, opts: ExecOptions = {}): Promise<ExecResult> {
        const host = hostName(target);
        const pinned = parsePinnedHostKey(target.hostKey, host);
        if (target.privateKey === undefined && !target.agent) {
            throw new SshError("config", `ssh: no private key and no ssh-agent to log in to ${host} with`, hostId(target));
        }
        const log = opts.log ?? this.log;
        const maxRetries = opts.retry === false ? 0 : this.maxRetries;
        for (let attempt = 0; ; attempt++) {
            try {
                return await this.execOnce(target, pinned, command, opts);
            } catch (e) {
                if (!(e instanceof SshError) || e.kind !== "connection") throw e;
                if (attempt >= maxRetries) {
                    throw new SshError(
                        "connection",
                        `ssh: connection to ${host} ${e.message}; gave up after ${maxRetries} reconnect attempt(s) ` +
                            `(command: ${redactTarget(commandSummary(command), target, opts.stdin)})`,
                        e.host,
                        e.reason,
                    );
                }
                this.hostStats(hostId(target)).reconnects++;
                const verb = e.message.startsWith("dropped") ? "reconnecting" : "retrying";
                log(`ssh: connection to ${host} ${e.message}; ${verb} (${attempt + 1}/${maxRetries})`);
                await sleep(this.backoffMs * 2 ** attempt);
            }
        }
    }

    /** Like exec, but a non-zero exit throws an SshError naming the command, the exit code and stderr's tail. */
    async execChecked(target: SshTarget, command: string, opts: ExecOptions = {}): Promise<ExecResult> {
        const r = await this.exec(target, command, opts);
        if (r.code !== 0) {
            const err = tail(r.stderr, 20, 2000) || tail(r.stdout, 5, 500);
            throw new SshError(
                "command",
                redactTarget(
                    `ssh ${hostName(target)}: command failed with exit code ${r.code}${r.signal ? ` (signal ${r.signal})` : ""}: ` +
                        `${commandSummary(command)}${err ? `\n${err}` : ""}`,
                    target,
                    opts.stdin,
                ),
                hostId(target),
            );
        }
        return r;
    }

    /**
     * Write a file atomically (tmp + rename) with the given mode; the content goes
     * through stdin, never on a command line. Runs through a POSIX shell.
     */
    async writeFile(target: SshTarget, path: string, content: string | Buffer, mode: number): Promise<void> {
        await this.execChecked(target, writeFileScript(path, mode), { stdin: content });
    }

    /** Connections opened and commands run per host (user@address:port) since the last reset. */
    stats(): Record<string, HostStats> {
        const out: Record<string, HostStats> = {};
        for (const [k, v] of this.statsByHost) out[k] = { ...v };
        return out;
    }

    resetStats(): void {
        this.statsByHost = new Map();
    }

    /** Close the connection to one host, if any. */
    async close(target: Pick<SshTarget, "user" | "address" | "port">): Promise<void> {
        const conn = this.conns.get(hostId(target));
        if (conn) await this.endConn(conn);
    }

    /** Close every connection (end of a Pulumi operation, end of a test). */
    async closeAll(): Promise<void> {
        await Promise.all([...this.conns.values()].map((c) => this.endConn(c)));
    }

    // -------------------------------------------------------------------------

    private hostStats(id: string): HostStats {
        let s = this.statsByHost.get(id);
        if (!s) {
            s = { connectionsOpened: 0, commandsRun: 0, reconnects: 0, maxConcurrentChannels: 0 };
            this.statsByHost.set(id, s);
        }
        return s;
    }

    private async execOnce(target: SshTarget, pinned: PinnedKey, command: string, opts: ExecOptions): Promise<ExecResult> {
        const conn = this.connection(target, pinned);
        await conn.ready;
        for (let refusals = 0; ; refusals++) {
            await this.acquire(conn);
            try {
                return await this.runChannel(conn, command, opts);
            } catch (e) {
                // sshd counts a session against MaxSessions until it has torn the
                // channel down, a moment after the close the pool saw; on a loaded
                // box that lag can outrun the pool's slack below MaxSessions. So a
                // refusal on a connection whose server has accepted channels, or
                // while others are being opened, is taken as "too many sessions
                // just now" (that, or a box whose MaxSessions is below the pool's
                // bound): the command never started, so it is opened again after
                // the next close, with a growing backoff. A lone refusal from a
                // server that never accepted a channel here is its answer: the error.
                const busy = conn.accepted || conn.active > 1;
                if (!(e instanceof SshError) || e.kind !== "channel" || !busy || refusals >= MAX_CHANNEL_REFUSALS) throw e;
            } finally {
                this.release(conn);
            }
            await this.afterNextClose(conn, refusals);
        }
    }

    /**
     * Resolves after the next close of a channel the server accepted on the
     * connection (at most a second's wait; none when none is open), and then a
     * backoff that grows with the refusals: sshd frees the slot after the
     * close, so opening again at the close itself would be refused again.
     */
    private async afterNextClose(conn: Conn, refusals: number): Promise<void> {
        if (conn.open > 0 && !conn.dead) {
            let timer: NodeJS.Timeout | undefined;
            await new Promise<void>((resolve) => {
                conn.closeWaiters.push(resolve);
                timer = setTimeout(resolve, 1000);
            });
            clearTimeout(timer);
        }
        await sleep(Math.min(this.backoffMs * 2 ** Math.min(refusals, 4), 2000));
    }

    /** The live connection for a target, or a new one. Synchronous so concurrent callers share one connect. */
    private connection(target: SshTarget, pinned: PinnedKey): Conn {
        const id = hostId(target);
        const existing = this.conns.get(id);
        if (existing && !existing.dead) {
            // Same address, other credentials or pin (a rotated key within one
            // process): do not reuse a connection authenticated for the old ones.
            if (
                existing.target.hostKey === target.hostKey &&
                existing.target.privateKey === target.privateKey &&
                existing.target.passphrase === target.passphrase &&
                existing.target.agent === target.agent
            ) {
                return existing;
            }
            void this.endConn(existing);
        }
        const conn = this.connect(target, pinned);
        this.conns.set(id, conn);
        return conn;
    }

    private connect(target: SshTarget, pinned: PinnedKey): Conn {
        const id = hostId(target);
        const host = hostName(target);
        this.hostStats(id).connectionsOpened++;
        const client = new Client();
        let offeredKey: Buffer | null = null;
        let isReady = false;
        const conn: Conn = {
            id,
            target,
            client,
            ready: Promise.resolve(),
            dead: false,
            deathReason: null,
            active: 0,
            waiters: [],
            open: 0,
            accepted: false,
            closeWaiters: [],
            idleTimer: null,
        };
        const markDead = (reason: string): void => {
            if (!conn.dead) {
                conn.dead = true;
                conn.deathReason = reason;
            }
            if (this.conns.get(id) === conn) this.conns.delete(id);
            if (conn.idleTimer) clearTimeout(conn.idleTimer);
            // Wake queued commands: they will find the connection dead and retry.
            for (const w of conn.waiters.splice(0)) w();
        };

        conn.ready = new Promise<void>((resolve, reject) => {
            client.on("ready", () => {
                isReady = true;
                resolve();
            });
            client.on("error", (err: Ssh2Error) => {
                const reason = typeof err.code === "string" ? err.code : err.message;
                if (isReady) {
                    // After the handshake: a drop. Running channels see it on close.
                    markDead(reason);
                    return;
                }
                markDead(reason);
                reject(this.connectError(err, target, host, pinned, offeredKey));
            });
            client.on("end", () => markDead(conn.deathReason ?? "connection ended"));
            client.on("close", () => {
                markDead(conn.deathReason ?? "connection closed");
                if (!isReady) {
                    reject(new SshError("connection", `failed (connection closed during the handshake)`, id, "closed"));
                }
            });
        });
        // Unhandled-rejection guard: the promise is awaited by execOnce, but a
        // connection that fails while nobody waits must not crash the process.
        conn.ready.catch(() => undefined);

        const config: ConnectConfig = {
            host: target.address,
            port: target.port,
            username: target.user,
            // A key given wins; the agent is offered only without one (never both: one identity per stack).
            ...(target.privateKey !== undefined ? { privateKey: target.privateKey, passphrase: target.passphrase } : { agent: target.agent }),
            readyTimeout: this.connectTimeoutMs,
            keepaliveInterval: this.keepaliveIntervalMs,
            keepaliveCountMax: this.keepaliveCountMax,
            tryKeyboard: false,
            algorithms: { serverHostKey: hostKeyAlgorithms(pinned.type) },
            // The pin is the only trust: compare the offered blob byte for byte.
            hostVerifier: (key: Buffer): boolean => {
                if (key.equals(pinned.blob)) return true;
                offeredKey = Buffer.from(key);
                return false;
            },
        };
        try {
            client.connect(config);
        } catch (e) {
            // ssh2 throws synchronously for an unparsable private key; its message
            // names the problem, not the key, but redact anyway.
            markDead("config");
            const err = new SshError("config", redactTarget(`ssh: cannot connect to ${host}: ${(e as Error).message}`, target), id);
            conn.ready = Promise.reject(err);
            conn.ready.catch(() => undefined);
        }
        this.armIdle(conn);
        return conn;
    }

    /** Turn an ssh2 error before `ready` into an SshError: non-retryable kinds first. */
    private connectError(err: Ssh2Error, target: SshTarget, host: string, pinned: PinnedKey, offered: Buffer | null): SshError {
        const id = hostId(target);
        if (offered) {
            return new SshError(
                "host-key",
                `ssh: HOST KEY MISMATCH for ${host}: it offered ${keyTypeOfBlob(offered) ?? "?"} ${fingerprintOfKeyBlob(offered)} ` +
                    `but the pinned key is ${pinned.type} ${fingerprintOfKeyBlob(pinned.blob)}. ` +
                    `Refusing to connect. If the host was really re-keyed, update sglang-serve:host.hostKey.`,
                id,
            );
        }
        if (/host key/i.test(err.message) && /no matching|Handshake failed/i.test(err.message)) {
            return new SshError(
                "host-key",
                `ssh: ${host} offers no ${pinned.type} host key, the type of the pinned key ${fingerprintOfKeyBlob(pinned.blob)} (${err.message})`,
                id,
            );
        }
        if (err.level === "agent") {
            return new SshError(
                "auth",
                `ssh: the ssh-agent at ${target.agent ?? "(none)"} (SSH_AUTH_SOCK) cannot be used to log in to ${host}: ${err.message}. ` +
                    "Start an agent and add the key (`eval $(ssh-agent)`, `ssh-add`), or set sglang-serve:host.sshPrivateKeyPath",
                id,
            );
        }
        if (err.level === "client-authentication") {
            const what = target.privateKey !== undefined ? "the private key" : `every key of the ssh-agent at ${target.agent ?? "(none)"}`;
            return new SshError(
                "auth",
                `ssh: authentication as ${target.user} to ${host} failed: the server refused ${what} ` +
                    `(check that its public key is in ${target.user}'s authorized_keys${target.privateKey === undefined ? "; `ssh-add -l` lists the agent's keys" : ""})`,
                id,
            );
        }
        const code = typeof err.code === "string" ? err.code : undefined;
        if ((code && TRANSIENT_CODES.has(code)) || err.level === "client-timeout") {
            const reason = code ?? err.message;
            return new SshError("connection", `failed (${reason})`, id, reason);
        }
        return new SshError("config", redactTarget(`ssh: cannot connect to ${host}: ${err.message}`, target), id);
    }

    private dropped(conn: Conn, reason?: string): SshError {
        const r = reason ?? conn.deathReason ?? "connection closed";
        return new SshError("connection", `dropped (${r})`, conn.id, r);
    }

    private async acquire(conn: Conn): Promise<void> {
        while (!conn.dead && conn.active >= this.maxChannels) {
            await new Promise<void>((resolve) => conn.waiters.push(resolve));
        }
        if (conn.dead) throw this.dropped(conn);
        conn.active++;
        if (conn.idleTimer) {
            clearTimeout(conn.idleTimer);
            conn.idleTimer = null;
        }
        const s = this.hostStats(conn.id);
        s.maxConcurrentChannels = Math.max(s.maxConcurrentChannels, conn.active);
    }

    private release(conn: Conn): void {
        conn.active--;
        conn.waiters.shift()?.();
        this.armIdle(conn);
    }

    private armIdle(conn: Conn): void {
        if (conn.dead || conn.active > 0 || this.idleTimeoutMs <= 0) return;
        if (conn.idleTimer) clearTimeout(conn.idleTimer);
        conn.idleTimer = setTimeout(() => {
            if (conn.active === 0) void this.endConn(conn);
        }, this.idleTimeoutMs);
        // An idle connection must not keep a script alive.
        conn.idleTimer.unref();
    }

    private endConn(conn: Conn): Promise<void> {
        if (this.conns.get(conn.id) === conn) this.conns.delete(conn.id);
        if (conn.idleTimer) clearTimeout(conn.idleTimer);
        if (conn.dead) return Promise.resolve();
        conn.dead = true;
        conn.deathReason = "closed by the pool";
        for (const w of conn.waiters.splice(0)) w();
        return new Promise<void>((resolve) => {
            const t = setTimeout(() => {
                conn.client.destroy();
                resolve();
            }, 2000);
            t.unref();
            conn.client.once("close", () => {
                clearTimeout(t);
                resolve();
            });
            conn.client.end();
        });
    }

    private runChannel(conn: Conn, command: string, opts: ExecOptions): Promise<ExecResult> {
        const target = conn.target;
        const host = hostName(target);
        return new Promise<ExecResult>((resolve, reject) => {
            let settled = false;
            let timer: NodeJS.Timeout | null = null;
            const settle = (fn: () => void): void => {
                if (settled) return;
                settled = true;
                if (timer) clearTimeout(timer);
                fn();
            };
            const onOpen = (err: Error | undefined, ch: ClientChannel): void => {
                if (err) {
                    settle(() =>
                        reject(
                            conn.dead || /No response from server|Not connected/.test(err.message)
                                ? this.dropped(conn)
                                : new SshError("channel", `ssh ${host}: the server refused a session channel: ${err.message}`, conn.id),
                        ),
                    );
                    return;
                }
                conn.open++;
                conn.accepted = true;
                ch.once("close", () => {
                    conn.open--;
                    for (const w of conn.closeWaiters.splice(0)) w();
                });
                const out: Buffer[] = [];
                const errOut: Buffer[] = [];
                let exit: { code: number | null; signal?: string } | null = null;
                ch.on("data", (d: Buffer) => out.push(d));
                ch.stderr.on("data", (d: Buffer) => errOut.push(d));
                ch.on("exit", (code: number | null, signal?: string) => {
                    exit = { code, signal: signal ?? undefined };
                });
                // Writes after the far end closed surface here; the close handler decides.
                ch.on("error", () => undefined);
                ch.on("close", () => {
                    settle(() => {
                        const e = exit as { code: number | null; signal?: string } | null;
                        if (e) {
                            const signal = e.signal?.replace(/^SIG/, "");
                            const code = e.code ?? (signal ? 128 + signalNumber(signal) : 255);
                            resolve({
                                code,
                                ...(signal ? { signal } : {}),
                                stdout: Buffer.concat(out).toString("utf8"),
                                stderr: Buffer.concat(errOut).toString("utf8"),
                            });
                        } else if (conn.dead) {
                            reject(this.dropped(conn));
                        } else {
                            // The channel closed without an exit status while the connection
                            // lives on: the same as a drop for the caller (the command's fate
                            // is unknown), and a fresh connection is the safe way on.
                            void this.endConn(conn);
                            reject(this.dropped(conn, "channel closed without an exit status"));
                        }
                    });
                });
                if (opts.stdin !== undefined) ch.end(opts.stdin);
                else ch.end();
                if (opts.timeoutMs !== undefined) {
                    timer = setTimeout(() => {
                        settle(() => {
                            // OpenSSH honours "signal" since 7.9; closing the channel ends the
                            // session either way. Do not wait for the far end: it may be the
                            // thing that hangs.
                            try {
                                ch.signal("KILL");
                            } catch {
                                /* the channel may be gone already */
                            }
                            ch.close();
                            reject(new SshError("timeout", `ssh ${host}: command timed out after ${opts.timeoutMs} ms: ${commandSummary(command)}`, conn.id));
                        });
                    }, opts.timeoutMs);
                }
            };
            this.hostStats(conn.id).commandsRun++;
            this.onCommand?.(conn.id, command);
            try {
                conn.client.exec(command, onOpen);
            } catch (e) {
                // ssh2 throws "Not connected" synchronously when the socket is gone.
                conn.dead = true;
                settle(() => reject(this.dropped(conn, (e as Error).message)));
            }
        });
    }
}

function signalNumber(name: string): number {
    const n = (osConstants.signals as Record<string, number | undefined>)[`SIG${name}`];
    return n ?? 0;
}
