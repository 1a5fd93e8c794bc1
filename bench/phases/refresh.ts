import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { expectCode, FLOOR_LABEL, Floors, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { sshFigures, sshOf, SshSample, sshTail } from "../lib/ssh-figures";
import { nowMs } from "../lib/stats";

/**
 * The drift check as the scheduled job runs it (`npm run drift`, which runs
 * `refresh --preview-only` through the Automation API), the bare engine
 * command on the stack, and the same engine command on the floors.
 */
export async function phaseRefresh(report: Report, d: Deployment, floors: Floors, info: LabInfo, runs: number): Promise<void> {
    const n = Math.max(1, Math.min(runs, 3));
    const kinds = ["transpile-only", "dynamic"] as const;
    log(`drift check: npm run drift, refresh --preview-only on the stack and on the floors, ${n} runs each, interleaved`);
    const ms: Record<"drift" | "stack" | (typeof kinds)[number], number[]> = { drift: [], stack: [], "transpile-only": [], dynamic: [] };
    const ratios: Record<(typeof kinds)[number], number[]> = { "transpile-only": [], dynamic: [] };
    const ssh: SshSample[] = [];
    const refresh = ["refresh", "--preview-only", "--expect-no-changes"];
    for (let i = 0; i < n; i++) {
        const start = nowMs();
        const drift = await d.npmScript("drift", ["--stack", d.stack]);
        if (drift.code !== 0) throw new Error(`npm run drift: exit ${drift.code}\n${drift.output.slice(-3000)}`);
        ms.drift.push((nowMs() - start) / 1000);
        const r = expectCode(await runEngine(d, refresh, { tail: sshTail(info) }), 0, "refresh --preview-only");
        ms.stack.push(r.wallMs / 1000);
        ssh.push(sshOf(r, info));
        for (const k of kinds) {
            const f = expectCode(await runEngine(floors[k], refresh), 0, `${k} floor refresh --preview-only`);
            ms[k].push(f.wallMs / 1000);
            ratios[k].push(ms.drift[i]! / ms[k][i]!);
        }
    }
    report.figure("refresh.drift", "npm run drift (no drift)", "s", ms.drift);
    report.figure("refresh.stack", "refresh --preview-only on the stack (the engine command alone)", "s", ms.stack);
    for (const k of kinds) {
        report.figure(`refresh.floor.${k}`, `refresh --preview-only, ${FLOOR_LABEL[k]}`, "s", ms[k]);
        report.figure(`refresh.ratio.${k}`, "  ratio npm run drift / that (per run)", "x", ratios[k], k === "transpile-only" ? "target <= 1.3x" : undefined);
    }
    sshFigures(report, "refresh", "refresh", ssh);
}
