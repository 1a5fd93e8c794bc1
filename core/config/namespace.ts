/**
 * The stack's Pulumi config namespace (`sglang-serve:service`), apart from
 * the schema (core/config/schema.ts): the dynamic providers and the config
 * readers name keys without building the whole schema (about 16 ms of each
 * provider process's start, 2026-12-06).
 */
export const CONFIG_NAMESPACE = "sglang-serve";

/** The Pulumi config key for a path inside the stack config: `sglang-serve:service.port`. */
export function pulumiKey(path: string): string {
    return `${CONFIG_NAMESPACE}:${path}`;
}
