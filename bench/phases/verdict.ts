// SGLang's own verdict at preview (providers/sglang-server/verdict.ts): what a
// preview of a changed server costs when the declared release's code runs
// (a command line never judged before), and when its verdict is kept (the
// same change previewed again).
import type { Deployment } from "../../lab/deployment";
import type { StackConfigFile } from "../../lab/stack";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { serviceOf } from "../lib/stack-config";

export async function phaseVerdict(report: Report, d: Deployment, config: StackConfigFile, runs: number): Promise<void> {
    log(`preview --refresh of a changed server: SGLang's own code runs, then its verdict is kept; ${runs} runs`);
    const service = serviceOf(config);
    const extraArgs = service.extraArgs;
    const ran: number[] = [];
    const kept: number[] = [];
    try {
        for (let i = 0; i < runs; i++) {
            // A value no earlier run judged: the verdict cache (by the request's digest) has no entry for it.
            service.extraArgs = ["--watchdog-timeout", `${300 + (Date.now() % 100000) / 1000 + i}`];
            d.writeConfig(config);
            const first = expectCode(await runEngine(d, ["preview", "--refresh"]), 0, "preview of a changed server (the release's code runs)");
            const again = expectCode(await runEngine(d, ["preview", "--refresh"]), 0, "the same preview again (the verdict kept)");
            ran.push(first.wallMs / 1000);
            kept.push(again.wallMs / 1000);
            log(`  run ${i + 1}: the release's code runs ${(first.wallMs / 1000).toFixed(2)} s, verdict kept ${(again.wallMs / 1000).toFixed(2)} s`);
        }
    } finally {
        service.extraArgs = extraArgs;
        d.writeConfig(config);
    }
    report.figure("verdict.ran", "preview --refresh, one flag changed: SGLang's own code runs", "s", ran);
    report.figure("verdict.kept", "  the same preview again: the verdict kept", "s", kept);
}
