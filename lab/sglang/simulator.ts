// The lab's SGLang server from the launcher boundary on. The release's own
// config layer runs first, for real, in the release's venv (argparse,
// prepare_server_args, ServerArgs, its logging up to `server_args=ServerArgs(...)`:
// lab/sglang/sglang_lab_venv.py); where it would start the HTTP server
// it execs this in the same process with the resolved ServerArgs and the
// release's /server_info on a memfd. This does only what needs GPUs: load
// timing, simulated GPU memory, cache sizes, the startup log lines after
// server_args, the HTTP API (generation is canned), and the faults of
// lab.json's faultsFile.
import * as fs from "fs";
import * as path from "path";
import { holdAlive, markExited, writeHolding } from "../gpu/gpu-state";
import { currentLab, LabInfo, readJson } from "../lab-info";
import { appendEvent } from "./events";
import { Faults, faultsForArgv, faultsForThisStart, readFaults } from "./faults";
import { ApiState, createApi } from "./http-api";
import type { JsonValue, ServerArgs } from "./server-args";
import { cudaDevices } from "../gpu/cuda-visible";
import { schedulerException } from "./scheduler-errors";
import { draftingOf } from "./speculation";

/** What sglang_lab_venv.py hands over at the launcher boundary. */
export interface Handoff {
    /** sglang.version.__version__ */
    release: string;
    entry: "sglang-serve" | "launch-server";
    /** sys.orig_argv: the interpreter, then the command line as the unit gave it. */
    argv: string[];
    /** When the interpreter started (the launch), epoch ms. */
    launchedAtMs: number;
    /** The release's site dir (where its sglang package is). */
    site: string;
    /** The resolved ServerArgs, the release's own dump (dataclasses.asdict). */
    serverArgs: ServerArgs;
    /** GET /server_info as the release's handler builds it; serverInfoSimulated lists what only a scheduler knows (null here). */
    serverInfo: Record<string, JsonValue>;
    serverInfoSimulated: string[];
}

export function readHandoff(fd: number): Handoff {
    const text = fs.readFileSync(fd, "utf8");
    fs.closeSync(fd);
    return JSON.parse(text) as Handoff;
}

interface ModelFolder {
    architecture: string;
    contextLen: number;
    weightBytes: number;
    attnOutputGate: boolean;
}

