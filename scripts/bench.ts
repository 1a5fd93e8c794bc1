// `npm run bench`: performance figures of the stack against a lab of its own,
// with the real engine (scripts/pulumi.sh), printed as a table of medians and
// ranges and written to bench-results/bench-<date>.json. Not part of the tests.
//
//   npm run bench                          everything (about 17 minutes on 2 busy cores)
//   npm run bench -- --runs 3              fewer repetitions of the fast figures (default 5)
//   npm run bench -- --only preview,up     some phases: preview verdict refresh up downtime upgrade weights profile readiness crash rolling fleet stacks serving rollouts
//   npm run bench -- --only serving --serving-runs 20   the gate's throughput figure over fresh starts (no lab; about a second a run)
//   npm run bench -- --only rollouts --rollouts 20      the gate over real rollouts of one unchanged config (not in
//                                                       "everything": about a minute a rollout)
//   npm run bench -- --rollouts 5 --fast-rollouts 3 --crashes 3 --rolling-runs 3
//   npm run bench -- --fleet 1,4,16 --stacks 1,4,16 --fleet-runs 3
//   npm run bench -- --ref HEAD            the project as committed (default: the work tree as it is)
//
// Labs: 127.0.120.5 / 127.0.120.29 (the stack), 127.0.121.5 / 127.0.121.29
// (the fleet), 127.0.122.x and 127.0.123.x (the gateway's two boxes), the
// weights phase's Hugging Face mirror on 127.0.120.1, in
// temporary directories, always taken down at the end.
// bench/README.md says what each figure measures and how.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { execFileSync } from "child_process";
import { parseArgs } from "node:util";
import { labDown, labUp, readLabInfo } from "../lab/control";
import { labStackConfig } from "../lab/stack";
import { GATEWAY_LAB_GPU } from "../lab/gateway-stack";
import { createFloorProject, expectCode, Floors, runEngine, stopRunningEngines, useTree } from "../bench/lib/engine";
import { Report, table } from "../bench/lib/figures";
import { FLEET_GPU, planFleet } from "../bench/lib/fleet-plan";
import { log } from "../bench/lib/log";
import { Profile, profileText } from "../bench/lib/profile";
import { Snapshot } from "../bench/lib/snapshot";
import { phaseDowntime } from "../bench/phases/downtime";
import { phaseFleet } from "../bench/phases/fleet";
import { phasePreview } from "../bench/phases/preview";
import { phaseProfile } from "../bench/phases/profile";
import { phaseRefresh } from "../bench/phases/refresh";
import { phaseRolling } from "../bench/phases/rolling";
import { phaseCrash, phaseReadiness } from "../bench/phases/rollouts";
import { phaseUp } from "../bench/phases/up";
import { phaseUpgrade } from "../bench/phases/upgrade";
import { phaseWeights } from "../bench/phases/weights";
import { phaseVerdict } from "../bench/phases/verdict";
import { phaseServing } from "../bench/phases/serving";
import { phaseUnchangedRollouts } from "../bench/phases/unchanged-rollouts";

const repo = path.resolve(__dirname, "..");
const API_KEY = "bench-lab-api-key-0123456789abcdef";
const GATEWAY_ADMIN_KEY = "bench-lab-gateway-admin-key-0123456789";
const PHASES = [
    "preview",
    "verdict",
    "refresh",
    "up",
    "downtime",
    "upgrade",
    "weights",
    "profile",
    "readiness",
    "crash",
    "rolling",
    "fleet",
    "stacks",
    "serving",
    "rollouts",
] as const;
type Phase = (typeof PHASES)[number];
/** Run only when --only names them: too slow for "everything". */
const OPT_IN: readonly Phase[] = ["rollouts"];

// ---------------------------------------------------------------------------
// Options

