import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import {
    compareWithManifest,
    Manifest,
    manifestCheckArgv,
    manifestDigest,
    manifestDriftLines,
    mtimeNsOf,
    parseManifest,
    parseManifestCheck,
    pinnedWeightsDigest,
} from "../../core/weights/manifest";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const REV = "0123456789abcdef0123456789abcdef01234567";

function manifestOf(files: Array<{ path: string; bytes: Buffer; mtimeNs?: string }>): Manifest {
    const entries = files.map((f) => ({ path: f.path, size: f.bytes.length, sha256: sha256(f.bytes), mtimeNs: f.mtimeNs ?? "1796528797096016963" }));
    return {
        format: 1,
        repo: "org/name",
        revision: REV,
        stagedBy: "sglang-serve/kpro5",
        stagedAt: 1796528797.5,
        files: entries,
        digest: manifestDigest(entries),
    };
}

describe("weights as code: a staged revision's manifest and the checks against it (core/weights/manifest.ts)", () => {
    it("digests the content only: sorted `<sha256>  <size>  <path>` lines, the same whatever the order, mtimes or owner", () => {
        const files = [
            { path: "b.json", size: 2, sha256: "b".repeat(64) },
            { path: "a.safetensors", size: 10, sha256: "a".repeat(64) },
        ];
        assert.equal(manifestDigest(files), sha256(`${"a".repeat(64)}  10  a.safetensors\n${"b".repeat(64)}  2  b.json\n`));
        assert.equal(manifestDigest([...files].reverse()), manifestDigest(files));
        assert.equal(pinnedWeightsDigest({ revision: REV, digest: manifestDigest(files) }), `${REV}/${manifestDigest(files)}`);
    });

    it("digests as the box-side program does (its manifest_digest, run by the real python3)", () => {
        const files = [
            { path: "config.json", size: 528, sha256: "1".repeat(64) },
            { path: "sub dir/ü.bin", size: 3, sha256: "2".repeat(64) },
        ];
        const program = path.join(__dirname, "..", "..", "weights", "sglang-serve-weights.py");
        const py = spawnSync(
            "python3",
            [
                "-c",
                `import importlib.util, json, sys\nspec = importlib.util.spec_from_file_location("w", ${JSON.stringify(program)})\nw = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)\nprint(w.manifest_digest(json.load(sys.stdin)))`,
            ],
            { input: JSON.stringify(files), encoding: "utf8" },
        );
        assert.equal(py.status, 0, py.stderr);
        assert.equal(py.stdout.trim(), manifestDigest(files));
    });

    it("reads a manifest back, and refuses one whose digest does not match its files (edited, or cut short)", () => {
        const m = manifestOf([{ path: "config.json", bytes: Buffer.from("{}") }]);
        assert.deepEqual(parseManifest(JSON.stringify(m)), m);
        const edited = { ...m, files: [{ ...m.files[0]!, size: 3 }] };
        assert.throws(() => parseManifest(JSON.stringify(edited)), /digest .* does not match its files/);
        assert.throws(() => parseManifest("{"), /not JSON/);
    });

    it("keeps an mtime in nanoseconds exactly, from the manifest's decimal string and from find's %T@", () => {
        assert.equal(mtimeNsOf("1796528797.0960169630"), "1796528797096016963");
        assert.equal(mtimeNsOf("1796528797"), "1796528797000000000");
        assert.equal(mtimeNsOf("1796528797.5"), "1796528797500000000");
        fc.assert(
            fc.property(fc.bigInt({ min: 0n, max: 4_000_000_000n * 1_000_000_000n }), (ns) => {
                const s = ns.toString().padStart(10, "0");
                const findText = `${s.slice(0, -9) || "0"}.${s.slice(-9)}0`;
                return mtimeNsOf(findText) === ns.toString();
            }),
        );
    });

    it("finds a missing, a resized, a touched and an added file in the cheap check, and a changed sha256 in the full one, naming each", () => {
        const m = manifestOf([
            { path: "a.json", bytes: Buffer.from("a") },
            { path: "b.safetensors", bytes: Buffer.from("bb") },
            { path: "c.json", bytes: Buffer.from("ccc") },
            { path: "d.json", bytes: Buffer.from("dddd") },
        ]);
        const cheap = compareWithManifest(m, [
            { path: "b.safetensors", size: 3, mtimeNs: m.files[1]!.mtimeNs },
            { path: "c.json", size: 3, mtimeNs: "1796528800000000000" },
            { path: "d.json", size: 4, mtimeNs: m.files[3]!.mtimeNs },
            { path: "e.safetensors", size: 9, mtimeNs: "1" },
        ]);
        assert.deepEqual(
            cheap.map((d) => [d.path, d.what]),
            [
                ["a.json", "missing"],
                ["b.safetensors", "size"],
                ["c.json", "mtime"],
                ["e.safetensors", "extra"],
            ],
        );
        const lines = manifestDriftLines("/models/org--name/" + REV, cheap);
        assert.match(lines[0]!, /\/a\.json is missing \(the manifest has 1 bytes, sha256 [0-9a-f]{64}\)$/);
        assert.match(lines[1]!, /\/b\.safetensors is 3 bytes, the manifest says 2: changed since it was verified$/);
        assert.match(lines[2]!, /\/c\.json was modified at 2026-.*Z, after it was verified \(2026-.*Z\): .*npm run drift -- --verify re-hashes it/);
        assert.match(lines[3]!, /\/e\.safetensors is not in the manifest \(9 bytes\): a file added to a staged revision$/);
        const full = compareWithManifest(m, [
            { path: "a.json", sha256: m.files[0]!.sha256 },
            { path: "b.safetensors", sha256: m.files[1]!.sha256 },
            { path: "c.json", sha256: sha256("CCC") },
            { path: "d.json", sha256: m.files[3]!.sha256 },
        ]);
        assert.deepEqual(full, [{ path: "c.json", what: "sha256", expected: sha256("ccc"), actual: sha256("CCC") }]);
    });

    it("the box's check script (run here by sh, GNU find and sha256sum) reads a folder with odd names as the manifest has them, leaving the stack's and huggingface_hub's bookkeeping out", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-manifest-"));
        try {
            const files = [
                { path: "config.json", bytes: Buffer.from("{}\n") },
                { path: "sub dir/we ird\nname.safetensors", bytes: Buffer.from("weights") },
            ];
            for (const f of files) {
                fs.mkdirSync(path.dirname(path.join(dir, f.path)), { recursive: true });
                fs.writeFileSync(path.join(dir, f.path), f.bytes);
            }
            const m = manifestOf(files.map((f) => ({ ...f, mtimeNs: (fs.statSync(path.join(dir, f.path), { bigint: true }).mtimeNs ?? 0n).toString() })));
            fs.mkdirSync(path.join(dir, ".sglang-serve-weights"));
            fs.writeFileSync(path.join(dir, ".sglang-serve-weights", "manifest.json"), JSON.stringify(m));
            fs.mkdirSync(path.join(dir, ".cache", "huggingface"), { recursive: true });
            fs.writeFileSync(path.join(dir, ".cache", "huggingface", ".gitignore"), "*");
            for (const rehash of [false, true]) {
                const [cmd, ...args] = manifestCheckArgv(dir, rehash);
                const r = spawnSync(cmd!, args, { encoding: "utf8" });
                assert.equal(r.status, 0, r.stderr);
                const { manifestText, files: now } = parseManifestCheck(r.stdout, rehash);
                assert.deepEqual(compareWithManifest(parseManifest(manifestText), now), [], `rehash ${rehash}`);
            }
            const [cmd, ...args] = manifestCheckArgv(path.join(dir, "absent"), false);
            assert.equal(spawnSync(cmd!, args).status, 3);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
