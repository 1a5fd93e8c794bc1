// Rollouts of one unchanged config through the serving-quality gate, on the
// lab with the real engine (issue 37, Deliver 3 and its acceptance: "20
// rollouts of an unchanged config with readiness.throughputDropLimit at its
// default: 0 refused"). What the serving phase models in one process, here
// through everything a rollout runs: `pulumi up` with its refresh, SSH and
// `pct exec`, systemd, the lab's simulated server and the gate's own code.
//
// The trigger is one the stack already handles: the server stopped on the
// box (`systemctl stop`, as an OOM kill or a reboot with the unit disabled
// leaves it) is drift, and `up` rolls the declared config out again through
// the readiness wait and the gate, with the previous unit kept to fall back
// to. Nothing in the config changes, so its key (core/serving/served-config-key.ts)
// does not either: each rollout is held to the config's own last figures
// (the state's servingHistory), those the rollout before it measured (the
// first: those of the deploy the phase starts from).
//
// Not `pulumi up --replace <the server's URN>`: Pulumi checks a resource
// targeted for replacement without its old inputs (the engine's step
// generator: "if the resource has been targeted for replacement, ignore its
// old state"), so the record the gate holds a change to never reaches the
// replacement: it would be measured against nothing.
//
// The lab's decode is deterministic: what makes a start's figure move is the
// simulator's timing faults (lab/sglang/faults.ts), set as the serving phase
// sets them (bench/phases/serving.ts): a fresh server's first request of each
// bucket waits up to COLD_KERNEL_SECONDS for its kernels, and every request's
// latency is jittered by +-LATENCY_JITTER. So the spread is the model's, not
// a GPU's.
import { clearFaults, labExec, setFaults } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { log } from "../lib/log";
import { summarize } from "../lib/stats";
import { COLD_KERNEL_SECONDS, LATENCY_JITTER } from "./serving";

const UNIT = "sglang-qwen.service";

interface Figures {
    acceptLength?: number;
    throughput?: number;
}

/** One rollout: whether the gate kept it, what it measured and what it was held to. */
export interface UnchangedRollout {
    kept: boolean;
    measured: Figures;
    heldTo: Figures;
    /** "its own earlier figures" or "the last good" as up said it; undefined when up did not say. */
    heldAs?: string;
    /** The gate's verdict as up printed it (the refusal's reason when refused). */
    verdict: string;
    upSeconds: number;
}

/** The SglangService's outputs in the state. */
async function serviceOutputs(d: Deployment): Promise<Record<string, unknown>> {
    const service = await d.serviceInState();
    if (!service) throw new Error("no SglangService in the state");
    return service.outputs ?? {};
}

const figuresOf = (v: unknown): Figures => {
    const f = (v ?? {}) as Figures;
    return { acceptLength: f.acceptLength, throughput: f.throughput };
};

