/**
 * The SglangService's provider module, as the provider module stored in state
 * loads it (components/dynamic-provider.ts: `providers/<kind>.ts`): the
 * provider itself is the folder providers/sglang-server/ (verbs.ts the verbs;
 * apply, rollout, refresh, verdict, facts, secrets their runners).
 */
import { servedByThisProcess } from "./context";
import { sglangServiceProvider } from "./sglang-server/verbs";

export { sglangServiceProvider };

/** What the provider module stored in state calls. */
export const provider = servedByThisProcess(sglangServiceProvider);
