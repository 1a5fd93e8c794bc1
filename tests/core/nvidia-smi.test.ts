import assert from "node:assert/strict";
import { parseComputeAppsCsv, parseGpuMemoryCsv, parseNvidiaSmiCsv } from "../../core/box/nvidia-smi";

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
