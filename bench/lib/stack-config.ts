import type { StackConfigFile } from "../../lab/stack";

/** The deployed stack's `sglang-serve:service` section, which the phases change and put back. */
export function serviceOf(config: StackConfigFile): Record<string, unknown> {
    return config["sglang-serve:service"]!;
}
