import assert from "node:assert/strict";
import fc from "fast-check";
import { filesAt, isLfsPath, LAB_MODEL, labRepos, seededBytes } from "../../lab/hf-mirror/lab-repos";
import { Dtype, parseSafetensorsHeader, safetensorsFile, tensorBytes } from "../../lab/hf-mirror/safetensors";

// The content of the lab's Hugging Face repositories (lab/hf-mirror/lab-repos.ts), pure.
describe("the lab's Hugging Face repositories", () => {
    it("safetensorsFile frames any tensors so that parseSafetensorsHeader reads back their specs and bytes", () => {
        const tensor = fc.record({
            name: fc.stringMatching(/^[a-z][a-z0-9_.]{0,20}$/),
            dtype: fc.constantFrom<Dtype>("BF16", "F16", "F32"),
            shape: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 3 }),
        });
        fc.assert(
            fc.property(fc.uniqueArray(tensor, { selector: (t) => t.name, maxLength: 6 }), (tensors) => {
                const file = safetensorsFile(tensors, (name, length) => seededBytes(name, length));
                const parsed = parseSafetensorsHeader(file);
                assert.equal(parsed.dataStart % 8, 0);
                for (const t of tensors) {
                    const e = parsed.tensors[t.name]!;
                    assert.deepEqual([e.dtype, e.shape], [t.dtype, t.shape]);
                    const [from, to] = e.data_offsets;
                    assert.deepEqual(file.subarray(parsed.dataStart + from, parsed.dataStart + to), seededBytes(t.name, tensorBytes(t)));
                }
            }),
        );
    });

    it("every revision's safetensors files parse, and the model's index maps each tensor to the shard holding it and sums their sizes", () => {
        for (const repo of labRepos()) {
            for (const i of repo.commits.keys()) {
                const files = filesAt(repo, i);
                const shards = [...files].filter(([p]) => p.endsWith(".safetensors")).map(([p, b]) => [p, parseSafetensorsHeader(b)] as const);
                assert.ok(shards.length > 0, `${repo.id}@${i}`);
                if (repo.id !== LAB_MODEL) continue;
                const index = JSON.parse(files.get("model.safetensors.index.json")!.toString()) as {
                    metadata: { total_size: number };
                    weight_map: Record<string, string>;
                };
                const held = Object.fromEntries(shards.flatMap(([p, h]) => Object.keys(h.tensors).map((t) => [t, p])));
                assert.deepEqual(index.weight_map, Object.fromEntries(Object.entries(held).sort(([a], [b]) => (a < b ? -1 : 1))));
                const total = shards.reduce((n, [, h]) => n + Object.values(h.tensors).reduce((m, e) => m + e.data_offsets[1] - e.data_offsets[0], 0), 0);
                assert.equal(index.metadata.total_size, total);
            }
        }
    });

    it("each repository has two commits or more (the first tagged v1) and keeps exactly its safetensors files in git LFS", () => {
        for (const repo of labRepos()) {
            assert.ok(repo.commits.length >= 2, repo.id);
            assert.equal(repo.commits[0]!.tag, "v1");
            const files = [...filesAt(repo, repo.commits.length - 1).keys()];
            assert.deepEqual(
                files.filter(isLfsPath),
                files.filter((p) => p.endsWith(".safetensors")),
            );
            for (const needed of ["config.json", "tokenizer.json", "tokenizer_config.json", ".gitattributes"])
                assert.ok(files.includes(needed), `${repo.id}: ${needed}`);
        }
    });
});
