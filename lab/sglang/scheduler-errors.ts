// Tracebacks of a scheduler (TP rank) process dying, for the failures the
// simulator reproduces behind the launcher boundary (out of memory, no room
// for the KV cache, a bad device ordinal, a crash while serving). SGLang's own
// errors before the boundary are the release's, printed by Python; these
// frames are representative of SGLang 0.5.11's scheduler, not exact line numbers.

interface Frame {
    file: string;
    line: number;
    fn: string;
    code?: string;
}

function render(frames: Frame[], exc: string): string {
    let s = "Traceback (most recent call last):\n";
    for (const f of frames) {
        s += `  File "${f.file}", line ${f.line}, in ${f.fn}\n`;
        if (f.code) s += `    ${f.code}\n`;
    }
    return s + exc + "\n";
}

/** A scheduler rank's traceback; `site` is the release's site dir (where its sglang package is). */
export function schedulerException(site: string, exc: string, where: "load" | "pool" | "dist" | "run"): string {
    const frames: Frame[] = [
        { file: `${site}/sglang/srt/managers/scheduler.py`, line: 3012, fn: "run_scheduler_process", code: "scheduler = Scheduler(" },
        { file: `${site}/sglang/srt/managers/scheduler.py`, line: 312, fn: "__init__", code: "self.tp_worker = TpModelWorker(" },
        { file: `${site}/sglang/srt/managers/tp_worker.py`, line: 92, fn: "__init__", code: "self.model_runner = ModelRunner(" },
    ];
    if (where === "dist")
        frames.push({ file: `${site}/sglang/srt/model_executor/model_runner.py`, line: 298, fn: "__init__", code: "torch.cuda.set_device(self.gpu_id)" });
    if (where === "load")
        frames.push({ file: `${site}/sglang/srt/model_executor/model_runner.py`, line: 815, fn: "load_model", code: "self.model = get_model(" });
    if (where === "pool")
        frames.push({ file: `${site}/sglang/srt/model_executor/model_runner.py`, line: 1702, fn: "init_memory_pool", code: "raise RuntimeError(" });
    if (where === "run") {
        frames.length = 0;
        frames.push(
            { file: `${site}/sglang/srt/managers/scheduler.py`, line: 3040, fn: "run_scheduler_process", code: "scheduler.event_loop_overlap()" },
            { file: `${site}/sglang/srt/managers/scheduler.py`, line: 1021, fn: "event_loop_overlap", code: "batch_result = self.run_batch(batch)" },
            { file: `${site}/sglang/srt/model_executor/model_runner.py`, line: 2110, fn: "forward", code: "return self._forward_raw(" },
        );
    }
    return render(frames, exc);
}
