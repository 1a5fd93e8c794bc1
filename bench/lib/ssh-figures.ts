import type { LabInfo } from "../../lab/control";
import type { RunResult } from "./engine";
import type { Report } from "./figures";
import { countSshd, SshCounts } from "./sshd";

/** Connections and commands per lab machine during one run. */
export interface SshSample {
    host: SshCounts;
    container: SshCounts;
}

function sshdLogs(info: LabInfo): { host: string; container: string } {
    return { host: info.host.sshdLog, container: info.container.sshdLog };
}

/** The sshd logs to follow during a run (RunOptions.tail), for `sshOf`. */
export function sshTail(info: LabInfo): string[] {
    const logs = sshdLogs(info);
    return [logs.host, logs.container];
}

/** Connections and commands per lab machine during one run. */
export function sshOf(r: RunResult, info: LabInfo): SshSample {
    const logs = sshdLogs(info);
    return { host: countSshd(r.tails[logs.host] ?? []), container: countSshd(r.tails[logs.container] ?? []) };
}

/** The SSH-per-operation figures of a set of runs; the container's only where it saw any SSH. */
export function sshFigures(report: Report, key: string, label: string, ssh: SshSample[]): void {
    if (ssh.length === 0) return;
    report.figure(
        `${key}.ssh.host.connections`,
        `  ssh to host kpro5 per ${label}: connections`,
        "count",
        ssh.map((s) => s.host.connections),
        "target <= 1",
    );
    report.figure(
        `${key}.ssh.host.commands`,
        `  ssh to host kpro5 per ${label}: commands`,
        "count",
        ssh.map((s) => s.host.commands),
    );
    const ct = ssh.map((s) => s.container.connections + s.container.commands);
    if (ct.some((v) => v > 0)) {
        report.figure(
            `${key}.ssh.container.connections`,
            `  ssh to container per ${label}: connections`,
            "count",
            ssh.map((s) => s.container.connections),
        );
        report.figure(
            `${key}.ssh.container.commands`,
            `  ssh to container per ${label}: commands`,
            "count",
            ssh.map((s) => s.container.commands),
        );
    }
}
