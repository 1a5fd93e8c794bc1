import assert from "node:assert/strict";
import { spawn } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { hfClientCommand, HfClientVerb } from "../../lab/hf-mirror/client";
import { clearMirrorFaults, corruptBlob, CORRUPT_BYTES, setMirrorFaults } from "../../lab/hf-mirror/faults";
import { filesAt, gitBlobId, isLfsPath, LAB_DRAFTER, LAB_MODEL, LabRepo, labRepos } from "../../lab/hf-mirror/lab-repos";
import { accessLog, ensureHfMirrorInstalled, hfMirrorVenvs, RunningMirror, startMirror, writeMirrorRepos } from "../../lab/hf-mirror/mirror";
import { smallDiskArgv } from "../../lab/hf-mirror/small-disk";
import { labTestOctet } from "./lab-fixture";

// The lab's Hugging Face mirror (olah offline behind its front, lab/hf-mirror)
// serving the lab's repositories on loopback, and the real huggingface_hub
// (1.33.0, the container's) downloading through it with HF_ENDPOINT. The
// expected bytes come from lab-repos.ts, the repositories' definition; the
// expected checksums are computed here from those bytes.
const address = `127.${labTestOctet(__filename)}.140.1`;
const SHARD_1 = "model-00001-of-00002.safetensors";
const SHARD_2 = "model-00002-of-00002.safetensors";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const repoById = (id: string): LabRepo => labRepos().find((r) => r.id === id)!;

interface ClientRun {
    code: number | null;
    stdout: string;
    stderr: string;
}

interface Sibling {
    rfilename: string;
    size: number;
    blobId: string;
    lfs: { sha256: string; size: number; pointerSize: number } | null;
}

interface RepoFileInfo {
    path: string;
    size: number;
    blobId: string;
    lfs: Sibling["lfs"];
}

