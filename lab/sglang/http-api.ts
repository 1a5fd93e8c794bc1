// The simulated server's HTTP API (SGLang on uvicorn/FastAPI): health,
// server/model info, OpenAI-compatible chat/completions/models, /generate,
// Prometheus /metrics, and --api-key enforcement. /server_info is the body
// the release's own handler built from the real ServerArgs, with what only a
// running scheduler knows filled in.
import * as http from "http";
import { randomBytes } from "crypto";
import { acceptLengthFor, bucketOf, type Drafting, requestFigures, type SpeedFaults, timingDraw } from "./speculation";
import type { JsonValue, ServerArgs } from "./server-args";

export interface ApiState {
    ready: boolean;
    schedulerAlive: boolean;
    degenerate: boolean;
    healthTimeoutMs: number;
    args: ServerArgs;
    /** GET /server_info as the release builds it (scheduler-only values null). */
    serverInfo: Record<string, JsonValue>;
    release: string;
    architecture: string;
    /** The model's context length (context_length, else the config's max_position_embeddings). */
    contextLen: number;
    maxTotalTokens: number;
    /** Scheduler.get_internal_state's memory_usage (GB per GPU, tokens). */
    memoryUsage: Record<string, number>;
    /** Speculative decoding (lab/sglang/speculation.ts); null without. */
    drafting: Drafting | null;
    /** The faults that shape acceptance and speed; the collapse fault sets collapsedTo once due. */
    speedFaults: SpeedFaults;
    /** Prompt buckets this server has run a request of (its kernels compiled): the others are cold (SpeedFaults.coldKernelSeconds). */
    warmBuckets: Set<string>;
    /** Scheduler.spec_total_num_accepted_tokens / _forward_ct: what every request's decoding added. */
    specTotals: { acceptedTokens: number; verifySteps: number };
    /** The last request's decode speed (Scheduler.last_gen_throughput); 0 before any. */
    lastGenThroughput: number;
    counters: { prompt: number; generation: number; requests: number };
    accessLog: (line: string) => void;
    /** The scheduler's (TP rank 0) log line: the decode statistics. */
    schedulerLog: (line: string) => void;
}

const REASONS: Record<number, string> = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
};

/** utils/auth.py: OPTIONS and paths starting /health or /metrics need no key; the scheme is case-insensitive. */
function authorized(method: string | undefined, p: string, header: string | undefined, apiKey: string | null): boolean {
    if (!apiKey || method === "OPTIONS" || p.startsWith("/health") || p.startsWith("/metrics")) return true;
    const at = header?.indexOf(" ") ?? -1;
    return at > 0 && header!.slice(0, at).toLowerCase() === "bearer" && header!.slice(at + 1) === apiKey;
}

interface ChatMessage {
    role?: string;
    content?: string | Array<{ type?: string; text?: string }> | null;
}

function text(content: ChatMessage["content"]): string {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map((p) => p.text ?? "").join(" ");
    return "";
}

/** A canned but sensible answer: small arithmetic, "reply with X", else a greeting. */
export function cannedAnswer(prompt: string, served: string, degenerate: boolean, release = "0.5.11"): string {
    if (degenerate) return Array(48).fill("the").join(" ");
    const arith = /(-?\d+)\s*([+\-*x×])\s*(-?\d+)/.exec(prompt);
    if (arith) {
        const x = Number(arith[1]);
        const y = Number(arith[3]);
        const r = arith[2] === "+" ? x + y : arith[2] === "-" ? x - y : x * y;
        return `${x} ${arith[2]} ${y} = ${r}. The answer is ${r}.`;
    }
    const reply = /(?:reply|respond|answer|say)\s+(?:only\s+)?(?:with\s+)?(?:exactly\s+)?(?:the\s+word\s+)?["'`]?([A-Za-z0-9_-]+)["'`]?/i.exec(prompt);
    if (reply) return reply[1]!;
    return `Hello! I am ${served}, served by a simulated SGLang ${release} in the lab.`;
}

const countTokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));

/** SGLang's --decode-log-interval default: the scheduler folds its accept counts into the totals every this many decode steps. */
const DECODE_LOG_INTERVAL = 40;

/**
 * /server_info's avg_spec_accept_length: the running average over what the
 * server decoded, once a decode log interval's worth of verify steps has
 * been counted (SGLang reports none before that; the lab reports the prose
 * figure, as if the warmup had counted); the collapsed figure once the
 * collapse fault is due.
 */
