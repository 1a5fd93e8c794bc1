import assert from "node:assert/strict";
import { exec, lab, ok } from "./lab-fixture";

const QUERY = "--query-gpu=index,name,memory.total,memory.used,driver_version,uuid";

describe("lab nvidia-smi", function () {
    before(async function () {
        this.timeout(120_000);
        await lab();
    });

    it("answers --query-gpu with --format=csv,noheader,nounits", async () => {
        assert.equal(
            await ok("host", `nvidia-smi ${QUERY} --format=csv,noheader,nounits`),
            "0, NVIDIA RTX A6000, 49140, 1, 570.133.20, GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000000\n" +
                "1, NVIDIA RTX A6000, 49140, 1, 570.133.20, GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000001\n",
        );
    });

    it("prints a header and units with --format=csv", async () => {
        const [header, first] = (await ok("host", `nvidia-smi ${QUERY} --format=csv`)).split("\n");
        assert.equal(header, "index, name, memory.total [MiB], memory.used [MiB], driver_version, uuid");
        assert.equal(first, "0, NVIDIA RTX A6000, 49140 MiB, 1 MiB, 570.133.20, GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000000");
    });

    it("answers compute_cap as nvidia-smi does: the capability as major.minor, its header the field's name, no unit", async () => {
        assert.equal(await ok("host", "nvidia-smi --query-gpu=index,compute_cap --format=csv"), "index, compute_cap\n0, 8.6\n1, 8.6\n");
        assert.equal(await ok("container", "nvidia-smi --query-gpu=compute_cap --format=csv,noheader,nounits"), "8.6\n8.6\n");
    });

    it("selects GPUs with -i", async () => {
        assert.equal(await ok("host", "nvidia-smi -i 1 --query-gpu=index,memory.free --format=csv,noheader,nounits"), "1, 49139\n");
    });

    it("rejects an unknown field like nvidia-smi", async () => {
        const r = await exec("host", "nvidia-smi --query-gpu=index,bogus --format=csv");
        assert.equal(r.code, 2);
        assert.equal(r.stdout, 'Field "bogus" is not a valid field to query.\n');
    });

    it("lists no compute apps on idle GPUs", async () => {
        assert.equal(await ok("host", "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits"), "");
        assert.equal(await ok("host", "nvidia-smi --query-compute-apps=pid,used_memory --format=csv"), "pid, used_gpu_memory [MiB]\n");
    });

    it("works inside the container, directly and through pct exec", async () => {
        const direct = await ok("container", "nvidia-smi --query-gpu=index,name --format=csv,noheader");
        assert.equal(direct, "0, NVIDIA RTX A6000\n1, NVIDIA RTX A6000\n");
        assert.equal(await ok("host", "pct exec 129 -- nvidia-smi --query-gpu=index,name --format=csv,noheader"), direct);
    });
});
