import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { filterFiles, fnmatchRegExp, gitBlobId, HubFile, mismatchLines, parseHubRevision, verifyFiles } from "../../core/weights/hub-files";
import { gitBlobId as labGitBlobId } from "../../lab/hf-mirror/lab-repos";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

/** The Hub's answer for a small revision: a config kept in git, a weights file in LFS. */
function hubAnswer(): unknown {
    const config = Buffer.from('{"architectures": ["Qwen3ForCausalLM"]}\n');
    const weights = Buffer.alloc(4096, 7);
    const pointer = Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(weights)}\nsize 4096\n`);
    return {
        sha: "0123456789abcdef0123456789abcdef01234567",
        siblings: [
            {
                rfilename: "model.safetensors",
                size: 4096,
                blobId: gitBlobId(pointer),
                lfs: { sha256: sha256(weights), size: 4096, pointerSize: pointer.length },
            },
            { rfilename: "config.json", size: config.length, blobId: gitBlobId(config) },
        ],
    };
}

describe("weights as code: a revision's files as the Hub describes them, and the check of files against them (core/weights/hub-files.ts)", () => {
    it("parses the Hub's revision info with blobs: each file's size, git blob id and LFS sha256, sorted by path", () => {
        const r = parseHubRevision(hubAnswer());
        assert.equal(r.sha, "0123456789abcdef0123456789abcdef01234567");
        assert.deepEqual(
            r.files.map((f) => [f.path, f.size, f.lfs?.size]),
            [
                ["config.json", 40, undefined],
                ["model.safetensors", 4096, 4096],
            ],
        );
    });

    it("refuses an answer without files metadata, saying to ask with ?blobs=true", () => {
        assert.throws(
            () => parseHubRevision({ sha: "x", siblings: [{ rfilename: "config.json" }] }),
            /no size or blob id for config\.json \(ask with \?blobs=true\)/,
        );
    });

    it("computes git's blob id as the lab's repositories (and git) do", () => {
        fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => gitBlobId(Buffer.from(bytes)) === labGitBlobId(Buffer.from(bytes))));
        assert.equal(gitBlobId(Buffer.from("hello\n")), "ce013625030ba8dba906f756967f9e9ca394464a"); // `echo hello | git hash-object --stdin`
    });

    it("passes files whose LFS sha256 or git blob id match, and names each that does not, is missing, or is not the revision's", () => {
        const { files } = parseHubRevision(hubAnswer());
        const config = Buffer.from('{"architectures": ["Qwen3ForCausalLM"]}\n');
        const good = [
            { path: "config.json", size: config.length, sha256: sha256(config), gitBlobId: gitBlobId(config) },
            { path: "model.safetensors", size: 4096, sha256: sha256(Buffer.alloc(4096, 7)) },
        ];
        assert.deepEqual(verifyFiles(files, good), { mismatches: [], extras: [] });
        const bad = [
            { ...good[0]!, gitBlobId: "f".repeat(40) },
            { ...good[1]!, sha256: "e".repeat(64) },
            { path: "stray.bin", size: 1, sha256: "d".repeat(64) },
        ];
        const v = verifyFiles(files, bad);
        assert.deepEqual(v.extras, ["stray.bin"]);
        assert.deepEqual(mismatchLines(v.mismatches), [
            `config.json: the Hub's git blob id is ${gitBlobId(config)}, the downloaded file's is ${"f".repeat(40)}`,
            `model.safetensors: the Hub's sha256 (LFS) is ${sha256(Buffer.alloc(4096, 7))}, the downloaded file's is ${"e".repeat(64)}`,
        ]);
        assert.deepEqual(mismatchLines(verifyFiles(files, [good[0]!]).mismatches), ["model.safetensors: missing (the Hub lists 4096 bytes)"]);
    });

    it("filters with allow then ignore patterns as huggingface_hub does: * crosses /, a trailing / is a folder", () => {
        const files: HubFile[] = ["config.json", "model.safetensors", "original/consolidated.pth", "onnx/model.onnx", "README.md"].map((path) => ({
            path,
            size: 1,
            blobId: "x",
        }));
        const names = (allowPatterns?: string[], ignorePatterns?: string[]) => filterFiles(files, { allowPatterns, ignorePatterns }).map((f) => f.path);
        assert.deepEqual(names(), ["config.json", "model.safetensors", "original/consolidated.pth", "onnx/model.onnx", "README.md"]);
        assert.deepEqual(names(["*.json", "*.safetensors"]), ["config.json", "model.safetensors"]);
        assert.deepEqual(names(undefined, ["original/", "*.onnx"]), ["config.json", "model.safetensors", "README.md"]);
        assert.deepEqual(names(["*"], ["*.md", "[!c]*.json"]), ["config.json", "model.safetensors", "original/consolidated.pth", "onnx/model.onnx"]);
    });

    it("matches as Python's fnmatch.fnmatchcase on generated patterns and names (the real python3, in one run)", function () {
        this.timeout(30_000);
        const alphabet = fc.constantFrom("a", "b", ".", "/", "-", "_", "1");
        const name = fc.string({ unit: alphabet, minLength: 0, maxLength: 8 });
        const pattern = fc.string({ unit: fc.constantFrom("a", "b", ".", "/", "*", "?", "[a]", "[!a]", "[ab]", "1"), minLength: 0, maxLength: 5 });
        const cases = fc.sample(fc.tuple(pattern, name), { numRuns: 400, seed: 33 });
        const py = spawnSync("python3", ["-c", "import fnmatch, json, sys; print(json.dumps([fnmatch.fnmatchcase(n, p) for p, n in json.load(sys.stdin)]))"], {
            input: JSON.stringify(cases),
            encoding: "utf8",
        });
        assert.equal(py.status, 0, py.stderr);
        const expected = JSON.parse(py.stdout) as boolean[];
        cases.forEach(([p, n], i) => assert.equal(fnmatchRegExp(p).test(n), expected[i], `pattern ${JSON.stringify(p)} name ${JSON.stringify(n)}`));
    });
});
