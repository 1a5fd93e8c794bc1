// What a config change costs the server's clients: a stop-first rollout of one
// changed flag, /health watched from outside every 50 ms. The downtime runs
// from the old server's last 200 to the new one's first; SGLang's part of it
// is the new server's start (launched to ready, from the simulator's events:
// the release's config layer, then the lab's simulated load); the rest is the
// stack's own: the stop, the wait for the GPUs' memory (the lab's driver frees
// it gpuReleaseDelaySeconds after the process exits), the unit writes and
// systemd's start.
import { simulatorEvents } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";
import { expectCode, runEngine } from "../lib/engine";
import { newSimEvents } from "../lib/events";
import type { Report } from "../lib/figures";
import { HealthWatch } from "../lib/health-watch";
import { log } from "../lib/log";
import { serviceOf } from "../lib/stack-config";

export async function phaseDowntime(report: Report, d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo, runs: number): Promise<void> {
    log(`downtime of one config change (service.memFractionStatic flipped), /health watched every 50 ms; ${runs} runs`);
    const figures: Record<"total" | "sglang" | "stack" | "stop" | "stopToLaunch" | "afterGpu", number[]> = {
        total: [],
        sglang: [],
        stack: [],
        stop: [],
        stopToLaunch: [],
        afterGpu: [],
    };
    // The lab's driver frees a stopped server's GPU memory this long after it exits (no fault overrides it here).
    const releaseMs = info.simulator.gpuReleaseDelaySeconds * 1000;
    const service = serviceOf(config);
    const previous = service.memFractionStatic;
    try {
        for (let i = 0; i < runs; i++) {
            const next = service.memFractionStatic === 0.87 ? 0.88 : 0.87;
            service.memFractionStatic = next;
            d.writeConfig(config);
            const watch = new HealthWatch(`http://${info.container.address}:30000/health`);
            const before = simulatorEvents(labDir).length;
            watch.start();
            try {
                expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, `rollout to ${next}`);
            } finally {
                await watch.stop();
            }
            const gap = watch.gap();
            const sim = newSimEvents(labDir, before);
            const stopped = sim.find((e) => e.event === "stopped");
            const launched = sim.find((e) => e.event === "launched");
            const ready = sim.find((e) => e.event === "ready");
            if (!gap || !stopped || !launched || !ready)
                throw new Error(
                    `rollout to ${next}: no downtime seen (${gap ? "a gap" : "no gap"}; simulator events ${JSON.stringify(sim.map((e) => e.event))})`,
                );
            const total = gap.firstOk - gap.lastOk;
            const sglang = ready.epochMs - launched.epochMs;
            const row = {
                total: total / 1000,
                sglang: sglang / 1000,
                stack: (total - sglang) / 1000,
                stop: (stopped.epochMs - gap.lastOk) / 1000,
                stopToLaunch: (launched.epochMs - stopped.epochMs) / 1000,
                afterGpu: (launched.epochMs - stopped.epochMs - releaseMs) / 1000,
            };
            for (const [k, v] of Object.entries(row)) figures[k as keyof typeof row].push(v);
            log(
                `  run ${i + 1} (-> ${next}): down ${row.total.toFixed(2)} s: SGLang's start ${row.sglang.toFixed(2)} s, ` +
                    `the stack's own ${row.stack.toFixed(2)} s (stop ${row.stop.toFixed(2)} s, stopped to launched ${row.stopToLaunch.toFixed(2)} s)`,
            );
        }
    } finally {
        service.memFractionStatic = previous;
        d.writeConfig(config);
    }
    report.figure("downtime.total", "downtime of one config change (old /health 200 to new)", "s", figures.total);
    report.figure("downtime.sglangStart", "  of which SGLang's start (launched to ready)", "s", figures.sglang, "config layer + the lab's simulated load");
    report.figure("downtime.stack", "  of which the stack's own", "s", figures.stack, "stop, GPU release wait, unit writes, systemd start");
    report.figure("downtime.stop", "    last 200 to the old server's exit", "s", figures.stop);
    report.figure(
        "downtime.stopToLaunch",
        "    old server's exit to the new one's launch",
        "s",
        figures.stopToLaunch,
        `incl. the lab's GPU release delay (${releaseMs / 1000} s)`,
    );
    report.figure(
        "downtime.afterGpu",
        "    GPUs free to the new one's launch",
        "s",
        figures.afterGpu,
        "the release wait's last poll, unit writes, systemd start",
    );
}
