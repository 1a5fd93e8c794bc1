import assert from "node:assert/strict";
import { parseComputeAppsCsv, parseGpuMemoryCsv, parseNvidiaSmiCsv } from "../../core/nvidia-smi";

describe("nvidia-smi CSV", () => {
    it("parses memory.used per GPU", () => {
        assert.deepEqual(parseGpuMemoryCsv("0, 43012\n1, 3\n"), [
            { index: 0, memoryUsedMiB: 43012 },
            { index: 1, memoryUsedMiB: 3 },
        ]);
    });

    it("parses compute apps, with [N/A] memory as null", () => {
        assert.deepEqual(parseComputeAppsCsv("4242, 43000\r\n4243, [N/A]\n"), [
            { pid: 4242, usedMemoryMiB: 43000 },
            { pid: 4243, usedMemoryMiB: null },
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
            /expected 2 comma-separated fields/,
        );
    });

    it("rejects a non-numeric value", () => {
        assert.throws(() => parseGpuMemoryCsv("0, [N/A]\n"), /unexpected memory.used/);
    });

    it("splits rows into trimmed fields", () => {
        assert.deepEqual(parseNvidiaSmiCsv(" a , b,c \n\n d,e,f"), [
            ["a", "b", "c"],
            ["d", "e", "f"],
        ]);
    });
});
