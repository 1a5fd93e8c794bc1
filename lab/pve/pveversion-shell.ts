// pveversion's plain and verbose forms as the first lines of its shim: the
// GpuHost's read runs pveversion on every engine run, and a node start (about
// 35 ms of CPU) for two fixed lines was most of its cost.
import { shellQuote } from "../lab-build";
import { pveversionOutput } from "./pveversion-output";

/** Shell lines that print the output for no arguments or `-v`/`--verbose` alone and exit; any other shape falls through to pveversion.js. */
export function pveversionShell(proxmoxVersion: string): string {
    return [
        'case "$#:$1" in',
        `  0:) printf %s ${shellQuote(pveversionOutput(proxmoxVersion, false))}; exit 0 ;;`,
        `  1:-v | 1:--verbose) printf %s ${shellQuote(pveversionOutput(proxmoxVersion, true))}; exit 0 ;;`,
        "esac",
    ].join("\n");
}
