/**
 * Commands sent over SSH, built from argv with one quoting function. The
 * remote sshd hands the command string to the login shell (`sh -c`), which
 * parses it once; `pct exec <vmid> -- argv...` then runs argv in the
 * container directly (lxc-attach, no second shell), so quoting once is right
 * for both topologies.
 */
import type { Topology } from "./config/schema";

/** Words that mean the same quoted or not, left bare so logs stay readable. No `=`: a leading `a=b` word is an assignment to sh. */
const PLAIN_WORD = /^[A-Za-z0-9_./:@%+,-]+$/;

/** Reserved words are keywords when they come first; quoted they are plain words. */
const RESERVED_WORDS = new Set(["if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done", "in", "function", "select", "time"]);

/**
 * POSIX single-quote quoting: the one way this project quotes for a shell.
 * Inside single quotes nothing is special except `'`, written `'\''`.
 * Throws on NUL, which no argv can carry.
 */
export function shQuote(word: string): string {
    if (word.includes("\0")) throw new Error("a shell word cannot contain a NUL character");
    if (PLAIN_WORD.test(word) && !RESERVED_WORDS.has(word)) return word;
    return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line that `sh -c` splits back into exactly `argv`. */
export function shCommand(argv: readonly string[]): string {
    if (argv.length === 0) throw new Error("empty command");
    return argv.map(shQuote).join(" ");
}

/**
 * The argv to run where the server lives: as is on a direct host, after
 * `pct exec <vmid> --` on a Proxmox host.
 */
export function remoteArgv(topology: Topology, vmid: number | undefined, argv: readonly string[]): string[] {
    switch (topology) {
        case "direct":
            return [...argv];
        case "pct-exec":
            if (vmid === undefined || !Number.isInteger(vmid) || vmid < 100) {
                throw new Error(`pct-exec needs the container's vmid (an integer >= 100), got ${String(vmid)}`);
            }
            return ["pct", "exec", String(vmid), "--", ...argv];
        default: {
            const never: never = topology;
            throw new Error(`unknown topology ${String(never)}`);
        }
    }
}

/** The string to send over SSH to run `argv` where the server lives (remoteArgv, quoted once). */
export function remoteCommand(topology: Topology, vmid: number | undefined, argv: readonly string[]): string {
    return shCommand(remoteArgv(topology, vmid, argv));
}
