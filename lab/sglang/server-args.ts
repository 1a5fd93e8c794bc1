// ServerArgs.__post_init__ for the part the stack depends on: defaults filled
// in, NEXTN rewritten to EAGLE, the speculative parameter rules, the hybrid
// (GDN/Mamba) radix-cache rule of 0.5.10+, and the log lines they produce.
import { ArgValue } from "./argparse";

export const HYBRID_ARCHITECTURES = [
  "Qwen3_5ForConditionalGeneration",
  "Qwen3_5MoeForConditionalGeneration",
  "Qwen3NextForCausalLM",
  "NemotronHForCausalLM",
  "FalconH1ForCausalLM",
];

export interface ModelConfig {
  architecture: string;
  maxPositionEmbeddings: number;
  weightBytes: number;
  hasMtp: boolean;
}

export interface Resolution {
  args: Record<string, ArgValue>;
  /** Log lines of the main process, in order: [level, message]. */
  log: Array<["INFO" | "WARNING", string]>;
  /** A Python exception line ("ValueError: ...") when startup must fail here. */
  exception?: string;
  specV2: boolean;
  /** The algorithm as given on the command line (before NEXTN -> EAGLE). */
  requestedAlgorithm: string | null;
}

export function envTrue(v: string | undefined): boolean {
  return v !== undefined && ["1", "true", "yes", "on"].includes(v.trim().toLowerCase());
}

export function resolveServerArgs(parsed: Record<string, ArgValue>, model: ModelConfig, env: NodeJS.ProcessEnv): Resolution {
  const a: Record<string, ArgValue> = { ...parsed };
  const log: Resolution["log"] = [];
  const specV2 = envTrue(env.SGLANG_ENABLE_SPEC_V2);
  const requestedAlgorithm = (a.speculative_algorithm as string | null) ?? null;
  const out = (exception?: string): Resolution => ({ args: a, log, exception, specV2, requestedAlgorithm });

  a.tokenizer_path ??= a.model_path;
  a.served_model_name ??= a.model_path;
  a.device ??= "cuda";
  a.page_size ??= 1;
  a.random_seed ??= Math.floor(Math.random() * 1_000_000_000);
  a.context_length ??= model.maxPositionEmbeddings;
  a.chunked_prefill_size ??= 4096;
  a.mem_fraction_static ??= 0.85;
  if (a.attention_backend === null) {
    log.push(["WARNING", "Attention backend not specified. Use flashinfer backend by default."]);
    a.attention_backend = "flashinfer";
  }
  a.sampling_backend ??= "flashinfer";
  a.grammar_backend ??= "xgrammar";
  const hybrid = HYBRID_ARCHITECTURES.includes(model.architecture);
  if (a.mamba_scheduler_strategy === "auto") a.mamba_scheduler_strategy = "no_buffer";

  if (requestedAlgorithm) {
    if (requestedAlgorithm === "NEXTN") a.speculative_algorithm = "EAGLE";
    if (requestedAlgorithm === "NEXTN" || (requestedAlgorithm === "EAGLE" && a.speculative_draft_model_path === null && model.hasMtp)) {
      a.speculative_draft_model_path ??= a.model_path;
    }
    if (a.max_running_requests === null) {
      a.max_running_requests = 48;
      log.push(["WARNING", "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests."]);
    }
    if (requestedAlgorithm !== "NGRAM") {
      const steps = a.speculative_num_steps as number | null;
      const topk = a.speculative_eagle_topk as number | null;
      const draft = a.speculative_num_draft_tokens as number | null;
      if (steps === null && topk === null && draft === null) {
        a.speculative_num_steps = 3;
        a.speculative_eagle_topk = 1;
        a.speculative_num_draft_tokens = 4;
      } else if (steps === null) {
        return out("AssertionError");
      } else if (topk === null) {
        return out("TypeError: '>' not supported between instances of 'NoneType' and 'int'");
      } else if (topk === 1 && draft !== steps + 1) {
        if (draft !== null) log.push(["WARNING", "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"]);
        a.speculative_num_draft_tokens = steps + 1;
      } else if (draft === null) {
        return out("AssertionError");
      }
    }
    if (!specV2) {
      log.push(["WARNING", "Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm. You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental overlap scheduler."]);
      a.disable_overlap_schedule = true;
    }
    if (hybrid && !a.disable_radix_cache) {
      if (a.mamba_scheduler_strategy === "no_buffer") {
        return out(
          `ValueError: Speculative decoding for ${model.architecture} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`,
        );
      }
      if (!specV2) {
        // Lab assumption (see lab/README.md): extra_buffer with speculation needs the V2 worker as well.
        return out(
          `ValueError: Speculative decoding for ${model.architecture} with --mamba-scheduler-strategy extra_buffer requires SGLANG_ENABLE_SPEC_V2=1 (the overlap scheduler with the V2 speculative worker).`,
        );
      }
    }
  }
  a.cuda_graph_max_bs ??= requestedAlgorithm ? 48 : 160;
  return out();
}

/** Python repr of a value, as in `server_args=ServerArgs(...)`. */
export function pyRepr(v: ArgValue, float = false): string {
  if (v === null) return "None";
  if (float && typeof v === "number" && Number.isInteger(v)) return `${v}.0`;
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") return v === Infinity ? "inf" : String(v);
  if (Array.isArray(v)) return `[${v.map((x) => pyRepr(x)).join(", ")}]`;
  return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}
