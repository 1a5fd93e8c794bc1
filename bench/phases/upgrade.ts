// What an SGLang upgrade costs with service.venv: 0.5.11 (the field's venv,
// adopted) to 0.5.23 in one `up`, the release staged by the box's own pip from
// the lab's wheelhouse (the real wheels) while the old server serves, /health
// watched from outside every 50 ms. The staging runs from the venv's creation
// (its pyvenv.cfg) to its staged marker (after the release's own parser took
// the flags); the downtime is the stop-first rollout after it. Each run removes
// the staged venv first and goes back to 0.5.11 after (not measured).
import { labExec, labFileMtimeMs } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { labStagedVenv, type StackConfigFile } from "../../lab/stack";
import { LAB_STAGED_RELEASE } from "../../lab/sglang/venvs";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { HealthWatch } from "../lib/health-watch";
import { log } from "../lib/log";
import { serviceOf } from "../lib/stack-config";

export async function phaseUpgrade(report: Report, d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo, runs: number): Promise<void> {
    log(`an SGLang upgrade staged before the stop (0.5.11 -> ${LAB_STAGED_RELEASE}, pip from the lab's wheelhouse), /health watched every 50 ms; ${runs} runs`);
    const service = serviceOf(config);
    const saved = { ...service };
    const venv = labStagedVenv();
    const staged = `${String(venv.root)}/venv-${LAB_STAGED_RELEASE}`;
    const figures: Record<"staging" | "failedWhileStaging" | "downtime", number[]> = { staging: [], failedWhileStaging: [], downtime: [] };
    const up = async (what: string) => expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, what);
    try {
        delete service.python;
        service.venv = venv;
        d.writeConfig(config);
        await up("adopting the field's venv");
        for (let i = 0; i < runs; i++) {
            await labExec("container", `rm -rf ${staged}`, { labDir, timeoutMs: 30_000 });
            service.sglangVersion = LAB_STAGED_RELEASE;
            d.writeConfig(config);
            const watch = new HealthWatch(`http://${info.container.address}:30000/health`);
            watch.start();
            try {
                await up(`the upgrade to ${LAB_STAGED_RELEASE}`);
            } finally {
                await watch.stop();
            }
            const began = await labFileMtimeMs("container", `${staged}/pyvenv.cfg`, labDir);
            const done = await labFileMtimeMs("container", `${staged}/.sglang-serve-venv`, labDir);
            const during = watch.samples.filter((s) => s.t >= began && s.t <= done);
            const gap = watch.gap();
            if (!gap || during.length === 0) throw new Error(`the upgrade: ${gap ? "" : "no downtime seen; "}${during.length} /health samples while staging`);
            const row = { staging: (done - began) / 1000, failedWhileStaging: during.filter((s) => !s.ok).length, downtime: (gap.firstOk - gap.lastOk) / 1000 };
            for (const [k, v] of Object.entries(row)) figures[k as keyof typeof row].push(v);
            log(
                `  run ${i + 1}: staged in ${row.staging.toFixed(1)} s (${during.length} /health polls, ${row.failedWhileStaging} failed), then down ${row.downtime.toFixed(2)} s`,
            );
            service.sglangVersion = saved.sglangVersion;
            d.writeConfig(config);
            await up("back to 0.5.11");
        }
    } finally {
        for (const key of Object.keys(service)) delete service[key];
        Object.assign(service, saved);
        d.writeConfig(config);
        await up("the stack's config as it was");
    }
    report.figure(
        "upgrade.staging",
        `staging SGLang ${LAB_STAGED_RELEASE} before the stop (venv + pip + its parser)`,
        "s",
        figures.staging,
        "the lab's wheelhouse, --no-deps",
    );
    report.figure("upgrade.failedWhileStaging", "  /health failures while it staged", "count", figures.failedWhileStaging, "0: the old server serves on");
    report.figure("upgrade.downtime", "  then the rollout's downtime", "s", figures.downtime);
}
