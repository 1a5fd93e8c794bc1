// Which GPUs a CUDA process sees, and in what order: the lab server's side of
// CUDA_VISIBLE_DEVICES (the CUDA C Programming Guide, "CUDA Environment
// Variables"). The subset the lab follows: entries are comma-separated device
// indices or UUIDs (GPU-..., or a prefix naming one GPU alone); an entry
// that names no GPU ends the list (the GPUs before it stay visible); a GPU
// named twice ends it too; unset: every GPU. Not followed: MIG instances
// (MIG-...), which no lab GPU has.

/** A GPU the process could open: its index as nvidia-smi numbers it (PCI order) and its UUID. */
export interface GpuNode {
    index: number;
    uuid: string;
}

/** The GPUs CUDA numbers 0, 1, ... for this process: `nodes` (in PCI order, as CUDA_DEVICE_ORDER=PCI_BUS_ID orders them) filtered by `visible`. */
export function cudaDevices(nodes: readonly GpuNode[], visible: string | undefined): GpuNode[] {
    if (visible === undefined) return [...nodes];
    const out: GpuNode[] = [];
    for (const entry of visible.split(",").map((e) => e.trim())) {
        const node = /^\d+$/.test(entry) ? nodes[Number(entry)] : byUuidPrefix(nodes, entry);
        if (node === undefined || out.includes(node)) break;
        out.push(node);
    }
    return out;
}

function byUuidPrefix(nodes: readonly GpuNode[], entry: string): GpuNode | undefined {
    if (!entry.startsWith("GPU-")) return undefined;
    const matches = nodes.filter((n) => n.uuid.startsWith(entry));
    return matches.length === 1 ? matches[0] : undefined;
}
