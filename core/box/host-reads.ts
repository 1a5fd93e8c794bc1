// The reads a refresh sends to the Proxmox host (or the box itself, direct):
// its GPU facts, and a container's config and status. Each is one command in
// the core/batch-script.ts framing. The read-only gate allows exactly what
// these render (core/read-gate/reads.ts hands it their shapes).
import { renderBatch } from "../batch-script";
import { GPU_QUERY } from "./gpu-facts";
import { shQuote } from "../shell";

/** nvidia-smi, /proc/devices, pveversion (absent inside a container): one command for all facts. */
export function gpuFactsScript(marker: string): string {
    return renderBatch(
        [
            { name: "gpus", script: `nvidia-smi --query-gpu=${GPU_QUERY} --format=csv,noheader,nounits || exit 1` },
            { name: "devices", script: "cat /proc/devices" },
            { name: "proxmox", script: "pveversion 2>/dev/null || true" },
        ],
        marker,
    );
}

/** `pct config <vmid> --current` and `pct status <vmid>`: the container as Proxmox holds it. */
export function containerReadScript(vmid: number, marker: string): string {
    const id = shQuote(String(vmid));
    return renderBatch(
        [
            { name: "config", script: `pct config ${id} --current || exit 3` },
            { name: "status", script: `pct status ${id}` },
        ],
        marker,
    );
}