/** What the GPU side needs of a model folder SGLang already read: architecture, context, weights' size. */
function readModel(dir: string): ModelFolder {
    const cfg = readJson<Record<string, unknown> | null>(path.join(dir, "config.json"), null) ?? {};
    const text = (cfg.text_config as Record<string, unknown> | undefined) ?? cfg;
    const index = readJson<{ metadata?: { total_size?: number } } | null>(path.join(dir, "model.safetensors.index.json"), null);
    return {
        architecture: ((cfg.architectures as string[] | undefined) ?? ["LlamaForCausalLM"])[0]!,
        contextLen: Number(text.max_position_embeddings ?? cfg.max_position_embeddings ?? 32768),
        weightBytes: Number(index?.metadata?.total_size ?? 0),
        attnOutputGate: text.attn_output_gate === true,
    };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const p2 = (n: number) => String(n).padStart(2, "0");
const gb = (x: number) => x.toFixed(2);

function stamp(): string {
    const d = new Date();
    return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
}

/** GPU nodes this process can open: present, and not denied by the container's device cgroup (EPERM; no driver gives ENXIO), in index order. */
function openableGpuIndices(): number[] {
    try {
        return fs
            .readdirSync("/dev")
            .filter((d) => {
                if (!/^nvidia\d+$/.test(d)) return false;
                try {
                    fs.closeSync(fs.openSync(`/dev/${d}`, "r+"));
                    return true;
                } catch (e) {
                    return (e as NodeJS.ErrnoException).code !== "EPERM";
                }
            })
            .map((d) => Number(d.slice("nvidia".length)))
            .sort((x, y) => x - y);
    } catch {
        return [];
    }
}

/** Shares of the startup left after the config layer (load, pools, graphs, uvicorn, warmup), as on a real start. */
const PHASES = { dist: 0.07, weights: 0.37, draft: 0.04, pools: 0.07, graphs: 0.22, uvicorn: 0.07, warmup: 0.16 };

class Simulator {
    private readonly info: LabInfo;
    private readonly args: ServerArgs;
    private readonly site: string;
    private faults: Faults;
    private remainingMs = 0;
    private releaseDelay: number;
    private readonly infoLevel: boolean;
    private gpus: number[] = [];
    private api?: ApiState;
    private finished = false;

    constructor(private readonly handoff: Handoff) {
        this.info = currentLab();
        this.args = handoff.serverArgs;
        this.site = handoff.site;
        this.faults = faultsForThisStart(this.info.faultsFile, faultsForArgv(readFaults(this.info.faultsFile), handoff.argv));
        this.releaseDelay = this.faults.gpuReleaseDelaySeconds ?? this.info.simulator.gpuReleaseDelaySeconds;
        this.infoLevel = !["warning", "error", "critical"].includes(String(this.args.log_level).toLowerCase());
    }

    private sinceLaunch(): number {
        return Date.now() - this.handoff.launchedAtMs;
    }

    private phase(name: keyof typeof PHASES): Promise<void> {
        return sleep(this.remainingMs * PHASES[name]);
    }

    private main(msg: string, level: "INFO" | "WARNING" | "ERROR" = "INFO"): void {
        if (level === "INFO" && !this.infoLevel) return;
        process.stderr.write(`[${stamp()}] ${msg}\n`);
    }

    private rank(r: number, msg: string, level: "INFO" | "ERROR" = "INFO"): void {
        if (level === "INFO" && !this.infoLevel) return;
        process.stderr.write(`[${stamp()} TP${r}] ${msg}\n`);
    }

    private ranks(msg: (r: number) => string): void {
        for (let r = 0; r < Number(this.args.tp_size); r++) this.rank(r, msg(r));
    }

    private hold(perGpuGiB: number): void {
        const perGpuMiB: Record<string, number> = {};
        for (const g of this.gpus) perGpuMiB[String(g)] = Math.round(perGpuGiB * 1024 + 512);
        holdAlive(this.info.gpuStateDir, process.pid);
        writeHolding(this.info.gpuStateDir, {
            pid: process.pid,
            processName: this.handoff.argv[0] ?? "python3",
            perGpuMiB,
            releaseDelaySeconds: this.releaseDelay,
        });
    }

    private die(event: "crashed" | "died" | "startup-failed", detail: string, how: "sigkill" | number): never {
        this.finished = true;
        markExited(this.info.gpuStateDir, process.pid, this.releaseDelay);
        appendEvent(this.info.eventsFile, { event, detail, host: String(this.args.host ?? ""), port: Number(this.args.port ?? 0) });
        if (how === "sigkill") process.kill(process.pid, "SIGKILL");
        process.exit(how as number);
    }

    /** A scheduler rank dies: its traceback, then the main process kills the tree (SIGKILL). */
    private crash(exc: string, where: "load" | "pool" | "dist" | "run"): never {
        this.rank(0, `Scheduler hit an exception: ${schedulerException(this.site, exc, where)}`, "ERROR");
        this.main("Received sigquit from a child process. It usually means the child failed.", "ERROR");
        return this.die("crashed", exc.split("\n")[0]!, "sigkill");
    }

    async run(): Promise<void> {
        const startupMs = (this.faults.startupSeconds ?? this.info.simulator.startupSeconds) * 1000;
        // The config layer already took its real time: the rest of the startup is what is left.
        this.remainingMs = Math.max(0, startupMs - this.sinceLaunch()) / Object.values(PHASES).reduce((a, b) => a + b, 0);
        process.on("SIGTERM", () => this.onSignal("SIGTERM"));
        process.on("SIGINT", () => this.onSignal("SIGINT"));
        if (this.faults.crashAfterSeconds !== undefined) {
            setTimeout(
                () => {
                    if (!this.finished)
                        this.crash(
                            "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                            "run",
                        );
                },
                Math.max(0, this.faults.crashAfterSeconds * 1000 - this.sinceLaunch()),
            );
        }
        const a = this.args;
        const model = readModel(String(a.model_path));
        const draftPath = a.speculative_draft_model_path;
        const draft = a.speculative_algorithm ? (typeof draftPath === "string" ? readModel(draftPath) : null) : undefined;
        const tp = Number(a.tp_size);
        const base = Number(a.base_gpu_id ?? 0);
        // The GPUs CUDA gives the process (CUDA_VISIBLE_DEVICES), numbered from 0; this.gpus are their nvidia-smi indices.
        const devices = cudaDevices(
            openableGpuIndices().map((index) => ({ index, uuid: this.info.gpus.find((g) => g.index === index)?.uuid ?? "" })),
            process.env.CUDA_VISIBLE_DEVICES,
        );
        const visible = devices.length;
        this.gpus = devices.slice(base, base + tp).map((d) => d.index);

        // Distributed init.
        this.ranks(() => "Init torch distributed begin.");
        await this.phase("dist");
        if (visible === 0) this.crash("RuntimeError: No CUDA GPUs are available", "dist");
        if (base + tp > visible)
            this.crash(
                "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                "dist",
            );
        const spec = this.info.gpus.find((g) => g.index === this.gpus[0]) ?? this.info.gpus[0]!;
        const total = spec.memoryMiB / 1024;
        const ctx = 0.59;
        this.hold(ctx);
        this.ranks(() => `Init torch distributed ends. elapsed=0.41 s, mem usage=${gb(ctx)} GB`);

        // Weights.
        const wpg = model.weightBytes / tp / 2 ** 30;
        this.ranks(() => `Load weight begin. avail mem=${gb(total - ctx)} GB`);
        await this.phase("weights");
        if (wpg + ctx > total) {
            const free = total - ctx - Math.min(wpg, total - ctx - 0.5);
            this.crash(
                `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of ${gb(total - 0.52)} GiB of which ${gb(free)} GiB is free. Including non-PyTorch memory, this process has ${gb(total - free)} GiB memory in use. Of the allocated memory ${gb(total - free - 0.3)} GiB is allocated by PyTorch, and 20.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`,
                "load",
            );
        }
        if (model.attnOutputGate) this.ranks(() => "using attn output gate!");
        let used = ctx + wpg;
        this.hold(used);
        this.ranks(
            () =>
                `Load weight end. elapsed=${gb((this.remainingMs * PHASES.weights) / 1000)} s, type=${model.architecture}, avail mem=${gb(total - used)} GB, mem usage=${gb(wpg)} GB.`,
        );
        if (draft !== undefined) {
            // The checkpoint's own MTP head (NEXTN, EAGLE without a drafter), or the drafter's weights.
            const draftGiB = draft ? draft.weightBytes / tp / 2 ** 30 : 0.7;
            const draftType = draft ? draft.architecture : `${model.architecture.replace(/ForConditionalGeneration|ForCausalLM/, "")}MTP`;
            this.ranks(() => `Load weight begin. avail mem=${gb(total - used)} GB`);
            await this.phase("draft");
            used += draftGiB;
            this.hold(used);
            this.ranks(() => `Load weight end. elapsed=0.31 s, type=${draftType}, avail mem=${gb(total - used)} GB, mem usage=${gb(draftGiB)} GB.`);
        }

        // Memory pools: what mem_fraction_static leaves for the KV cache and the Mamba state.
        await this.phase("pools");
        const mf = Number(a.mem_fraction_static);
        const availAfterPools = total * (1 - mf) + 0.8;
        const usedAfterPools = total - availAfterPools;
        const mamba = 1.96 + 0.04;
        const kv = usedAfterPools - used - mamba;
        if (kv < 0.5) this.crash("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "pool");
        const tokens = Math.floor((kv * 2 ** 30) / 32768);
        used = usedAfterPools;
        this.hold(used);
        this.ranks(
            () =>
                `Mamba Cache is allocated. max_mamba_cache_size: ${Number(a.max_running_requests ?? 48) * 2}, conv_state size: 0.04GB, ssm_state size: 1.96GB `,
        );
        this.ranks(() => `KV Cache is allocated. #tokens: ${tokens}, K size: ${gb(kv / 2)} GB, V size: ${gb(kv / 2)} GB`);
        this.ranks(() => `Memory pool end. avail mem=${gb(availAfterPools)} GB`);

        // CUDA graphs.
        let availEnd = availAfterPools;
        if (!a.disable_cuda_graph) {
            this.ranks(() => `Capture cuda graph begin. This can take up to several minutes. avail mem=${gb(availAfterPools)} GB`);
            await this.phase("graphs");
            availEnd = availAfterPools - 0.4;
            used += 0.4;
            this.hold(used);
            this.ranks(
                () =>
                    `Capture cuda graph end. Time elapsed: ${gb((this.remainingMs * PHASES.graphs) / 1000)} s. mem usage=0.40 GB. avail mem=${gb(availEnd)} GB.`,
            );
        }
        const contextLen = a.context_length === null || a.context_length === undefined ? model.contextLen : Number(a.context_length);
        const maxRunning = Number(a.max_running_requests ?? 4096);
        this.rank(
            0,
            `max_total_num_tokens=${tokens}, chunked_prefill_size=${a.chunked_prefill_size}, max_prefill_tokens=${a.max_prefill_tokens}, max_running_requests=${maxRunning}, context_len=${contextLen}, available_gpu_mem=${gb(availEnd)} GB`,
        );

        // uvicorn.
        await this.phase("uvicorn");
        this.api = {
            ready: false,
            schedulerAlive: true,
            degenerate: this.faults.degenerateOutput === true,
            healthTimeoutMs: (this.faults.healthCheckTimeoutSeconds ?? 0) * 1000,
            args: a,
            serverInfo: this.handoff.serverInfo,
            release: this.handoff.release,
            architecture: model.architecture,
            contextLen,
            maxTotalTokens: tokens,
            memoryUsage: {
                weight: Math.round(wpg * 100) / 100,
                kvcache: Math.round(kv * 100) / 100,
                token_capacity: tokens,
                graph: a.disable_cuda_graph ? 0 : 0.4,
            },
            drafting: draftingOf(a),
            speedFaults: {
                ...(this.faults.acceptPinnedAtMax ? { acceptPinnedAtMax: true } : {}),
                ...(this.faults.throughputFactor !== undefined ? { throughputFactor: this.faults.throughputFactor } : {}),
                ...(this.faults.coldKernelSeconds !== undefined ? { coldKernelSeconds: this.faults.coldKernelSeconds } : {}),
                ...(this.faults.latencyJitter !== undefined ? { latencyJitter: this.faults.latencyJitter } : {}),
            },
            warmBuckets: new Set(),
            specTotals: { acceptedTokens: 0, verifySteps: 0 },
            lastGenThroughput: 0,
            counters: { prompt: 0, generation: 0, requests: 0 },
            accessLog: (l) => this.main(l),
            schedulerLog: (l) => this.rank(0, l),
        };
        const server = createApi(this.api);
        const host = String(a.host);
        const port = Number(a.port);
        await new Promise<void>((resolve) => {
            server.once("error", (e: NodeJS.ErrnoException) => {
                const why = e.code === "EADDRINUSE" ? "address already in use" : e.code === "EADDRNOTAVAIL" ? "cannot assign requested address" : e.message;
                const errno = e.code === "EADDRINUSE" ? 98 : e.code === "EADDRNOTAVAIL" ? 99 : 1;
                this.main(`ERROR:    [Errno ${errno}] error while attempting to bind on address ('${host}', ${port}): ${why}`, "ERROR");
                this.die("startup-failed", `bind ${host}:${port}: ${why}`, 1);
            });
            server.listen(port, host, () => resolve());
        });
        this.main(`INFO:     Started server process [${process.pid}]`);
        this.main("INFO:     Waiting for application startup.");
        this.main("INFO:     Application startup complete.");
        this.main(`INFO:     Uvicorn running on http://${host}:${port} (Press CTRL+C to quit)`);
        appendEvent(this.info.eventsFile, { event: "http-up", host, port });
        if (this.faults.neverReady) return;

        // Warmup: one request through the whole stack.
        await this.phase("warmup");
        this.rank(0, "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ");
        this.main(`INFO:     127.0.0.1:${40000 + (process.pid % 20000)} - "POST /generate HTTP/1.1" 200 OK`);
        this.api.ready = true;
        this.main("The server is fired up and ready to roll!");
        appendEvent(this.info.eventsFile, { event: "ready", host, port });
        const collapse = this.faults.acceptLengthAfterReady;
        if (collapse !== undefined && this.api.drafting !== null) {
            setTimeout(() => {
                if (this.api) this.api.speedFaults.collapsedTo = collapse.acceptLength;
            }, collapse.seconds * 1000);
        }
        if (this.faults.dieAfterReadySeconds !== undefined) {
            setTimeout(() => this.die("died", "killed (SIGKILL) after ready", "sigkill"), this.faults.dieAfterReadySeconds * 1000);
        }
        if (this.faults.schedulerDeathAfterReadySeconds !== undefined) {
            setTimeout(() => {
                if (!this.api) return;
                this.api.schedulerAlive = false;
                const exc = "RuntimeError: CUDA error: an illegal memory access was encountered";
                this.rank(0, `Scheduler hit an exception: ${schedulerException(this.site, exc, "run")}`, "ERROR");
                appendEvent(this.info.eventsFile, { event: "scheduler-died", detail: exc, host, port });
            }, this.faults.schedulerDeathAfterReadySeconds * 1000);
        }
    }

    private onSignal(sig: "SIGTERM" | "SIGINT"): void {
        if (this.finished) return;
        this.finished = true;
        if (this.api) {
            this.main("INFO:     Shutting down");
            this.main("INFO:     Waiting for application shutdown.");
            this.main("INFO:     Application shutdown complete.");
            this.main(`INFO:     Finished server process [${process.pid}]`);
        }
        markExited(this.info.gpuStateDir, process.pid, this.releaseDelay);
        appendEvent(this.info.eventsFile, { event: "stopped", detail: sig, host: String(this.args.host ?? ""), port: Number(this.args.port ?? 0) });
        process.removeAllListeners(sig);
        process.kill(process.pid, sig);
    }
}

export function runSimulator(handoff: Handoff): void {
    new Simulator(handoff).run().catch((e: Error) => {
        process.stderr.write(
            `Traceback (most recent call last):\n  File "<lab>", line 1, in <module>\nRuntimeError: lab simulator failure: ${e.stack ?? e.message}\n`,
        );
        process.exit(1);
    });
}
