import { execFileSync } from "child_process";

/** A real ssh-agent of a test's own. */
export interface TestAgent {
    sock: string;
    /** Ends the agent (SIGTERM: it removes its socket). */
    stop(): void;
}

/**
 * Starts an ssh-agent listening on `sock` (whose folder the caller owns) and
 * adds `key` to it. `ssh-agent -s` forks the agent only once its socket
 * listens, so it takes connections when this returns: with `-D` the socket's
 * file exists between its bind and its listen, and an `ssh-add` in that gap
 * is refused.
 */
export function startAgent(sock: string, key: string): TestAgent {
    const out = execFileSync("ssh-agent", ["-s", "-a", sock], { encoding: "utf8" });
    const pid = Number(/SSH_AGENT_PID=(\d+)/.exec(out)?.[1]);
    if (!(pid > 0)) throw new Error(`ssh-agent printed no SSH_AGENT_PID: ${out}`);
    const stop = () => {
        try {
            process.kill(pid);
        } catch {
            // ended already
        }
    };
    try {
        execFileSync("ssh-add", ["-q", key], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: ["ignore", "ignore", "pipe"] });
    } catch (e) {
        stop();
        throw e;
    }
    return { sock, stop };
}
