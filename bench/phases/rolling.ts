import type { LabInfo } from "../../lab/control";
import { loadThroughGateway } from "../../lab/gateway-load";
import { GATEWAY_SERVERS, gatewayScenario, ServerChanges, serverLaunches } from "../../lab/gateway-stack";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import type { Snapshot } from "../lib/snapshot";

export interface GatewayLabs {
    /** kpro5: two GATEWAY_LAB_GPUs, the gateway and two one-GPU servers. */
    a: { labDir: string; info: LabInfo };
    /** kpro6 (container 130): the field's TP 2 server. */
    b: { labDir: string; info: LabInfo };
}

/**
 * The rolling update behind SGLang's gateway (issue 20): the gateway scenario
 * of lab/gateway-stack.ts deployed once, then per run one server's rollout
 * (qwen alone changes: it leaves the gateway, drains, restarts, comes back)
 * and one flag changed on all three servers (rolled one at a time), each
 * while the load generator sends chat completions through the gateway.
 * Figures: both times, the rolling update against one rollout times the
 * servers, and the requests served and failed during it.
 */
export async function phaseRolling(
    report: Report,
    tree: Snapshot,
    labs: GatewayLabs,
    runs: number,
    keys: { apiKey: string; adminKey: string },
    cleanup: Array<() => void>,
): Promise<void> {
    const scenario = gatewayScenario(labs.a.info, labs.b.info);
    const changes: ServerChanges = {};
    const d = await tree.deployment("rolling", scenario.config(changes));
    cleanup.push(() => d.cleanup());
    d.giveApiKey(keys.apiKey);
    d.giveGatewayAdminKey(keys.adminKey);
    const first = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, "rolling: first up (3 servers over 2 boxes, the gateway)");
    log(
        `rolling: 3 servers over 2 boxes behind the gateway deployed in ${(first.wallMs / 1000).toFixed(1)} s; ${runs} runs of one rollout and a rolling update, under load`,
    );
    /** Starts of the three servers so far (the labs' launch events). */
    const launches = () => serverLaunches(scenario, { a: labs.a.labDir, b: labs.b.labDir }).reduce((a, b) => a + b, 0);

    /** `up` of `changes` under load: its wall time, the requests through the gateway, and the servers it started. */
    const upUnderLoad = async (what: string) => {
        const started = launches();
        const load = loadThroughGateway(scenario.gatewayUrl, scenario.chat, keys.apiKey);
        d.writeConfig(scenario.config(changes));
        let r;
        try {
            r = await runEngine(d, ["up", "--yes", "--skip-preview"]);
        } finally {
            await load.stop();
        }
        expectCode(r, 0, what);
        return { seconds: r.wallMs / 1000, sent: load.counts.sent, failed: load.counts.failed, started: launches() - started };
    };

    const one: number[] = [];
    const all: number[] = [];
    const ratio: number[] = [];
    const served: number[] = [];
    const failed: number[] = [];
    for (let run = 0; run < runs; run++) {
        // A value no earlier run declared, so every up below restarts what it changes.
        changes.qwen = { ...changes.qwen, maxRunningRequests: 40 + 2 * run };
        const single = await upUnderLoad("rolling: one server's rollout behind the gateway");
        for (const name of GATEWAY_SERVERS) changes[name] = { ...changes[name], maxRunningRequests: 41 + 2 * run };
        const wave = await upUnderLoad("rolling: one flag on 3 servers, rolled one at a time");
        if (single.started !== 1 || wave.started !== GATEWAY_SERVERS.length) {
            report.notes.push(`rolling run ${run + 1}: ${single.started} start(s) for one server's change, ${wave.started} for three (expected 1 and 3)`);
        }
        for (const f of [...single.failed, ...wave.failed]) report.notes.push(`rolling run ${run + 1}: a request through the gateway failed: ${f}`);
        one.push(single.seconds);
        all.push(wave.seconds);
        ratio.push(wave.seconds / (GATEWAY_SERVERS.length * single.seconds));
        served.push(wave.sent);
        failed.push(single.failed.length + wave.failed.length);
        log(
            `  run ${run + 1}: one rollout ${single.seconds.toFixed(1)} s (${single.sent} requests), rolling update of 3 ${wave.seconds.toFixed(1)} s ` +
                `(${wave.sent} requests), ${single.failed.length + wave.failed.length} failed`,
        );
    }
    report.figure("rolling.one", "rolling: one server's rollout behind the gateway, up", "s", one);
    report.figure("rolling.all", "rolling: one flag on 3 servers over 2 boxes, up", "s", all);
    report.figure("rolling.ratio", "  ratio to one rollout x 3 (per run)", "x", ratio);
    report.figure("rolling.served", "  requests served through the gateway during it", "count", served);
    report.figure("rolling.failed", "  requests failed (both ups)", "count", failed, "target 0");
}
