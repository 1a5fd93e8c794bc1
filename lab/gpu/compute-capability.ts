// The CUDA compute capability of the GPUs a lab simulates, by the name
// nvidia-smi gives them (NVIDIA's "CUDA GPUs - Compute Capability" table):
// what nvidia-smi --query-gpu=compute_cap prints, and what the lab's SGLang
// venvs' torch stub reports (torch.cuda.get_device_capability).

const BY_NAME: ReadonlyArray<[RegExp, string]> = [
    [/\bB200\b|\bGB200\b/, "10.0"],
    [/\bH100\b|\bH200\b|\bH800\b|\bGH200\b/, "9.0"],
    [/RTX 40\d0|\bL40S?\b|\bL4\b|RTX 6000 Ada/, "8.9"],
    [/RTX A\d000|RTX 30\d0|\bA40\b|\bA10\b/, "8.6"],
    [/\bA100\b|\bA800\b|\bA30\b/, "8.0"],
    [/\bT4\b|RTX 20\d0/, "7.5"],
    [/\bV100\b/, "7.0"],
];

/** The compute capability of a GPU by its name; a lab GPU of another name must be given one. */
export function computeCapabilityOf(name: string): string {
    const found = BY_NAME.find(([pattern]) => pattern.test(name));
    if (!found) throw new Error(`the lab knows no compute capability for a GPU named ${JSON.stringify(name)}: give it one (computeCap)`);
    return found[1];
}