export function avgSpecAcceptLength(state: ApiState): number | null {
    if (!state.drafting) return null;
    if (state.speedFaults.collapsedTo !== undefined) return state.speedFaults.collapsedTo;
    const { acceptedTokens, verifySteps } = state.specTotals;
    return verifySteps >= DECODE_LOG_INTERVAL
        ? Math.round((acceptedTokens / verifySteps) * 1000) / 1000
        : acceptLengthFor(state.drafting, "prose", state.speedFaults);
}

/**
 * The scheduler's decode statistics for a request, as 0.5.11's
 * log_decode_stats words them for a hybrid (Mamba) model with CUDA graphs
 * (one line per request: SGLang logs one every --decode-log-interval steps).
 */
function decodeLine(state: ApiState, tokens: number, figures: ReturnType<typeof requestFigures>): string {
    const spec = figures.spec ? `accept len: ${figures.spec.acceptLength.toFixed(2)}, accept rate: ${figures.spec.acceptRate.toFixed(2)}, ` : "";
    const usage = (tokens / Math.max(1, state.maxTotalTokens)).toFixed(2);
    return (
        `Decode batch, #running-req: 1, #full token: ${tokens}, full token usage: ${usage}, mamba num: 2, mamba usage: 0.00, ` +
        `${spec}cuda graph: ${state.args.disable_cuda_graph ? "False" : "True"}, gen throughput (token/s): ${figures.decodeTokensPerSecond.toFixed(2)}, #queue-req: 0`
    );
}

/** Filler for a long answer: the lab writes up to max_new_tokens for a prompt that asks for more than a short reply. */
const FILLER = "and the lab goes on to write the rest of a long answer one simulated token at a time".split(" ");

/**
 * The release's /server_info body with the running scheduler's numbers:
 * token capacity, the input limit (Scheduler: min(context_len - 1,
 * max_total_num_tokens - 1)), and per DP rank the memory, throughput and
 * (after speculative forward passes) the accept length.
 */
export function serverInfo(state: ApiState): Record<string, JsonValue> {
    const info = state.serverInfo;
    const dp = Math.max(1, Number(state.args.dp_size ?? 1));
    const ranks = Array.isArray(info.internal_states) ? info.internal_states : [];
    const acceptLength = avgSpecAcceptLength(state);
    return {
        ...info,
        max_total_num_tokens: state.maxTotalTokens,
        max_req_input_len: Math.min(state.contextLen - 1, state.maxTotalTokens - 1),
        internal_states: ranks.map((r) => ({
            ...(r && typeof r === "object" && !Array.isArray(r) ? r : {}),
            last_gen_throughput: state.lastGenThroughput,
            memory_usage: state.memoryUsage,
            effective_max_running_requests_per_dp: Math.floor(Number(state.args.max_running_requests ?? 4096) / dp),
            ...(acceptLength !== null ? { avg_spec_accept_length: acceptLength } : {}),
        })),
    };
}

/** The requests SGLang runs through its scheduler (counted by /v1/loads). */
const GENERATION_PATHS = new Set(["/generate", "/v1/chat/completions", "/v1/completions"]);

