// Checks run once the server says it is ready. Pure: the I/O driver fetches the
// JSON, these functions judge it.
//
// Why: "a server that answers /health can still generate garbage" (field notes:
// a bad configuration produced degenerate text behind a green health check), and
// a speculative-decoding flag can be accepted yet leave the drafter inactive.

import { z } from "zod";

export type CheckResult = { ok: true; text: string } | { ok: false; reason: string };

// Only the fields we judge; everything else in the completion is ignored.
const ChatCompletion = z.object({
    object: z.string().optional(),
    choices: z
        .array(
            z.object({
                message: z.object({
                    role: z.string().optional(),
                    content: z.string().nullable().optional(),
                    // SGLang's reasoning parser moves <think> text here; a thinking model
                    // with a small max_tokens may put everything in it.
                    reasoning_content: z.string().nullable().optional(),
                }),
                finish_reason: z.string().nullable().optional(),
            }),
        )
        .min(1),
});

/** The shortest text the degeneracy heuristics judge; a few characters are judged as is. */
const MIN_JUDGED_LENGTH = 12;

/**
 * Judge a /v1/chat/completions response body: well formed, and the text is
 * neither empty nor degenerate (see `degeneracyReason`).
 */
export function checkChatResponse(json: unknown): CheckResult {
    if (json !== null && typeof json === "object" && "error" in json) {
        return { ok: false, reason: `the server answered an error: ${truncate(JSON.stringify(json), 300)}` };
    }
    const parsed = ChatCompletion.safeParse(json);
    if (!parsed.success) {
        const first = parsed.error.issues[0];
        const where = first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "unknown";
        return { ok: false, reason: `not an OpenAI chat completion (${where})` };
    }
    if (parsed.data.object !== undefined && parsed.data.object !== "chat.completion") {
        return { ok: false, reason: `object is ${JSON.stringify(parsed.data.object)}, expected "chat.completion"` };
    }
    const message = parsed.data.choices[0]!.message;
    const raw = nonEmpty(message.content) ?? nonEmpty(message.reasoning_content) ?? "";
    const text = raw.replace(/<\/?think>/g, "").trim();
    const reason = degeneracyReason(text);
    if (reason) return { ok: false, reason: `${reason}: ${JSON.stringify(truncate(raw, 200))}` };
    return { ok: true, text };
}

function nonEmpty(s: string | null | undefined): string | undefined {
    return s !== null && s !== undefined && s.trim() !== "" ? s : undefined;
}

/**
 * Why `text` looks like garbage, or null. Heuristics for what broken servers
 * really emit: nothing, "!!!!!!!!", one token over and over, U+FFFD from
 * broken byte-level decoding, control characters. Deliberately conservative:
 * a false alarm blocks a deploy, so only clear degeneracy counts.
 */
export function degeneracyReason(text: string): string | null {
    const t = text.trim();
    if (t === "") return "empty text";
    if (t.includes("\uFFFD")) return "replacement characters (U+FFFD) in the text";
    // Control characters other than tab/newline/carriage return.
    // eslint-disable-next-line no-control-regex
    const controls = t.match(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g);
    if (controls) return `${controls.length} control character(s) in the text`;
    if (!/[\p{L}\p{N}]/u.test(t)) return "only whitespace and punctuation";

    const chars = [...t];
    if (chars.length >= MIN_JUDGED_LENGTH) {
        const distinct = new Set(chars.filter((c) => !/\s/.test(c))).size;
        if (distinct <= 3) return `only ${distinct} distinct character(s) in ${chars.length}`;
        // Natural text of any length uses well over 10 distinct characters.
        if (distinct < 10 && distinct / chars.length < 0.08) return `very low character variety (${distinct} distinct in ${chars.length})`;
        // The same short unit over and over without spaces ("abcabcabc", "你好你好你好").
        const compact = t.replace(/\s+/g, "");
        const unit = shortPeriod(compact, 8);
        if (unit !== null && compact.length >= unit.length * 4) return `the text repeats ${JSON.stringify(unit)}`;
    }

    const words = t.split(/\s+/).filter((w) => w !== "");
    if (words.length >= 4) {
        const counts = new Map<string, number>();
        for (const w of words) counts.set(w.toLowerCase(), (counts.get(w.toLowerCase()) ?? 0) + 1);
        const [top, n] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]!;
        if (n >= 4 && n / words.length >= 0.6) return `one token repeated: ${JSON.stringify(top)} is ${n} of ${words.length} words`;
    }
    return null;
}

/** The shortest prefix (up to maxLen chars) whose repetition makes up all of s (a partial last copy allowed). */
function shortPeriod(s: string, maxLen: number): string | null {
    const cs = [...s];
    for (let p = 1; p <= maxLen && p * 2 <= cs.length; p++) {
        let periodic = true;
        for (let i = p; i < cs.length; i++) {
            if (cs[i] !== cs[i - p]) {
                periodic = false;
                break;
            }
        }
        if (periodic) return cs.slice(0, p).join("");
    }
    return null;
}

/** Reported by /server_info; the rest of the object is ignored here. */
const ServerInfo = z.object({
    speculative_algorithm: z.string().nullable().optional(),
    internal_states: z.array(z.object({ avg_spec_accept_length: z.number().nullable().optional() }).passthrough()).optional(),
});

export type SpeculativeCheck = { ok: true; algorithm: string; acceptLength: number | null } | { ok: false; reason: string };

/** NEXTN is rewritten to EAGLE inside SGLang, and /server_info shows the rewritten name. */
function reportedAs(algorithm: string): string[] {
    const a = algorithm.toUpperCase();
    return a === "NEXTN" ? ["EAGLE", "NEXTN"] : [a];
}

/**
 * Judge GET /server_info when speculative decoding is expected: the algorithm is
 * set (NEXTN shows as EAGLE) and, where SGLang reports it,
 * internal_states[].avg_spec_accept_length is above 1 (1 means every draft
 * token was rejected, so the drafter does nothing). A value of 0 or a missing
 * value means "not measured yet" (no decode step since startup), not failure:
 * accept length is at least 1 once anything was measured.
 */
export function checkSpeculativeActive(serverInfo: unknown, expectedAlgorithm: string): SpeculativeCheck {
    const parsed = ServerInfo.safeParse(serverInfo);
    if (!parsed.success) {
        const first = parsed.error.issues[0];
        return { ok: false, reason: `unexpected /server_info shape (${first ? `${first.path.join(".")}: ${first.message}` : "unknown"})` };
    }
    const algo = parsed.data.speculative_algorithm;
    if (algo === null || algo === undefined || algo === "" || algo.toUpperCase() === "NONE") {
        return { ok: false, reason: `/server_info has no speculative_algorithm, expected ${expectedAlgorithm}` };
    }
    const accepted = reportedAs(expectedAlgorithm);
    if (!accepted.includes(algo.toUpperCase())) {
        return { ok: false, reason: `/server_info shows speculative_algorithm=${algo}, expected ${accepted.join(" or ")}` };
    }
    const lengths = (parsed.data.internal_states ?? [])
        .map((s) => s.avg_spec_accept_length)
        .filter((v): v is number => typeof v === "number" && Number.isFinite(v) && v > 0);
    for (const v of lengths) {
        if (v <= 1) {
            return { ok: false, reason: `avg_spec_accept_length is ${v}: no draft token is accepted (speculation has no effect)` };
        }
    }
    return { ok: true, algorithm: algo, acceptLength: lengths.length > 0 ? Math.min(...lengths) : null };
}

function truncate(s: string, n: number): string {
    return s.length <= n ? s : `${s.slice(0, n)}…`;
}
