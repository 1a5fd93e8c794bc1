/**
 * The stack's Pulumi config namespace (`sglang-serve:service`), apart from
 * the schema (core/config/schema.ts): the dynamic providers and the config
 * readers name keys without loading zod and building the whole schema (about
 * 0.1 CPU-s a process).
 */
export const CONFIG_NAMESPACE = "sglang-serve";

/** The Pulumi config key for a path inside the stack config: `sglang-serve:service.port`. */
export function pulumiKey(path: string): string {
    return `${CONFIG_NAMESPACE}:${path}`;
}
