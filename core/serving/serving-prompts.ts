/**
 * The serving-quality gate's prompt set (issue 21): fixed prompts in buckets
 * (code, prose, long context), each sent once to SGLang's native /generate
 * at temperature 0 after ready. The speculative accept length differs by
 * bucket (code drafts well, long context worse), so a drafter is measured on
 * each. `readiness.servingPrompts` replaces the whole set.
 */

export interface ServingPrompt {
    /** Figures are kept per bucket: prompts of one bucket are summed. */
    bucket: string;
    /** Sent as /generate `text` (no chat template), as SGLang's own accept-length tests do. */
    text: string;
    /** sampling_params.max_new_tokens. */
    maxNewTokens: number;
}

/** Tokens each shipped prompt asks for: enough for SGLang's decode statistics, a few seconds at 40 tok/s. */
const SHIPPED_MAX_NEW_TOKENS = 128;

/**
 * A deterministic inventory of 160 lines (about 3,500 tokens): the long-context
 * prompt asks about a few of them, so the answer depends on the whole text.
 */
function inventory(): string {
    const lines: string[] = [];
    let x = 20261201;
    const next = () => (x = (x * 1103515245 + 12345) % 2147483648);
    const racks = ["A1", "A2", "B1", "B3", "C2", "D4"];
    const states = ["ok", "ok", "ok", "ok", "degraded", "ok", "draining"];
    for (let i = 1; i <= 160; i++) {
        const rack = racks[next() % racks.length]!;
        const state = states[next() % states.length]!;
        lines.push(
            `node-${String(i).padStart(3, "0")} rack ${rack}: 2x RTX A6000, driver 570.${next() % 200}, ` +
                `GPU temperature ${40 + (next() % 45)} C, memory used ${next() % 49} GiB of 48, status ${state}`,
        );
    }
    return lines.join("\n");
}

/** The shipped set: two prompts each for code and prose, one long context. */
export const SHIPPED_SERVING_PROMPTS: readonly ServingPrompt[] = [
    {
        bucket: "code",
        text:
            "Write a Python function `merge_intervals(intervals)` that merges overlapping closed intervals given as a list of " +
            "(start, end) tuples and returns them sorted. Include a docstring and three doctest examples.\n\n```python\n",
        maxNewTokens: SHIPPED_MAX_NEW_TOKENS,
    },
    {
        bucket: "code",
        text:
            "Implement in TypeScript a class `LruCache<K, V>` with `get`, `set` and a fixed capacity, evicting the least recently " +
            "used entry, using a Map for O(1) operations.\n\n```typescript\n",
        maxNewTokens: SHIPPED_MAX_NEW_TOKENS,
    },
    {
        bucket: "prose",
        text: "Explain to a new engineer, in two paragraphs, why a rolling restart of a web service needs a health check and a drain step.\n\n",
        maxNewTokens: SHIPPED_MAX_NEW_TOKENS,
    },
    {
        bucket: "prose",
        text: "Write a short story of about 150 words about a lighthouse keeper who finds a message in a bottle.\n\n",
        maxNewTokens: SHIPPED_MAX_NEW_TOKENS,
    },
    {
        bucket: "long-context",
        text:
            `Here is the inventory of a GPU cluster, one node per line:\n\n${inventory()}\n\n` +
            "List every node whose status is not ok, with its rack and GPU temperature, then name the rack that has the most of them.\n\n",
        maxNewTokens: SHIPPED_MAX_NEW_TOKENS,
    },
];
