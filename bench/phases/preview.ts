import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { expectCode, FLOOR_LABEL, FloorKind, Floors, Project, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { sshFigures, sshOf, SshSample, sshTail } from "../lib/ssh-figures";

/**
 * The stack as users run it (the SDK's dynamic-provider plugin under the
 * official launcher, the program from its TypeScript source) against the
 * floors on the same engine, launcher and backend.
 */
export async function phasePreview(report: Report, d: Deployment, floors: Floors, info: LabInfo, runs: number): Promise<void> {
    log(`preview --refresh: the stack vs the floors, ${runs} runs each, interleaved (1 warm-up each)`);
    type Which = "stack" | FloorKind;
    const all: Which[] = ["stack", "typescript", "transpile-only", "javascript", "dynamic"];
    const ms = Object.fromEntries(all.map((k) => [k, [] as number[]])) as Record<Which, number[]>;
    const ratios = Object.fromEntries(all.map((k) => [k, [] as number[]])) as Record<Which, number[]>;
    const ssh: SshSample[] = [];
    const projects: Record<Which, Project> = { stack: d, ...floors };
    for (let i = -1; i < runs; i++) {
        // Rotate which goes first, so a load spike does not always hit the same one.
        const order: Which[] = [...all];
        for (let k = 0; k < ((i % all.length) + all.length) % all.length; k++) order.push(order.shift()!);
        const wall: Partial<Record<Which, number>> = {};
        for (const which of order) {
            const stack = which === "stack";
            const r = expectCode(
                await runEngine(projects[which], ["preview", "--refresh", "--expect-no-changes"], stack ? { tail: sshTail(info) } : {}),
                0,
                `${which} preview --refresh (no-op)`,
            );
            wall[which] = r.wallMs;
            if (stack && i >= 0) ssh.push(sshOf(r, info));
        }
        if (i < 0) continue;
        for (const k of all) {
            ms[k].push(wall[k]! / 1000);
            ratios[k].push(wall.stack! / wall[k]!);
        }
        log(`  run ${i + 1}: ${all.map((k) => `${k} ${(wall[k]! / 1000).toFixed(2)} s`).join(", ")}`);
    }
    report.figure("previewRefresh.stack", "preview --refresh, deployed lab stack (no-op)", "s", ms.stack);
    for (const k of ["transpile-only", "typescript", "javascript", "dynamic"] as const) {
        report.figure(`previewRefresh.floor.${k}`, `preview --refresh, ${FLOOR_LABEL[k]}`, "s", ms[k]);
        report.figure(`previewRefresh.ratio.${k}`, "  ratio stack / that (per run)", "x", ratios[k], k === "transpile-only" ? "target <= 1.3x" : undefined);
    }
    sshFigures(report, "previewRefresh", "preview --refresh", ssh);
}
