// Weights as code (issue 33): what staging a pinned revision costs against
// huggingface_hub alone, and whether the old server serves while it runs. The
// field's server with its DFLASH drafter from the lab's Hugging Face mirror
// (olah offline behind its front, on 127.0.120.1, lab/hf-mirror); each run
// switches the drafter from revision A to B in one `up` (B's folder removed
// first), /health watched from outside every 50 ms, then `hf download` of the
// same revision into a fresh folder on the same disk by the same
// huggingface_hub in the container (the stack's hub venv), then back to A
// (not measured). The staging runs from its marker (written before
// huggingface_hub is imported) to its manifest (written last, after every
// file was hashed): list, disk check, download, verify. `hf download` is
// timed as its whole process (interpreter start, import, download).
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { labExec, labFileMtimeMs } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import type { Deployment } from "../../lab/deployment";
import { filesAt, LAB_DRAFTER, labRepos } from "../../lab/hf-mirror/lab-repos";
import { ensureHfMirrorInstalled, startMirror, writeMirrorRepos } from "../../lab/hf-mirror/mirror";
import type { StackConfigFile } from "../../lab/stack";
import { expectCode, runEngine } from "../lib/engine";
import type { Report } from "../lib/figures";
import { HealthWatch } from "../lib/health-watch";
import { log } from "../lib/log";
import { serviceOf } from "../lib/stack-config";

/** The mirror's loopback address: the stack lab's net (127.0.120.x), beside its host (.5) and container (.29). */
const MIRROR = { address: "127.0.120.1", port: 8090, olahPort: 8091 };
const ROOT = "/models/hub";
/** Where `hf download` writes: the same disk as ROOT. */
const HF_DIR = "/models/hf-download-bench";
/** The stack's hub venv when the service has no venv section (core/weights/hub-venv.ts DEFAULT_HUB_VENV_ROOT, HUB_CLIENT_RELEASE). */
const HUB_PYTHON = "/opt/sglang-serve/huggingface-hub-1.33.0/bin/python3";

export async function phaseWeights(report: Report, d: Deployment, config: StackConfigFile, labDir: string, info: LabInfo, runs: number): Promise<void> {
    ensureHfMirrorInstalled();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-bench-mirror-"));
    const commits = writeMirrorRepos(dir)[LAB_DRAFTER]!;
    const mirror = await startMirror({ dir, ...MIRROR });
    const bytes = [
        ...filesAt(
            labRepos().find((r) => r.id === LAB_DRAFTER)!,
            1,
        ).values(),
    ].reduce((s, b) => s + b.length, 0);
    log(
        `weights: the DFLASH drafter A -> B from the lab's mirror (${(bytes / 2 ** 20).toFixed(1)} MiB), /health watched every 50 ms, then hf download of B; ${runs} runs`,
    );
    const service = serviceOf(config);
    const saved = structuredClone(service);
    const onBox = async (command: string) => {
        const r = await labExec("container", command, { labDir, timeoutMs: 120_000 });
        if (r.code !== 0) throw new Error(`lab container: ${command} -> exit ${r.code}: ${r.stderr}`);
        return r.stdout.trim();
    };
    const drafterAt = (index: number) => {
        service.speculative = {
            algorithm: "DFLASH",
            numSteps: 1,
            eagleTopk: 1,
            numDraftTokens: 16,
            draftModelSource: { hf: LAB_DRAFTER, revision: commits[index], endpoint: mirror.endpoint },
        };
        // No package index in the lab: the hub venv sees the container's system site, where huggingface_hub is (lab/README.md).
        service.weights = { root: ROOT, pip: { systemSitePackages: true, pipArgs: ["--no-index", "--no-deps"] } };
        d.writeConfig(config);
    };
    const up = async (what: string) => expectCode(await runEngine(d, ["up", "--yes", "--skip-preview"]), 0, what);
    const dirB = `${ROOT}/${LAB_DRAFTER.replace("/", "--")}/${commits[1]}`;
    const figures: Record<"staging" | "hf" | "ratio" | "failedWhileStaging", number[]> = { staging: [], hf: [], ratio: [], failedWhileStaging: [] };
    try {
        drafterAt(0);
        await up("the drafter at A (the hub venv and A staged)");
        for (let i = 0; i < runs; i++) {
            await onBox(`rm -rf ${dirB}`);
            drafterAt(1);
            const watch = new HealthWatch(`http://${info.container.address}:30000/health`);
            watch.start();
            try {
                await up("the drafter at B, staged before the stop");
            } finally {
                await watch.stop();
            }
            const began = await labFileMtimeMs("container", `${dirB}/.sglang-serve-weights/staged-by.json`, labDir);
            const done = await labFileMtimeMs("container", `${dirB}/.sglang-serve-weights/manifest.json`, labDir);
            const during = watch.samples.filter((s) => s.t >= began && s.t <= done);
            if (during.length === 0) throw new Error(`weights: no /health sample while B was staged (${began} to ${done})`);
            // huggingface_hub alone on the same files: `hf download` (its CLI, in the same venv) into a fresh folder, its own HF_HOME.
            const hfNs = await onBox(
                `rm -rf ${HF_DIR} && mkdir -p ${HF_DIR} && s=$(date +%s%N) && HF_HOME=${HF_DIR}/home HF_ENDPOINT=${mirror.endpoint} HF_HUB_DISABLE_TELEMETRY=1 ` +
                    `${HUB_PYTHON} -I -c 'import sys; from huggingface_hub.cli.hf import main; sys.argv[0] = "hf"; sys.exit(main())' ` +
                    `download ${LAB_DRAFTER} --revision ${commits[1]} --local-dir ${HF_DIR}/files >/dev/null && e=$(date +%s%N) && echo $((e - s)) && rm -rf ${HF_DIR}`,
            );
            const row = { staging: (done - began) / 1000, hf: Number(hfNs) / 1e9, failedWhileStaging: during.filter((s) => !s.ok).length };
            figures.staging.push(row.staging);
            figures.hf.push(row.hf);
            figures.ratio.push(row.hf / row.staging);
            figures.failedWhileStaging.push(row.failedWhileStaging);
            log(
                `  run ${i + 1}: staged and verified in ${row.staging.toFixed(2)} s (${during.length} /health polls, ${row.failedWhileStaging} failed); ` +
                    `hf download alone ${row.hf.toFixed(2)} s: ${(row.hf / row.staging).toFixed(2)}x its rate`,
            );
            drafterAt(0);
            await up("back to the drafter at A");
        }
    } finally {
        for (const key of Object.keys(service)) delete service[key];
        Object.assign(service, saved);
        d.writeConfig(config);
        try {
            await up("the stack's config as it was");
        } finally {
            await mirror.stop();
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }
    const size = `${(bytes / 2 ** 20).toFixed(1)} MiB, ${
        filesAt(
            labRepos().find((r) => r.id === LAB_DRAFTER)!,
            1,
        ).size
    } files`;
    report.figure("weights.staging", "staging a drafter revision before the stop (list, download, verify)", "s", figures.staging, size);
    report.figure("weights.hfDownload", "  hf download alone, the same files", "s", figures.hf, "its whole process");
    report.figure("weights.rateRatio", "  staging's rate / hf download's", "x", figures.ratio, "target >= 0.9");
    report.figure("weights.failedWhileStaging", "  /health failures while it staged", "count", figures.failedWhileStaging, "0: the old server serves on");
}
