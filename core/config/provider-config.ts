/**
 * The stack config the dynamic providers read at run time, by field: the
 * credentials, which are never inputs and never in resource state. The
 * provider module's `configure` (components/dynamic-provider.ts) reads these
 * keys and hands them to providers/context.ts.
 */
export const PROVIDER_CONFIG_KEYS = {
    sshPrivateKey: "sglang-serve:sshPrivateKey",
    sshPrivateKeyPassphrase: "sglang-serve:sshPrivateKeyPassphrase",
    host: "sglang-serve:host",
    boxes: "sglang-serve:boxes",
} as const;

export type ProviderConfig = { -readonly [field in keyof typeof PROVIDER_CONFIG_KEYS]?: string };
