import { simulatorEvents } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { sshFigures, sshOf, SshSample, sshTail } from "../lib/ssh-figures";

export async function phaseUp(report: Report, d: Deployment, info: LabInfo, labDir: string, runs: number): Promise<void> {
    log(`no-op up: up --yes (preview + update, as the deploy workflow runs it) and up --yes --skip-preview, ${runs} runs each`);
    const variants: Array<{ key: string; label: string; args: string[] }> = [
        { key: "up.noop", label: "up --yes (no-op)", args: ["up", "--yes", "--expect-no-changes"] },
        { key: "up.noopSkipPreview", label: "up --yes --skip-preview (no-op)", args: ["up", "--yes", "--skip-preview", "--expect-no-changes"] },
    ];
    const ms: Record<string, number[]> = {};
    const ssh: Record<string, SshSample[]> = {};
    const launchedBefore = simulatorEvents(labDir).filter((e) => e.event === "launched").length;
    for (let i = 0; i < runs; i++) {
        for (const v of i % 2 === 0 ? variants : [...variants].reverse()) {
            const r = expectCode(await runEngine(d, v.args, { tail: sshTail(info) }), 0, v.label);
            (ms[v.key] ??= []).push(r.wallMs / 1000);
            (ssh[v.key] ??= []).push(sshOf(r, info));
        }
    }
    const launched = simulatorEvents(labDir).filter((e) => e.event === "launched").length - launchedBefore;
    if (launched > 0) report.notes.push(`no-op up started the server ${launched} time(s): not a no-op`);
    for (const v of variants) {
        report.figure(v.key, v.label, "s", ms[v.key]!);
        sshFigures(report, v.key, v.label.replace(/ \(no-op\)/, ""), ssh[v.key]!);
    }
}
