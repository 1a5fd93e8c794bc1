import assert from "node:assert/strict";
import { parseComputeAppsCsv, parseGpuMemoryCsv, parseNvidiaSmiCsv } from "../../core/box/nvidia-smi";
import { GPU_QUERY, parseGpuQuery, serverComputeCapability } from "../../core/box/gpu-facts";

describe("nvidia-smi CSV", () => {
    it("parses each GPU's UUID and memory.used", () => {
        assert.deepEqual(parseGpuMemoryCsv("0, GPU-1a6b0c3e-0000, 43012\n1, GPU-1a6b0c3e-0001, 3\n"), [
            { index: 0, uuid: "GPU-1a6b0c3e-0000", memoryUsedMiB: 43012 },
            { index: 1, uuid: "GPU-1a6b0c3e-0001", memoryUsedMiB: 3 },
        ]);
    });

    it("parses compute apps with the GPU each holds memory on, with [N/A] memory as null", () => {
        assert.deepEqual(parseComputeAppsCsv("4242, 43000, GPU-a\r\n4243, [N/A], GPU-b\n"), [
            { pid: 4242, usedMemoryMiB: 43000, gpuUuid: "GPU-a" },
            { pid: 4243, usedMemoryMiB: null, gpuUuid: "GPU-b" },
        ]);
    });

    it("reads no compute apps from empty output and from the 'No running processes found' notice", () => {
        assert.deepEqual(parseComputeAppsCsv(""), []);
        assert.deepEqual(parseComputeAppsCsv("No running processes found\n"), []);
    });

    it("rejects nvidia-smi's error prose instead of reading it as rows", () => {
        assert.throws(
            () =>
                parseGpuMemoryCsv(
                    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
                ),
            /expected 3 comma-separated fields/,
        );
    });

    it("rejects a non-numeric value", () => {
        assert.throws(() => parseGpuMemoryCsv("0, GPU-a, [N/A]\n"), /unexpected memory.used/);
    });

    it("splits rows into trimmed fields", () => {
        assert.deepEqual(parseNvidiaSmiCsv(" a , b,c \n\n d,e,f"), [
            ["a", "b", "c"],
            ["d", "e", "f"],
        ]);
    });
});

describe("the GpuHost's GPU facts (core/box/gpu-facts.ts)", () => {
    it("reads each GPU's compute capability from the query's last column (compute_cap), as nvidia-smi prints it", () => {
        const { gpus, driverVersion } = parseGpuQuery(
            "0, NVIDIA H100 80GB HBM3, 81559, 570.133.20, GPU-a, 9.0\n1, NVIDIA H100 80GB HBM3, 81559, 570.133.20, GPU-b, 9.0\n",
        );
        assert.equal(GPU_QUERY.split(",").pop(), "compute_cap");
        assert.deepEqual(
            gpus.map((g) => [g.index, g.name, g.computeCapability]),
            [
                [0, "NVIDIA H100 80GB HBM3", "9.0"],
                [1, "NVIDIA H100 80GB HBM3", "9.0"],
            ],
        );
        assert.equal(driverVersion, "570.133.20");
        // A driver that cannot say ([N/A]) leaves it out; a line of another shape is not guessed at.
        assert.equal(parseGpuQuery("0, Tesla V100, 16384, 470.1, GPU-a, [N/A]\n").gpus[0]!.computeCapability, undefined);
        assert.throws(() => parseGpuQuery("0, NVIDIA RTX A6000, 49140, 570.133.20, GPU-a\n"), /unexpected nvidia-smi line/);
    });

    it("gives a server the lowest compute capability among the host GPUs it uses, none when one is not known", () => {
        const gpu = (index: number, computeCapability?: string) => ({
            index,
            name: "x",
            memoryMiB: 1,
            uuid: `GPU-${index}`,
            ...(computeCapability ? { computeCapability } : {}),
        });
        const mixed = [gpu(0, "9.0"), gpu(1, "8.6"), gpu(2, "10.0"), gpu(3)];
        assert.equal(serverComputeCapability(mixed, [0, 2]), "9.0");
        assert.equal(serverComputeCapability(mixed, [2, 1]), "8.6");
        assert.equal(serverComputeCapability(mixed, [0, 3]), undefined);
        assert.equal(serverComputeCapability(mixed.slice(0, 3)), "8.6");
        assert.equal(serverComputeCapability([], [0]), undefined);
    });
});
