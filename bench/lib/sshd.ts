import { TimedLine } from "./tail";

/**
 * What one operation did on one lab machine, read from its sshd log
 * (LogLevel VERBOSE, lab/sshd.ts): one "Accepted publickey" line per
 * authenticated connection, one "Starting session: command" line per command
 * (exec channel), "Close session" when the command's channel closed.
 */
export interface SshCounts {
    /** TCP connections accepted (including any that failed to authenticate). */
    tcpConnections: number;
    /** Authenticated SSH connections. */
    connections: number;
    /** Commands run (exec session channels). */
    commands: number;
    /** Other sessions (shell, subsystem). */
    otherSessions: number;
}

export interface SshSession {
    port: number;
    id: number;
    start: number;
    end?: number;
}

export function countSshd(lines: TimedLine[]): SshCounts {
    let tcpConnections = 0;
    let connections = 0;
    let commands = 0;
    let otherSessions = 0;
    for (const { line } of lines) {
        if (/^Connection from /.test(line)) tcpConnections++;
        else if (/^Accepted publickey for /.test(line)) connections++;
        else if (/^Starting session: command /.test(line)) commands++;
        else if (/^Starting session: /.test(line)) otherSessions++;
    }
    return { tcpConnections, connections, commands, otherSessions };
}

/** Connections (auth time) and commands (channel open/close times as the bench saw them) for the profile. */
export function sshdTimeline(lines: TimedLine[]): { accepted: { port: number; t: number }[]; sessions: SshSession[] } {
    const accepted: { port: number; t: number }[] = [];
    const sessions: SshSession[] = [];
    for (const { t, line } of lines) {
        let m = /^Accepted publickey for \S+ from \S+ port (\d+)/.exec(line);
        if (m) accepted.push({ port: Number(m[1]), t });
        m = /^Starting session: command for \S+ from \S+ port (\d+) id (\d+)/.exec(line);
        if (m) sessions.push({ port: Number(m[1]), id: Number(m[2]), start: t });
        m = /^Close session: user \S+ from \S+ port (\d+) id (\d+)/.exec(line);
        if (m) {
            const s = sessions.find((x) => x.port === Number(m![1]) && x.id === Number(m![2]) && x.end === undefined);
            if (s) s.end = t;
        }
    }
    return { accepted, sessions };
}