export function createApi(state: ApiState): http.Server {
    const served = () => String(state.args.served_model_name);
    const created = Math.floor(Date.now() / 1000);
    // Generation requests not answered yet: what SGLang's /v1/loads counts as running (the lab has no queue).
    let generating = 0;
    return http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://lab");
        const p = url.pathname;
        if (GENERATION_PATHS.has(p)) {
            generating++;
            res.once("close", () => generating--);
        }
        const send = (status: number, body: unknown, type = "application/json") => {
            const payload = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
            res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(payload) });
            res.end(payload);
            const addr = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
            state.accessLog(`INFO:     ${addr} - "${req.method} ${req.url} HTTP/${req.httpVersion}" ${status} ${REASONS[status] ?? ""}`);
        };
        const apiKey = typeof state.args.api_key === "string" && state.args.api_key !== "" ? state.args.api_key : null;
        if (!authorized(req.method, p, req.headers.authorization, apiKey)) {
            send(401, { error: "Unauthorized" });
            return;
        }
        let body = "";
        req.setEncoding("utf8");
        req.on("data", (d: string) => (body += d));
        req.on("end", () => {
            const get = req.method === "GET" || req.method === "HEAD";
            const post = req.method === "POST";
            const json = (): Record<string, unknown> | null => {
                try {
                    return JSON.parse(body || "{}") as Record<string, unknown>;
                } catch {
                    return null;
                }
            };
            switch (p) {
                case "/health":
                case "/health_generate":
                    if (!state.ready) return send(503, undefined);
                    if (!state.schedulerAlive) {
                        setTimeout(() => send(503, undefined), state.healthTimeoutMs);
                        return;
                    }
                    return send(200, undefined);
                case "/ping":
                    return send(200, undefined);
                case "/v1/loads": {
                    // SGLang's v1_loads.py: per DP rank and in aggregate (the core section; the lab has one rank, no queue).
                    if (!get) return send(405, { detail: "Method Not Allowed" });
                    const load = { dp_rank: 0, num_running_reqs: generating, num_waiting_reqs: 0, num_total_reqs: generating };
                    return send(200, {
                        timestamp: new Date().toISOString(),
                        version: state.release,
                        dp_rank_count: 1,
                        loads: [load],
                        aggregate: { total_running_reqs: generating, total_waiting_reqs: 0, total_reqs: generating },
                    });
                }
                case "/server_info":
                case "/get_server_info":
                    if (!get) return send(405, { detail: "Method Not Allowed" });
                    return send(200, serverInfo(state));
                case "/model_info":
                case "/get_model_info":
                    if (!get) return send(405, { detail: "Method Not Allowed" });
                    return send(200, {
                        model_path: state.args.model_path,
                        tokenizer_path: state.args.tokenizer_path,
                        is_generation: true,
                        preferred_sampling_params: state.args.preferred_sampling_params ?? null,
                        weight_version: "default",
                        has_image_understanding: state.architecture.includes("ConditionalGeneration"),
                        has_audio_understanding: false,
                        model_type: "qwen3_5",
                        architectures: [state.architecture],
                    });
                case "/v1/models":
                    if (!get) return send(405, { detail: "Method Not Allowed" });
                    return send(200, {
                        object: "list",
                        data: [{ id: served(), object: "model", created, owned_by: "sglang", root: served(), parent: null, max_model_len: state.contextLen }],
                    });
                case "/metrics": {
                    if (!state.args.enable_metrics) return send(404, { detail: "Not Found" });
                    const labels = `{model_name="${served()}"}`;
                    const lines = [
                        "# HELP sglang:num_running_reqs The number of running requests.",
                        "# TYPE sglang:num_running_reqs gauge",
                        `sglang:num_running_reqs${labels} 0.0`,
                        "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.",
                        "# TYPE sglang:num_queue_reqs gauge",
                        `sglang:num_queue_reqs${labels} 0.0`,
                        "# HELP sglang:token_usage The token usage.",
                        "# TYPE sglang:token_usage gauge",
                        `sglang:token_usage${labels} 0.0`,
                        "# HELP sglang:gen_throughput The generation throughput (token/s).",
                        "# TYPE sglang:gen_throughput gauge",
                        `sglang:gen_throughput${labels} ${state.lastGenThroughput.toFixed(1)}`,
                        "# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.",
                        "# TYPE sglang:spec_accept_length gauge",
                        `sglang:spec_accept_length${labels} ${avgSpecAcceptLength(state) ?? 0.0}`,
                        "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.",
                        "# TYPE sglang:prompt_tokens_total counter",
                        `sglang:prompt_tokens_total${labels} ${state.counters.prompt}.0`,
                        "# HELP sglang:generation_tokens_total Number of generation tokens processed.",
                        "# TYPE sglang:generation_tokens_total counter",
                        `sglang:generation_tokens_total${labels} ${state.counters.generation}.0`,
                        "# HELP sglang:num_requests_total Number of requests processed.",
                        "# TYPE sglang:num_requests_total counter",
                        `sglang:num_requests_total${labels} ${state.counters.requests}.0`,
                        "",
                    ];
                    return send(200, lines.join("\n"), "text/plain; version=0.0.4; charset=utf-8");
                }
                case "/v1/chat/completions":
                case "/v1/completions":
                case "/generate": {
                    if (!post) return send(405, { detail: "Method Not Allowed" });
                    const req0 = json();
                    if (!req0) return send(400, { object: "error", message: "Invalid JSON body", type: "BadRequestError", param: null, code: 400 });
                    if (!state.ready || !state.schedulerAlive) {
                        return send(503, {
                            object: "error",
                            message: "The server is not ready to serve requests.",
                            type: "ServiceUnavailableError",
                            param: null,
                            code: 503,
                        });
                    }
                    const prompt =
                        p === "/v1/chat/completions"
                            ? (((req0.messages as ChatMessage[] | undefined) ?? [])
                                  .filter((m) => m.role === "user")
                                  .map((m) => text(m.content))
                                  .pop() ?? "")
                            : String(req0.prompt ?? req0.text ?? "");
                    const maxTokens = Number(
                        req0.max_tokens ?? req0.max_completion_tokens ?? (req0.sampling_params as Record<string, unknown> | undefined)?.max_new_tokens ?? 256,
                    );
                    const canned = cannedAnswer(prompt, served(), state.degenerate, state.release);
                    let words = canned.split(" ");
                    // /generate of a prompt that asks for more than a short reply: an answer as long as allowed.
                    if (p === "/generate" && canned === cannedAnswer("", served(), state.degenerate, state.release)) {
                        for (let i = 0; words.length < maxTokens; i++) words.push(FILLER[i % FILLER.length]!);
                    }
                    const truncated = words.length > maxTokens;
                    if (truncated) words = words.slice(0, maxTokens);
                    const answer = words.join(" ");
                    const usage = {
                        prompt_tokens: countTokens(prompt),
                        completion_tokens: words.length,
                        total_tokens: countTokens(prompt) + words.length,
                        prompt_tokens_details: null,
                    };
                    state.counters.prompt += usage.prompt_tokens;
                    state.counters.generation += usage.completion_tokens;
                    state.counters.requests++;
                    const bucket = bucketOf(prompt);
                    const timing = timingDraw(state.speedFaults, !state.warmBuckets.has(bucket));
                    state.warmBuckets.add(bucket);
                    const figures = requestFigures(state.drafting, prompt, usage.prompt_tokens, usage.completion_tokens, state.speedFaults, timing);
                    state.lastGenThroughput = Math.round(figures.decodeTokensPerSecond * 100) / 100;
                    if (figures.spec) {
                        state.specTotals.acceptedTokens += usage.completion_tokens;
                        state.specTotals.verifySteps += figures.spec.verifyCount;
                    }
                    state.schedulerLog(decodeLine(state, usage.prompt_tokens + usage.completion_tokens, figures));
                    const id = randomBytes(16).toString("hex");
                    const finish = truncated ? "length" : "stop";
                    const now = Math.floor(Date.now() / 1000);
                    if (p === "/generate") {
                        return send(200, {
                            text: answer,
                            meta_info: {
                                id,
                                finish_reason: truncated ? { type: "length", length: maxTokens } : { type: "stop", matched: 248046 },
                                prompt_tokens: usage.prompt_tokens,
                                completion_tokens: usage.completion_tokens,
                                cached_tokens: 0,
                                e2e_latency: figures.e2eLatency,
                                // tokenizer_manager._calculate_spec_decoding_metrics
                                ...(figures.spec
                                    ? {
                                          spec_accept_rate: figures.spec.acceptRate,
                                          spec_accept_length: figures.spec.acceptLength,
                                          spec_accepted_drafts: figures.spec.acceptedDrafts,
                                          spec_proposed_drafts: figures.spec.proposedDrafts,
                                          spec_verify_ct: figures.spec.verifyCount,
                                      }
                                    : {}),
                            },
                        });
                    }
                    if (p === "/v1/completions") {
                        return send(200, {
                            id,
                            object: "text_completion",
                            created: now,
                            model: served(),
                            choices: [{ index: 0, text: answer, logprobs: null, finish_reason: finish, matched_stop: truncated ? null : 248046 }],
                            usage,
                        });
                    }
                    if (req0.stream === true) {
                        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
                        const chunk = (delta: Record<string, unknown>, fr: string | null) =>
                            `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: now, model: served(), choices: [{ index: 0, delta, logprobs: null, finish_reason: fr }] })}\n\n`;
                        res.write(chunk({ role: "assistant", content: "" }, null));
                        words.forEach((w, i) => res.write(chunk({ content: i === 0 ? w : ` ${w}` }, null)));
                        res.write(chunk({}, finish));
                        res.end("data: [DONE]\n\n");
                        state.accessLog(`INFO:     ${req.socket.remoteAddress}:${req.socket.remotePort} - "POST ${req.url} HTTP/${req.httpVersion}" 200 OK`);
                        return;
                    }
                    return send(200, {
                        id,
                        object: "chat.completion",
                        created: now,
                        model: served(),
                        choices: [
                            {
                                index: 0,
                                message: { role: "assistant", content: answer, reasoning_content: null, tool_calls: null },
                                logprobs: null,
                                finish_reason: finish,
                                matched_stop: truncated ? null : 248046,
                            },
                        ],
                        usage,
                    });
                }
                default:
                    return send(404, { detail: "Not Found" });
            }
        });
    });
}