describe("the lab's Hugging Face mirror, downloaded from with the real huggingface_hub", function () {
    this.timeout(120_000);
    let dir: string;
    let commits: Record<string, string[]>;
    let mirror: RunningMirror;
    const mirrorOptions = () => ({ dir: path.join(dir, "mirror"), address, port: 8090, olahPort: 8091 });

    before(async function () {
        this.timeout(600_000); // install.sh from PyPI on a machine without the venvs
        ensureHfMirrorInstalled();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-hf-mirror-"));
        commits = writeMirrorRepos(path.join(dir, "mirror"));
        mirror = await startMirror(mirrorOptions());
    });
    after(async () => {
        await mirror?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });
    afterEach(() => clearMirrorFaults(mirror.paths));

    /** A fresh HF cache for one test. */
    let caches = 0;
    const newCache = () => {
        const c = path.join(dir, `cache-${++caches}`);
        fs.mkdirSync(c);
        return c;
    };

    /** hf_client.py in its own process: started at once, its result when it ends. */
    function client(command: HfClientVerb, args: string[], o: { wrap?: (argv: string[]) => string[]; env?: Record<string, string> } = {}): Promise<ClientRun> {
        const c = hfClientCommand(hfMirrorVenvs().client, { endpoint: mirror.endpoint, hfHome: path.join(dir, "hf-home"), env: o.env }, command, ...args);
        const wrap = o.wrap ?? ((a: string[]) => a);
        const [cmd, ...rest] = wrap(c.argv);
        const p = spawn(cmd!, rest, { env: c.env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        return new Promise((resolve) => p.on("close", (code) => resolve({ code, stdout, stderr })));
    }

    async function ok<T>(command: HfClientVerb, ...args: string[]): Promise<T> {
        const r = await client(command, args);
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as T;
    }

    const download = (repo: string, revision: string, cache: string) => ok<{ path: string }>("download", repo, revision, cache).then((r) => r.path);

    /** A snapshot folder's files (symlinks into blobs/ followed), path -> bytes. */
    function snapshotFiles(snapshot: string): Map<string, Buffer> {
        const out = new Map<string, Buffer>();
        const walk = (d: string) => {
            for (const e of fs.readdirSync(d, { withFileTypes: true })) {
                const p = path.join(d, e.name);
                if (fs.statSync(p).isDirectory()) walk(p);
                else out.set(path.relative(snapshot, p), fs.readFileSync(p));
            }
        };
        walk(snapshot);
        return new Map([...out].sort(([a], [b]) => (a < b ? -1 : 1)));
    }

    const digests = (files: Map<string, Buffer>) => Object.fromEntries([...files].map(([p, b]) => [p, sha256(b)]));

    it("a download of revision A by its full commit id gets A's files with A's bytes", async () => {
        const [a] = commits[LAB_MODEL]!;
        const snapshot = await download(LAB_MODEL, a!, newCache());
        assert.equal(path.basename(snapshot), a);
        assert.deepEqual(digests(snapshotFiles(snapshot)), digests(filesAt(repoById(LAB_MODEL), 0)));
    });

    it("revision B differs from A in its new config and second shard, and shares A's first shard in the cache", async () => {
        const [a, b] = commits[LAB_MODEL]!;
        const cache = newCache();
        const filesA = snapshotFiles(await download(LAB_MODEL, a!, cache));
        const snapshotB = await download(LAB_MODEL, b!, cache);
        const filesB = snapshotFiles(snapshotB);
        assert.deepEqual(digests(filesB), digests(filesAt(repoById(LAB_MODEL), 1)));
        const changed = [...filesB.keys()].filter((p) => !filesA.get(p)!.equals(filesB.get(p)!));
        assert.deepEqual(changed, ["config.json", SHARD_2]);
        assert.equal(JSON.parse(filesB.get("config.json")!.toString()).max_position_embeddings, 8192);
        const blob = (rev: string) => fs.realpathSync(path.join(path.dirname(snapshotB), rev, SHARD_1));
        assert.equal(blob(a!), blob(b!));
    });

    it("the branch main resolves to the newest commit, the tag v1 to the first, and no revision to main's", async () => {
        const [a, b] = commits[LAB_MODEL]!;
        const cache = newCache();
        assert.equal(path.basename(await download(LAB_MODEL, "main", cache)), b);
        assert.equal(fs.readFileSync(path.join(cache, "models--sglang-lab--Tiny-Qwen3", "refs", "main"), "utf8"), b);
        assert.equal(path.basename(await download(LAB_MODEL, "v1", cache)), a);
        assert.equal((await ok<{ sha: string }>("info", LAB_MODEL, "-")).sha, b);
    });

    it("model_info(files_metadata=True), get_paths_info and list_repo_tree report each LFS file's sha256 and each other file's git blob id, matching the bytes", async () => {
        for (const [i, rev] of commits[LAB_DRAFTER]!.entries()) {
            const info = await ok<{ sha: string; siblings: Sibling[]; pathsInfo: RepoFileInfo[]; tree: RepoFileInfo[] }>("info", LAB_DRAFTER, rev);
            assert.equal(info.sha, rev);
            const files = filesAt(repoById(LAB_DRAFTER), i);
            const expected = [...files].map(([p, bytes]) => ({
                path: p,
                size: bytes.length,
                lfs: isLfsPath(p) ? { sha256: sha256(bytes), size: bytes.length } : null,
                blobId: isLfsPath(p) ? undefined : gitBlobId(bytes),
            }));
            const strip = (e: { path: string; size: number; blobId: string; lfs: Sibling["lfs"] }) => ({
                path: e.path,
                size: e.size,
                lfs: e.lfs && { sha256: e.lfs.sha256, size: e.lfs.size },
                // An LFS file's blob id is its pointer's: checked against the pointer below.
                blobId: e.lfs ? undefined : e.blobId,
            });
            const sorted = <T extends { path: string }>(xs: T[]) => [...xs].sort((x, y) => (x.path < y.path ? -1 : 1));
            assert.deepEqual(sorted(info.siblings.map((s) => strip({ ...s, path: s.rfilename }))), expected);
            assert.deepEqual(sorted(info.pathsInfo.map(strip)), expected);
            assert.deepEqual(sorted(info.tree.map(strip)), expected);
            for (const s of info.siblings.filter((x) => x.lfs)) {
                const pointer = Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${s.lfs!.sha256}\nsize ${s.lfs!.size}\n`);
                assert.equal(s.blobId, gitBlobId(pointer), s.rfilename);
                assert.equal(s.lfs!.pointerSize, pointer.length, s.rfilename);
            }
        }
    });

    it("a missing file, revision and repository raise huggingface_hub's RemoteEntryNotFoundError, RevisionNotFoundError and RepositoryNotFoundError", async () => {
        const cache = newCache();
        const cases: Array<[string[], string]> = [
            [[LAB_MODEL, "main", "absent.json"], "RemoteEntryNotFoundError"],
            [[LAB_MODEL, "no-such-branch", "config.json"], "RevisionNotFoundError"],
            [[`${LAB_MODEL}-absent`, "main", "config.json"], "RepositoryNotFoundError"],
        ];
        for (const [args, error] of cases) {
            const r = await client("file", [...args, cache]);
            assert.notEqual(r.code, 0, args.join(" "));
            assert.match(r.stderr, new RegExp(`^huggingface_hub\\.errors\\.${error}: `, "m"), args.join(" "));
        }
    });

    it("a corrupted blob on the mirror downloads as bytes whose sha256 differs from the metadata's, under the metadata's name", async () => {
        const [, b] = commits[LAB_DRAFTER]!;
        const corrupt = corruptBlob(mirror.paths, LAB_DRAFTER, b!, "model.safetensors");
        try {
            const cache = newCache();
            const snapshot = await download(LAB_DRAFTER, b!, cache);
            const info = await ok<{ siblings: Sibling[] }>("info", LAB_DRAFTER, b!);
            const meta = info.siblings.find((s) => s.rfilename === "model.safetensors")!.lfs!;
            const got = fs.readFileSync(path.join(snapshot, "model.safetensors"));
            assert.equal(meta.sha256, corrupt.oid);
            assert.equal(got.length, meta.size);
            assert.notEqual(sha256(got), meta.sha256);
            const good = filesAt(repoById(LAB_DRAFTER), 1).get("model.safetensors")!;
            const differing = [...got.keys()].filter((i) => got[i] !== good[i]);
            assert.deepEqual([differing[0], differing.length], [corrupt.offset, CORRUPT_BYTES]);
            // huggingface_hub names the blob after the Hub's X-Linked-Etag, as it would from huggingface.co.
            assert.equal(path.basename(fs.realpathSync(path.join(snapshot, "model.safetensors"))), meta.sha256);
            const verify = await ok<{ mismatches: Array<{ path: string; expected: string; actual: string; algorithm: string }> }>(
                "verify",
                LAB_DRAFTER,
                b!,
                cache,
            );
            assert.deepEqual(verify.mismatches, [{ path: "model.safetensors", expected: meta.sha256, actual: sha256(got), algorithm: "sha256" }]);
        } finally {
            corrupt.restore();
        }
    });

    it("a mirror killed mid-download and restarted at once lets the same download resume where huggingface_hub's last written chunk ended", async () => {
        const [, b] = commits[LAB_MODEL]!;
        const afterBytes = 11 * 1024 * 1024;
        setMirrorFaults(mirror.paths, { dieMidDownload: { file: SHARD_1, afterBytes } });
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const cache = newCache();
        // The retry waits for olah's restart (1-3 s here, the front holds it): more than the default 10 s read timeout on a loaded machine.
        const run = client("download", [LAB_MODEL, b!, cache], { env: { HF_HUB_DOWNLOAD_TIMEOUT: "60" } });
        const died = await mirror.exited;
        assert.equal(died.signal, "SIGKILL");
        mirror = await startMirror(mirrorOptions());
        const r = await run;
        assert.equal(r.code, 0, r.stderr);
        assert.match(
            r.stderr,
            new RegExp(`received ${afterBytes} bytes, expected ${filesAt(repoById(LAB_MODEL), 1).get(SHARD_1)!.length}\\)\\nTrying to resume download`),
        );
        const shard = accessLog(mirror.paths).filter((e) => e.method === "GET" && e.url.endsWith(SHARD_1));
        // huggingface_hub writes in 10 MiB chunks (DOWNLOAD_CHUNK_SIZE): the 11th MiB was received, never written.
        assert.deepEqual(
            shard.map((e) => [e.range, e.status, e.bytes, e.died ?? false]),
            [
                [null, 200, afterBytes, true],
                [`bytes=${10 * 1024 * 1024}-`, 206, 12586040 - 10 * 1024 * 1024, false],
            ],
        );
        assert.deepEqual(digests(snapshotFiles(JSON.parse(r.stdout).path)), digests(filesAt(repoById(LAB_MODEL), 1)));
    });

    it("a mirror that stays down fails the download after huggingface_hub's retries, and a later run fetches only what was not complete, the cut file from its start", async () => {
        const [, b] = commits[LAB_MODEL]!;
        setMirrorFaults(mirror.paths, { dieMidDownload: { file: SHARD_1, afterBytes: 11 * 1024 * 1024 } });
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const cache = newCache();
        const first = await client("download", [LAB_MODEL, b!, cache]);
        assert.notEqual(first.code, 0);
        assert.match(first.stderr, /Max retries exceeded/);
        const downloads = () => accessLog(mirror.paths).filter((e) => e.method === "GET" && e.url.includes("/resolve/"));
        const before = downloads().filter((e) => !e.died);
        mirror = await startMirror(mirrorOptions());
        fs.rmSync(mirror.paths.accessLog, { force: true });
        const second = await client("download", [LAB_MODEL, b!, cache]);
        assert.equal(second.code, 0, second.stderr);
        const again = downloads();
        const file = (url: string) => url.slice(url.lastIndexOf("/") + 1);
        // Each file comes in exactly one of the runs: what the first completed is not fetched again.
        assert.deepEqual([...before, ...again].map((e) => file(e.url)).sort(), [...filesAt(repoById(LAB_MODEL), 1).keys()].sort());
        // The cut file comes whole: huggingface_hub's temporary file is per process and removed on failure (its PR 4228), so no Range across runs.
        assert.deepEqual(
            again.filter((e) => file(e.url) === SHARD_1).map((e) => [e.range, e.status]),
            [[null, 200]],
        );
        assert.deepEqual(digests(snapshotFiles(JSON.parse(second.stdout).path)), digests(filesAt(repoById(LAB_MODEL), 1)));
    });

    it("a disk too small for the model fails the download with huggingface_hub's free-space warning and ENOSPC", async function () {
        if (process.getuid?.() !== 0) this.skip(); // a tmpfs in a mount namespace of its own needs root
        const [, b] = commits[LAB_MODEL]!;
        const cache = newCache();
        const r = await client("download", [LAB_MODEL, b!, cache], { wrap: (argv) => smallDiskArgv(cache, 4 * 1024 * 1024, argv) });
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /Not enough free disk space to download the file/);
        assert.match(r.stderr, /No space left on device/);
        assert.deepEqual(fs.readdirSync(cache), []);
    });
});
