import { simulatorEvents } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { fleetProgramConfig, fleetStackConfig, preplaceFleet } from "../lib/fleet";
import { FleetPlan, oneServiceStack, programStack } from "../lib/fleet-plan";
import { log } from "../lib/log";
import type { Snapshot } from "../lib/snapshot";
import { sshFigures, sshOf, SshSample, sshTail } from "../lib/ssh-figures";
import { nowMs, summarize } from "../lib/stats";

/**
 * The fleet figures: the fleet program of each size in `plan.programs`, and
 * the first N one-service stacks for each N in `counts.stacks` (empty where
 * that phase is not run), on the servers `plan` gives them.
 */
export async function phaseFleet(
    report: Report,
    tree: Snapshot,
    fleetLabDir: string,
    fleetInfo: LabInfo,
    plan: FleetPlan,
    counts: { stacks: number[]; runs: number },
    apiKey: string,
    cleanup: Array<() => void>,
): Promise<void> {
    const sizes = [...plan.programs.keys()];
    const stackSizes = counts.stacks;
    log(`fleet: placing ${plan.all.length} servers (ports ${plan.all[0]?.port}..${plan.all.at(-1)?.port}, a GPU each) in the fleet lab's container`);
    await preplaceFleet(fleetLabDir, fleetInfo, plan, apiKey);
    const launchedAfterPlacing = simulatorEvents(fleetLabDir).filter((e) => e.event === "launched").length;

    // (B) one operation over N services: the stack program with N servers.
    const programs = new Map<number, Deployment>();
    for (const [n, members] of plan.programs) {
        const d = await tree.deployment(programStack(n), fleetProgramConfig(fleetInfo, members, plan));
        cleanup.push(() => d.cleanup());
        d.giveApiKey(apiKey);
        const r = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, `fleet program up (N=${n}, adopting)`);
        log(`  fleet program N=${n}: deployed (adopted) in ${(r.wallMs / 1000).toFixed(1)} s`);
        programs.set(n, d);
    }
    // (A) N one-service stacks (the stack program as it is, one stack per server).
    const stacks: Deployment[] = [];
    for (const member of plan.stacks) {
        const d = await tree.deployment(oneServiceStack(member), fleetStackConfig(fleetInfo, member, plan));
        cleanup.push(() => d.cleanup());
        d.giveApiKey(apiKey);
        expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, `one-service stack ${member.name} up (adopting)`);
        stacks.push(d);
    }
    if (stacks.length > 0) log(`  ${stacks.length} one-service stacks deployed (adopted)`);
    const launched = simulatorEvents(fleetLabDir).filter((e) => e.event === "launched").length - launchedAfterPlacing;
    if (launched > 0) throw new Error(`adopting the fleet restarted ${launched} server(s): the placed units differ from what the stack renders`);

    // A program's first preview runs the declared release's code once per server (SGLang's verdict,
    // providers/sglang-server/verdict.ts); later ones keep each verdict by its request. Both are figures.
    for (const [n, d] of programs) {
        const p = expectCode(await runEngine(d, ["preview", "--refresh", "--expect-no-changes"]), 0, `fleet first preview --refresh N=${n}`);
        report.figure(`fleet.programPreviewFirst.${n}`, `fleet: one program with ${n} service(s), first preview --refresh`, "s", [p.wallMs / 1000]);
        log(`  fleet program N=${n}: first preview --refresh ${(p.wallMs / 1000).toFixed(2)} s (SGLang's verdict once per server)`);
    }
    const fleetMs: Record<number, number[]> = {};
    const fleetSsh: Record<number, SshSample[]> = {};
    const fleetPreviewMs: Record<number, number[]> = {};
    const seqMs: Record<number, number[]> = {};
    const parMs: Record<number, number[]> = {};
    for (let rep = 0; rep < counts.runs; rep++) {
        for (const [n, d] of programs) {
            const r = expectCode(
                await runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"], { tail: sshTail(fleetInfo) }),
                0,
                `fleet refresh N=${n}`,
            );
            (fleetMs[n] ??= []).push(r.wallMs / 1000);
            (fleetSsh[n] ??= []).push(sshOf(r, fleetInfo));
            const p = expectCode(await runEngine(d, ["preview", "--refresh", "--expect-no-changes"]), 0, `fleet preview --refresh N=${n}`);
            (fleetPreviewMs[n] ??= []).push(p.wallMs / 1000);
            log(`  fleet program N=${n}: refresh ${(r.wallMs / 1000).toFixed(2)} s, preview --refresh ${(p.wallMs / 1000).toFixed(2)} s`);
        }
        for (const n of stackSizes) {
            let t = nowMs();
            for (const d of stacks.slice(0, n)) expectCode(await runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"]), 0, `stack refresh`);
            (seqMs[n] ??= []).push((nowMs() - t) / 1000);
            t = nowMs();
            const all = await Promise.all(stacks.slice(0, n).map((d) => runEngine(d, ["refresh", "--preview-only", "--expect-no-changes"])));
            for (const r of all) expectCode(r, 0, "parallel stack refresh");
            (parMs[n] ??= []).push((nowMs() - t) / 1000);
            log(`  ${n} one-service stacks: sequential ${seqMs[n]!.at(-1)!.toFixed(2)} s, parallel ${parMs[n]!.at(-1)!.toFixed(2)} s`);
        }
    }
    const base = sizes.includes(1) ? summarize(fleetMs[1] ?? []).median : NaN;
    for (const n of sizes) {
        if (!fleetMs[n]) continue;
        report.figure(`fleet.program.${n}`, `fleet: one program with ${n} service(s), refresh --preview-only`, "s", fleetMs[n]!);
        if (n !== 1 && Number.isFinite(base)) {
            report.figure(
                `fleet.program.ratio.${n}`,
                `  ratio ${n}:1 (per run / median of N=1)`,
                "x",
                fleetMs[n]!.map((v) => v / base),
                n === 16 ? "target <= 2x" : undefined,
            );
        }
        sshFigures(report, `fleet.program.${n}`, `fleet refresh (N=${n})`, fleetSsh[n]!);
    }
    const pbase = sizes.includes(1) ? summarize(fleetPreviewMs[1] ?? []).median : NaN;
    for (const n of sizes) {
        if (!fleetPreviewMs[n]) continue;
        report.figure(`fleet.programPreview.${n}`, `fleet: one program with ${n} service(s), preview --refresh`, "s", fleetPreviewMs[n]!);
        if (n !== 1 && Number.isFinite(pbase))
            report.figure(
                `fleet.programPreview.ratio.${n}`,
                `  ratio ${n}:1`,
                "x",
                fleetPreviewMs[n]!.map((v) => v / pbase),
            );
    }
    const sbase = stackSizes.includes(1) ? summarize(seqMs[1] ?? []).median : NaN;
    for (const n of stackSizes) {
        if (!seqMs[n]) continue;
        report.figure(`fleet.stacks.seq.${n}`, `fleet: ${n} one-service stack(s), refresh each in turn`, "s", seqMs[n]!);
        if (n !== 1 && Number.isFinite(sbase))
            report.figure(
                `fleet.stacks.seq.ratio.${n}`,
                `  ratio ${n}:1`,
                "x",
                seqMs[n]!.map((v) => v / sbase),
            );
        report.figure(`fleet.stacks.par.${n}`, `fleet: ${n} one-service stack(s), refreshed in parallel`, "s", parMs[n]!);
    }
}