/** The measured figures in a line of the gate (describeFigures: "avg accept length 1.72 (NEXTN), 45.2 tok/s (code ..."). */
function measuredIn(line: string): Figures {
    const m = /avg accept length ([\d.]+) \([A-Z_]+\), ([\d.]+) tok\/s \(/.exec(line);
    return m ? { acceptLength: Number(m[1]), throughput: Number(m[2]) } : {};
}

const shown = (f: Figures) => `${f.acceptLength?.toFixed(2) ?? "?"} / ${f.throughput?.toFixed(2) ?? "?"} tok/s`;
const drop = (now: number | undefined, before: number | undefined) =>
    now === undefined || before === undefined ? "?" : `${((100 * (now - before)) / before).toFixed(1)}%`;

/** `count` rollouts of the deployed config, each started by stopping the server on the box; the gate's verdict on each. */
export async function unchangedRollouts(d: Deployment, labDir: string, count: number): Promise<UnchangedRollout[]> {
    const runs: UnchangedRollout[] = [];
    setFaults({ coldKernelSeconds: COLD_KERNEL_SECONDS, latencyJitter: LATENCY_JITTER }, labDir);
    try {
        for (let i = 0; i < count; i++) {
            const heldTo = figuresOf((await serviceOutputs(d)).servingFigures);
            const stopped = await labExec("container", `systemctl stop ${UNIT}`, { labDir, timeoutMs: 60_000 });
            if (stopped.code !== 0) throw new Error(`rollout ${i + 1}: systemctl stop ${UNIT}: exit ${stopped.code}: ${stopped.stderr}`);
            const r = await runEngine(d, ["up", "--yes", "--skip-preview"]);
            const lines = r.output.split("\n");
            const heldLine = lines.find((l) => /the new config is held to/.test(l));
            const heldAs = heldLine ? (/held to (its own earlier|the last good)/.exec(heldLine)?.[1] ?? undefined) : undefined;
            if (r.code === 0) {
                const verdict = lines.find((l) => /serving figures avg accept length .* against /.test(l));
                if (!verdict) {
                    const said = lines.filter((l) => /\[(sglang-|readiness)/.test(l)).join("\n");
                    throw new Error(`rollout ${i + 1}: up succeeded without the gate's verdict (nothing measured); what up said of the server:\n${said}`);
                }
                runs.push({
                    kept: true,
                    measured: figuresOf((await serviceOutputs(d)).servingFigures),
                    heldTo,
                    heldAs,
                    verdict: verdict.trim(),
                    upSeconds: r.wallMs / 1000,
                });
            } else {
                const verdict = lines.find((l) => /is not kept/.test(l));
                if (!verdict) throw new Error(`rollout ${i + 1}: up failed, not by the serving-quality gate\n${r.output.slice(-4000)}`);
                runs.push({ kept: false, measured: measuredIn(verdict), heldTo, heldAs, verdict: verdict.trim(), upSeconds: r.wallMs / 1000 });
            }
            const x = runs[runs.length - 1]!;
            log(
                `  rollout ${i + 1}: ${x.kept ? "kept" : "REFUSED"}, measured ${shown(x.measured)} against ${x.heldAs ?? "?"} ${shown(x.heldTo)} ` +
                    `(accept length ${drop(x.measured.acceptLength, x.heldTo.acceptLength)}, throughput ${drop(x.measured.throughput, x.heldTo.throughput)}); ` +
                    `up ${x.upSeconds.toFixed(1)} s`,
            );
            if (!x.kept) log(`    ${x.verdict}`);
        }
    } finally {
        clearFaults(labDir);
    }
    return runs;
}

export async function phaseUnchangedRollouts(report: Report, d: Deployment, labDir: string, count: number): Promise<void> {
    log(
        `unchanged rollouts: ${count} x (systemctl stop on the box, then up), one unchanged config through the serving-quality gate ` +
            `(default limits), cold kernels up to ${COLD_KERNEL_SECONDS} s, latency jitter +-${LATENCY_JITTER * 100}%`,
    );
    const runs = await unchangedRollouts(d, labDir, count);
    const refused = runs.filter((r) => !r.kept).length;
    const tput = runs.map((r) => r.measured.throughput).filter((v): v is number => v !== undefined);
    const s = summarize(tput);
    const ratio = runs
        .map((r) => (r.measured.throughput !== undefined && r.heldTo.throughput ? r.measured.throughput / r.heldTo.throughput : undefined))
        .filter((v): v is number => v !== undefined);
    log(
        `  ${refused} of ${count} refused; throughput ${s.min.toFixed(2)}-${s.max.toFixed(2)} tok/s (range ${((100 * (s.max - s.min)) / s.median).toFixed(1)}% of the median ${s.median.toFixed(2)})`,
    );
    report.figure(
        "rollouts.throughput",
        "unchanged rollout (server stopped, up): gate throughput / its median",
        "x",
        tput.map((v) => v / s.median),
        `${refused} of ${count} refused at 10%`,
    );
    report.figure("rollouts.heldRatio", "  measured / held-to throughput", "x", ratio);
    report.figure(
        "rollouts.upWall",
        "up restarting a stopped server (readiness wait, gate)",
        "s",
        runs.map((r) => r.upSeconds),
    );
    report.extra.unchangedRollouts = { coldKernelSeconds: COLD_KERNEL_SECONDS, latencyJitter: LATENCY_JITTER, refused, runs };
}
