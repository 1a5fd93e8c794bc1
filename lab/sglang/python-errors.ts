// Python-looking tracebacks for the failures the simulator reproduces. The
// frames are representative of SGLang 0.5.11's call paths, not exact line numbers.

export type Entry = "launch_server" | "serve";

export const SITE = "/opt/sglang/venv/lib/python3.12/site-packages";

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

function entryFrames(entry: Entry): Frame[] {
  if (entry === "serve") {
    return [
      { file: "/opt/sglang/venv/bin/sglang", line: 10, fn: "<module>", code: "sys.exit(main())" },
      { file: `${SITE}/sglang/cli/main.py`, line: 53, fn: "main", code: "args.func(args, extra)" },
      { file: `${SITE}/sglang/cli/serve.py`, line: 98, fn: "serve", code: "server_args = prepare_server_args(extra_argv)" },
    ];
  }
  return [
    { file: "<frozen runpy>", line: 198, fn: "_run_module_as_main" },
    { file: "<frozen runpy>", line: 88, fn: "_run_code" },
    { file: `${SITE}/sglang/launch_server.py`, line: 32, fn: "<module>", code: "server_args = prepare_server_args(sys.argv[1:])" },
  ];
}

const postInit: Frame[] = [
  { file: `${SITE}/sglang/srt/server_args.py`, line: 4807, fn: "prepare_server_args", code: "return ServerArgs.from_cli_args(raw_args)" },
  { file: `${SITE}/sglang/srt/server_args.py`, line: 4416, fn: "from_cli_args", code: "return cls(**{attr: getattr(args, attr) for attr in attrs})" },
  { file: "<string>", line: 321, fn: "__init__" },
  { file: `${SITE}/sglang/srt/server_args.py`, line: 681, fn: "__post_init__", code: "self._handle_speculative_decoding()" },
];

/** An exception raised while ServerArgs resolves (before anything is loaded). */
export function serverArgsError(entry: Entry, where: "speculative" | "model-config", exc: string): string {
  const tail: Frame[] =
    where === "speculative"
      ? [{ file: `${SITE}/sglang/srt/server_args.py`, line: 2231, fn: "_handle_speculative_decoding", code: exc.startsWith("AssertionError") ? "assert (" : "raise ValueError(" }]
      : [
          { file: `${SITE}/sglang/srt/server_args.py`, line: 694, fn: "__post_init__", code: "self._handle_model_specific_adjustments()" },
          { file: `${SITE}/sglang/srt/utils/hf_transformers_utils.py`, line: 312, fn: "get_config", code: "config = AutoConfig.from_pretrained(" },
        ];
  return render([...entryFrames(entry), ...postInit.slice(0, where === "speculative" ? 4 : 3), ...tail], exc);
}

/** A scheduler (TP rank) process dying: logged by the rank, then the main process goes. */
export function schedulerException(exc: string, where: "load" | "pool" | "dist" | "run"): string {
  const frames: Frame[] = [
    { file: `${SITE}/sglang/srt/managers/scheduler.py`, line: 3012, fn: "run_scheduler_process", code: "scheduler = Scheduler(" },
    { file: `${SITE}/sglang/srt/managers/scheduler.py`, line: 312, fn: "__init__", code: "self.tp_worker = TpModelWorker(" },
    { file: `${SITE}/sglang/srt/managers/tp_worker.py`, line: 92, fn: "__init__", code: "self.model_runner = ModelRunner(" },
  ];
  if (where === "dist") frames.push({ file: `${SITE}/sglang/srt/model_executor/model_runner.py`, line: 298, fn: "__init__", code: "torch.cuda.set_device(self.gpu_id)" });
  if (where === "load") frames.push({ file: `${SITE}/sglang/srt/model_executor/model_runner.py`, line: 815, fn: "load_model", code: "self.model = get_model(" });
  if (where === "pool") frames.push({ file: `${SITE}/sglang/srt/model_executor/model_runner.py`, line: 1702, fn: "init_memory_pool", code: 'raise RuntimeError(' });
  if (where === "run") {
    frames.length = 0;
    frames.push(
      { file: `${SITE}/sglang/srt/managers/scheduler.py`, line: 3040, fn: "run_scheduler_process", code: "scheduler.event_loop_overlap()" },
      { file: `${SITE}/sglang/srt/managers/scheduler.py`, line: 1021, fn: "event_loop_overlap", code: "batch_result = self.run_batch(batch)" },
      { file: `${SITE}/sglang/srt/model_executor/model_runner.py`, line: 2110, fn: "forward", code: "return self._forward_raw(" },
    );
  }
  return render(frames, exc);
}
