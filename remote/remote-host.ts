// Commands for "the box the server runs in", whatever the topology:
//   direct:   ssh root@container '<argv>'
//   pct-exec: ssh root@proxmox 'pct exec <vmid> -- <argv>'
// Every command line is built by core/shell.ts's quoting functions from an
// argv; nothing here pastes strings into a shell.

import type { Topology } from "../core/config/schema";
import { remoteCommand } from "../core/shell";
import { writeFileScript } from "../core/write-file-script";
import { SshError } from "./ssh-error";
import type { SshPool } from "./ssh-pool";
import { ExecOptions, ExecResult, hostId, SshTarget } from "./ssh-target";

/** The part of RemoteHost the readiness wait and the GPU wait need; fakes implement it in tests. */
export interface RemoteRunner {
    run(argv: string[], opts?: ExecOptions): Promise<ExecResult>;
    /** e.g. "root@10.1.2.5:22 (pct exec 129)", for messages. */
    describe(): string;
}

export interface RemoteHostOptions {
    target: SshTarget;
    topology: Topology;
    /** The container, required for pct-exec. */
    vmid?: number;
    /** The connections to run over (the provider run's pool, or a test's). */
    pool: SshPool;
    /** Reconnect notices for this host's commands. Default: the pool's log. */
    log?: (message: string) => void;
}

// Exit status and marker that mean "no such file" to readFile; both must match
// so a failing `pct exec` (which has its own exit codes) is not mistaken for it.
const MISSING_EXIT = 44;
const MISSING_MARKER = "sglang-serve: no such file";
const READ_SCRIPT = `if [ ! -e "$1" ]; then echo '${MISSING_MARKER}' >&2; exit ${MISSING_EXIT}; fi; exec cat -- "$1"`;

/**
 * `pct exec` into a container that is not running: pve-container says
 * "container '129' not running!" (exit 255). What ran in it is not there to
 * read, which is a state of the box (drift), not a failed command.
 */
export function containerNotRunning(e: unknown): boolean {
    return e instanceof Error && /container '\d+' not running!/.test(e.message);
}

export class RemoteHost implements RemoteRunner {
    readonly target: SshTarget;
    readonly topology: Topology;
    readonly vmid: number | undefined;
    private readonly pool: SshPool;
    private readonly log: ((message: string) => void) | undefined;

    constructor(options: RemoteHostOptions) {
        if (options.topology === "pct-exec" && (options.vmid === undefined || !Number.isInteger(options.vmid) || options.vmid <= 0)) {
            throw new Error(`topology pct-exec needs the container's vmid (a positive integer), got ${String(options.vmid)}`);
        }
        this.target = options.target;
        this.topology = options.topology;
        this.vmid = options.topology === "pct-exec" ? options.vmid : undefined;
        this.pool = options.pool;
        this.log = options.log;
    }

    describe(): string {
        const id = hostId(this.target);
        switch (this.topology) {
            case "direct":
                return id;
            case "pct-exec":
                return `${id} (pct exec ${this.vmid})`;
            default: {
                const never: never = this.topology;
                throw new Error(`unhandled topology ${String(never)}`);
            }
        }
    }

    /** Run argv in the container; a non-zero exit is returned, not thrown. */
    run(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
        return this.pool.exec(this.target, remoteCommand(this.topology, this.vmid, argv), this.withLog(opts));
    }

    /** Run argv in the container; a non-zero exit throws (command, exit code, stderr tail). */
    runChecked(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
        return this.pool.execChecked(this.target, remoteCommand(this.topology, this.vmid, argv), this.withLog(opts));
    }

    /**
     * Write a file in the container atomically with `mode`; the content goes
     * through stdin (pct exec forwards it), never on a command line.
     */
    async writeFile(path: string, content: string | Buffer, mode: number): Promise<void> {
        await this.runChecked(["sh", "-c", writeFileScript(path, mode)], { stdin: content });
    }

    /** A file's content in the container, or null when it does not exist. Other failures throw. */
    async readFile(path: string): Promise<string | null> {
        const r = await this.run(["sh", "-c", READ_SCRIPT, "sh", path]);
        if (r.code === 0) return r.stdout;
        if (r.code === MISSING_EXIT && r.stderr.includes(MISSING_MARKER)) return null;
        throw new SshError(
            "command",
            `ssh ${this.describe()}: cannot read ${path} (exit ${r.code}): ${r.stderr.trim().split("\n").slice(-5).join("\n")}`,
            hostId(this.target),
        );
    }

    private withLog(opts: ExecOptions): ExecOptions {
        return this.log && !opts.log ? { ...opts, log: this.log } : opts;
    }
}