const { values: options } = parseArgs({
    options: {
        runs: { type: "string" },
        rollouts: { type: "string" },
        crashes: { type: "string" },
        "rolling-runs": { type: "string" },
        "fast-rollouts": { type: "string" },
        fleet: { type: "string" },
        stacks: { type: "string" },
        "fleet-runs": { type: "string" },
        "serving-runs": { type: "string" },
        only: { type: "string" },
        ref: { type: "string" },
        help: { type: "boolean", short: "h" },
    },
    strict: true,
});
const intArg = (name: keyof typeof options, dflt: number) => {
    const v = options[name] as string | undefined;
    const n = v === undefined ? dflt : Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${v}`);
    return n;
};
const listArg = (name: keyof typeof options, dflt: number[]) => {
    const v = options[name] as string | undefined;
    return v === undefined ? dflt : v.split(",").filter(Boolean).map(Number);
};
if (options.help) {
    console.log(
        fs
            .readFileSync(__filename, "utf8")
            .split("\n")
            .filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith("//")))
            .map((l) => l.replace(/^\/\/ ?/, ""))
            .join("\n"),
    );
    process.exit(0);
}
const RUNS = intArg("runs", 5);
const ROLLOUTS = intArg("rollouts", 5);
/** The rollouts phase's count: --rollouts too, 20 (the acceptance of issue 37) unless given. */
const UNCHANGED_ROLLOUTS = intArg("rollouts", 20);
const CRASHES = intArg("crashes", 3);
const ROLLING_RUNS = intArg("rolling-runs", 3);
const FAST_ROLLOUTS = intArg("fast-rollouts", 3);
const FLEET = listArg("fleet", [1, 4, 16]);
const STACKS = listArg("stacks", [1, 4]);
const FLEET_RUNS = intArg("fleet-runs", 3);
const SERVING_RUNS = intArg("serving-runs", 20);
const only = options.only;
/** Measure the project as committed at this git revision instead of the work tree as it is. */
const REF = options.ref;
const phases = new Set<Phase>(only ? (only.split(",") as Phase[]) : PHASES.filter((p) => !OPT_IN.includes(p)));
for (const p of phases) if (!PHASES.includes(p)) throw new Error(`unknown phase ${p}; phases: ${PHASES.join(" ")}`);
const FLEET_STACKS = phases.has("stacks") ? STACKS : [];
/** The fleet lab's servers, planned before any lab starts so that sizes it cannot hold fail at once. */
const FLEET_PLAN = planFleet(phases.has("fleet") ? FLEET : [], Math.max(0, ...FLEET_STACKS));

// ---------------------------------------------------------------------------
// The run: labs up, the phases, the results written and printed, labs down

function git(args: string[]): string {
    try {
        return execFileSync("git", args, { cwd: repo, encoding: "utf8" }).trim();
    } catch {
        return "unknown";
    }
}

async function main(): Promise<void> {
    const started = new Date();
    const labDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-lab-"));
    const fleetLabDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-fleet-lab-"));
    const gatewayLabDirs = {
        a: fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-gateway-lab-")),
        b: fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-gateway-b-lab-")),
    };
    const cleanup: Array<() => void> = [];
    const report = new Report();
    /** The work tree as it was when the bench started (see bench/lib/snapshot.ts). */
    const tree = Snapshot.take(REF);
    useTree(tree.dir);
    cleanup.push(() => tree.remove());
    const env = {
        node: process.version,
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        loadavgBefore: os.loadavg(),
        gitRevision: git(["rev-parse", "--short", "HEAD"]),
        /** Uncommitted changes in the tree that was measured (`git status --porcelain`). */
        gitStatus: git(["status", "--porcelain"]).split("\n").filter(Boolean),
    };
    let failed: unknown = null;
    let tornDown: Promise<void> | null = null;
    /** Deployment folders removed, both labs down (idempotent; also on Ctrl-C). */
    const teardown = (): Promise<void> =>
        (tornDown ??= (async () => {
            for (const c of cleanup.reverse()) {
                try {
                    c();
                } catch {
                    /* best effort */
                }
            }
            for (const dir of [labDir, fleetLabDir, gatewayLabDirs.a, gatewayLabDirs.b]) {
                try {
                    await labDown(dir);
                } catch (e) {
                    log(`lab down ${dir} failed: ${(e as Error).message}`);
                }
                fs.rmSync(dir, { recursive: true, force: true });
            }
        })());
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
            log(`${signal}: stopping the engine commands, taking the labs down`);
            void stopRunningEngines()
                .then(teardown)
                .finally(() => process.exit(130));
        });
    }
    try {
        const needMain = [...phases].some((p) => p !== "rolling" && p !== "fleet" && p !== "stacks" && p !== "serving");
        if (needMain) {
            log(`lab up in ${labDir} (127.0.120.5 / 127.0.120.29)`);
            await labUp({ labDir, hostAddress: "127.0.120.5", containerAddress: "127.0.120.29", fresh: true });
            const info = readLabInfo(labDir);
            const config = labStackConfig(info, "pct-exec");
            const d = await tree.deployment("lab", config);
            cleanup.push(() => d.cleanup());
            d.giveApiKey(API_KEY);
            const first = expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, "first up");
            log(`stack deployed in ${(first.wallMs / 1000).toFixed(1)} s`);
            const floors = {} as Floors;
            // Only the phases that compare with them need the floors (four more deploys).
            const needFloors = phases.has("preview") || phases.has("refresh") || phases.has("profile");
            for (const kind of needFloors ? (["typescript", "transpile-only", "javascript", "dynamic"] as const) : []) {
                const floor = createFloorProject(kind);
                cleanup.push(() => fs.rmSync(floor.dir, { recursive: true, force: true }));
                expectCode(await runEngine(floor, ["up", "--yes", "--skip-preview"]), 0, `${kind} floor up`);
                floors[kind] = floor;
            }

            if (phases.has("preview")) await phasePreview(report, d, floors, info, RUNS);
            if (phases.has("verdict")) await phaseVerdict(report, d, config, RUNS);
            if (phases.has("refresh")) await phaseRefresh(report, d, floors, info, RUNS);
            if (phases.has("up")) await phaseUp(report, d, info, labDir, RUNS);
            if (phases.has("downtime")) await phaseDowntime(report, d, config, labDir, info, RUNS);
            // Each run installs a release with pip: a few of them say what it costs.
            if (phases.has("upgrade")) await phaseUpgrade(report, d, config, labDir, info, Math.min(RUNS, 3));
            // Each run is two rollouts (to B and back to A): three say what staging costs.
            if (phases.has("weights")) await phaseWeights(report, d, config, labDir, info, Math.min(RUNS, 3));
            if (phases.has("profile")) await phaseProfile(report, tree, d, floors["transpile-only"], info);
            if (phases.has("readiness")) await phaseReadiness(report, d, config, labDir, info, { rollouts: ROLLOUTS, fastRollouts: FAST_ROLLOUTS });
            if (phases.has("crash")) await phaseCrash(report, d, config, labDir, info, CRASHES);
            if (phases.has("rollouts")) await phaseUnchangedRollouts(report, d, labDir, UNCHANGED_ROLLOUTS);
        }
        // No lab: the lab's HTTP API in this process, measured by the gate's own code.
        if (phases.has("serving")) await phaseServing(report, SERVING_RUNS);
        if (phases.has("rolling")) {
            log(`gateway labs up in ${gatewayLabDirs.a} (127.0.122.x, 2 GPUs) and ${gatewayLabDirs.b} (127.0.123.x, container 130)`);
            await labUp({
                labDir: gatewayLabDirs.a,
                hostAddress: "127.0.122.5",
                containerAddress: "127.0.122.29",
                fresh: true,
                gpus: [GATEWAY_LAB_GPU, GATEWAY_LAB_GPU],
            });
            await labUp({ labDir: gatewayLabDirs.b, hostAddress: "127.0.123.5", containerAddress: "127.0.123.29", fresh: true, vmid: 130 });
            const labs = {
                a: { labDir: gatewayLabDirs.a, info: readLabInfo(gatewayLabDirs.a) },
                b: { labDir: gatewayLabDirs.b, info: readLabInfo(gatewayLabDirs.b) },
            };
            await phaseRolling(report, tree, labs, ROLLING_RUNS, { apiKey: API_KEY, adminKey: GATEWAY_ADMIN_KEY }, cleanup);
        }
        if (phases.has("fleet") || phases.has("stacks")) {
            const gpuCount = FLEET_PLAN.all.length;
            log(`fleet lab up in ${fleetLabDir} (127.0.121.5 / 127.0.121.29, ${gpuCount} GPUs of ${Math.round(FLEET_GPU.memoryMiB / 1024)} GiB)`);
            await labUp({
                labDir: fleetLabDir,
                hostAddress: "127.0.121.5",
                containerAddress: "127.0.121.29",
                fresh: true,
                gpus: Array.from({ length: gpuCount }, () => FLEET_GPU),
            });
            await phaseFleet(report, tree, fleetLabDir, readLabInfo(fleetLabDir), FLEET_PLAN, { stacks: FLEET_STACKS, runs: FLEET_RUNS }, API_KEY, cleanup);
        }
    } catch (e) {
        failed = e;
    } finally {
        await teardown();
    }

    const finished = new Date();
    const result = {
        schema: 1,
        started: started.toISOString(),
        finished: finished.toISOString(),
        durationSeconds: Math.round((finished.getTime() - started.getTime()) / 1000),
        command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
        options: {
            ref: REF ?? "(work tree)",
            runs: RUNS,
            rollouts: ROLLOUTS,
            ...(phases.has("rollouts") ? { unchangedRollouts: UNCHANGED_ROLLOUTS } : {}),
            fastRollouts: FAST_ROLLOUTS,
            crashes: CRASHES,
            rollingRuns: ROLLING_RUNS,
            fleet: FLEET,
            stacks: STACKS,
            fleetRuns: FLEET_RUNS,
            phases: [...phases],
        },
        environment: { ...env, loadavgAfter: os.loadavg() },
        figures: Object.fromEntries(
            report.figures.map((f) => [f.key, { label: f.label.trim(), unit: f.unit, ...f.summary, ...(f.note ? { note: f.note } : {}) }]),
        ),
        notes: report.notes,
        ...report.extra,
        ...(failed ? { error: String((failed as Error).stack ?? failed) } : {}),
    };
    const outDir = path.join(repo, "bench-results");
    fs.mkdirSync(outDir, { recursive: true });
    const stamp = started
        .toISOString()
        .replace(/:/g, "-")
        .replace(/\.\d+Z$/, "Z");
    const outFile = path.join(outDir, `bench-${stamp}.json`);
    fs.writeFileSync(outFile, JSON.stringify(result, null, 2) + "\n");

    console.log("");
    console.log(table(report.figures));
    const profiles = report.extra.profile as Record<string, Profile> | undefined;
    if (profiles) for (const [name, p] of Object.entries(profiles)) console.log("\n" + profileText(p, name));
    for (const n of report.notes) console.log(`\nnote: ${n}`);
    console.log(
        `\n${env.cpus} CPUs, load average ${env.loadavgBefore.map((v) => v.toFixed(2)).join(" ")} before, ${os
            .loadavg()
            .map((v) => v.toFixed(2))
            .join(" ")} after; ${result.durationSeconds} s in all`,
    );
    console.log(`results: ${path.relative(process.cwd(), outFile)}`);
    if (failed) {
        console.error(`\nbench failed: ${(failed as Error).stack ?? failed}`);
        process.exitCode = 1;
    }
}

void main();
