import assert from "node:assert/strict";
import { cudaDevices, GpuNode } from "../../lab/gpu/cuda-visible";

const nodes: GpuNode[] = [0, 1, 2].map((index) => ({ index, uuid: `GPU-1a6b0c3e-5d2f-4e7a-9b8c-00000000000${index}` }));
const indices = (visible: string | undefined) => cudaDevices(nodes, visible).map((n) => n.index);

describe("the lab's CUDA_VISIBLE_DEVICES (lab/gpu/cuda-visible.ts)", () => {
    it("gives every GPU when unset, none when empty, and the listed ones in the listed order", () => {
        assert.deepEqual(indices(undefined), [0, 1, 2]);
        assert.deepEqual(indices(""), []);
        assert.deepEqual(indices("1"), [1]);
        assert.deepEqual(indices("2,0"), [2, 0]);
    });

    it("takes GPU UUIDs and a prefix naming one GPU alone", () => {
        assert.deepEqual(indices("GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000002"), [2]);
        assert.deepEqual(indices("GPU-1a6b0c3e-5d2f-4e7a-9b8c-0000000000"), [], "a prefix of all three names no one GPU");
    });

    it("ends the list at the first entry that names no GPU, or one already named, as CUDA does", () => {
        assert.deepEqual(indices("0,7,1"), [0]);
        assert.deepEqual(indices("1,1,2"), [1]);
        assert.deepEqual(indices("x,0"), []);
    });
});
