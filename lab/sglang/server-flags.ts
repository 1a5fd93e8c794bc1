// The SGLang 0.5.11 server flags the lab knows (server_args.py add_cli_args),
// in declaration order: option strings, dest, type, default, choices.

export type FlagKind = "str" | "int" | "float" | "bool" | "json";

export interface Flag {
  opts: string[];
  dest: string;
  kind: FlagKind;
  default: string | number | boolean | null;
  choices?: string[];
  nargs?: "+" | "*";
  required?: boolean;
  metavar?: string;
}

const f = (opts: string[], kind: FlagKind, dflt: Flag["default"], extra: Partial<Flag> = {}): Flag => ({
  opts,
  dest: opts[0]!.replace(/^--/, "").replace(/-/g, "_"),
  kind,
  default: dflt,
  ...extra,
});

export const SPECULATIVE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"];

export const FLAGS: Flag[] = [
  f(["--model-path", "--model"], "str", null, { required: true }),
  f(["--tokenizer-path"], "str", null),
  f(["--tokenizer-mode"], "str", "auto", { choices: ["auto", "slow"] }),
  f(["--tokenizer-worker-num"], "int", 1),
  f(["--skip-tokenizer-init"], "bool", false),
  f(["--load-format"], "str", "auto"),
  f(["--model-loader-extra-config"], "str", "{}"),
  f(["--trust-remote-code"], "bool", false),
  f(["--context-length"], "int", null),
  f(["--is-embedding"], "bool", false),
  f(["--enable-multimodal"], "bool", null),
  f(["--revision"], "str", null),
  f(["--model-impl"], "str", "auto"),
  f(["--host"], "str", "127.0.0.1"),
  f(["--port"], "int", 30000),
  f(["--skip-server-warmup"], "bool", false),
  f(["--warmups"], "str", null),
  f(["--nccl-port"], "int", null),
  f(["--dtype"], "str", "auto", { choices: ["auto", "half", "float16", "bfloat16", "float", "float32"] }),
  f(["--quantization"], "str", null),
  f(["--kv-cache-dtype"], "str", "auto"),
  f(["--mem-fraction-static"], "float", null),
  f(["--max-running-requests"], "int", null),
  f(["--max-queued-requests"], "int", null),
  f(["--max-total-tokens"], "int", null),
  f(["--chunked-prefill-size"], "int", null),
  f(["--max-prefill-tokens"], "int", 16384),
  f(["--schedule-policy"], "str", "fcfs"),
  f(["--schedule-conservativeness"], "float", 1.0),
  f(["--page-size"], "int", null),
  f(["--device"], "str", null),
  f(["--tensor-parallel-size", "--tp-size"], "int", 1, { dest: "tp_size" }),
  f(["--pipeline-parallel-size", "--pp-size"], "int", 1, { dest: "pp_size" }),
  f(["--data-parallel-size", "--dp-size"], "int", 1, { dest: "dp_size" }),
  f(["--expert-parallel-size", "--ep-size", "--ep"], "int", 1, { dest: "ep_size" }),
  f(["--stream-interval"], "int", 1),
  f(["--random-seed"], "int", null),
  f(["--watchdog-timeout"], "float", 300),
  f(["--download-dir"], "str", null),
  f(["--base-gpu-id"], "int", 0),
  f(["--log-level"], "str", "info"),
  f(["--log-level-http"], "str", null),
  f(["--log-requests"], "bool", false),
  f(["--show-time-cost"], "bool", false),
  f(["--enable-metrics"], "bool", false),
  f(["--decode-log-interval"], "int", 40),
  f(["--api-key"], "str", null),
  f(["--served-model-name"], "str", null),
  f(["--chat-template"], "str", null),
  f(["--reasoning-parser"], "str", null),
  f(["--tool-call-parser"], "str", null),
  f(["--attention-backend"], "str", null),
  f(["--prefill-attention-backend"], "str", null),
  f(["--decode-attention-backend"], "str", null),
  f(["--sampling-backend"], "str", null),
  f(["--grammar-backend"], "str", null),
  f(["--speculative-algorithm"], "str", null, { choices: SPECULATIVE_ALGORITHMS }),
  f(["--speculative-draft-model-path", "--speculative-draft-model"], "str", null),
  f(["--speculative-draft-model-revision"], "str", null),
  f(["--speculative-num-steps"], "int", null),
  f(["--speculative-eagle-topk"], "int", null),
  f(["--speculative-num-draft-tokens"], "int", null),
  f(["--speculative-accept-threshold-single"], "float", 1.0),
  f(["--speculative-accept-threshold-acc"], "float", 1.0),
  f(["--speculative-token-map"], "str", null),
  f(["--mamba-scheduler-strategy"], "str", "auto", { choices: ["auto", "no_buffer", "extra_buffer"] }),
  f(["--max-mamba-cache-size"], "int", null),
  f(["--mamba-ssm-dtype"], "str", "float32", { choices: ["float32", "bfloat16"] }),
  f(["--disable-radix-cache"], "bool", false),
  f(["--disable-cuda-graph"], "bool", false),
  f(["--disable-cuda-graph-padding"], "bool", false),
  f(["--cuda-graph-max-bs"], "int", null),
  f(["--cuda-graph-bs"], "int", null, { nargs: "+" }),
  f(["--disable-overlap-schedule"], "bool", false),
  f(["--enable-mixed-chunk"], "bool", false),
  f(["--enable-dp-attention"], "bool", false),
  f(["--enable-torch-compile"], "bool", false),
  f(["--torch-compile-max-bs"], "int", 32),
  f(["--enable-p2p-check"], "bool", false),
  f(["--disable-custom-all-reduce"], "bool", false),
  f(["--enable-cache-report"], "bool", false),
  f(["--enable-hierarchical-cache"], "bool", false),
  f(["--allow-auto-truncate"], "bool", false),
  f(["--cpu-offload-gb"], "int", 0),
  f(["--json-model-override-args"], "str", "{}"),
  f(["--preferred-sampling-params"], "str", null),
  f(["--enable-request-time-stats-logging"], "bool", false),
  f(["--sleep-on-idle"], "bool", false),
  f(["--file-storage-path"], "str", "sglang_storage"),
  f(["--enable-lora"], "bool", null),
  f(["--max-lora-rank"], "int", null),
  f(["--lora-paths"], "str", null, { nargs: "*" }),
  f(["--max-loras-per-batch"], "int", 8),
];

export function flagByOption(opt: string): Flag | undefined {
  return FLAGS.find((fl) => fl.opts.includes(opt));
}
