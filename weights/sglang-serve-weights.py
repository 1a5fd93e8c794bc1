"""sglang-serve-weights: stages one pinned revision of a Hugging Face model
repository on the box, for sglang-serve (issue 33, "Weights as code").

Run by the stack as a transient systemd unit (systemd-run), so that a dropped
SSH session does not end it, with the interpreter of a small venv the stack
owns (the standard library and huggingface_hub, nothing else), isolated
(`python3 -I`):

  python3 -I sglang-serve-weights.py stage --repo ORG/NAME --revision SHA \\
      --dir DIR --state STATE --owner OWNER [--endpoint URL] \\
      [--allow PATTERN]... [--ignore PATTERN]... [--env-file FILE] [--max-workers N]

What it does, in order (core/weights/ in the stack holds the formats):
  1. refuses a revision that is not a full 40-hex commit id (exit 64), and a
     DIR that exists without the stack's marker (exit 65: not the stack's);
     a DIR whose manifest exists is staged already (exit 0, nothing fetched);
  2. marks DIR as the stack's (.sglang-serve-weights/staged-by.json);
  3. asks the Hub for the revision's files with their hashes
     (model_info(files_metadata=True)), filtered by the patterns as
     snapshot_download filters them;
  4. checks the free disk against the bytes still to fetch (exit 67, with
     both numbers in the result);
  5. downloads with snapshot_download(local_dir=DIR) (huggingface_hub's own
     resume: complete files are kept across runs, a cut file is fetched again
     whole; within a run it retries a cut body with Range);
  6. hashes every file (as it lands, while the others download; the rest in
     parallel after): sha256 against the Hub's for LFS files, the git blob
     id (sha1 of "blob <size>\\0" + bytes) against the Hub's for the others;
     a file that does not match is moved to the repository folder's
     .quarantine/<revision>/ (with its download metadata removed, so a later
     run fetches it again), named in the log with both hashes (exit 66, no
     manifest);
  7. writes the manifest last (.sglang-serve-weights/manifest.json: path,
     size, sha256 and mtime of each file, and the digest of the sorted
     "<sha256>  <size>  <path>" lines): its presence means staged.

Progress for a poller: STATE/progress.json (rewritten about every second:
phase, files, filesDone, bytes, bytesDone, at), STATE/log (what happened,
huggingface_hub's warnings included), STATE/result.json and STATE/exit
(written last). The token (HF_TOKEN) is read from --env-file (a 0600 file of
NAME=value lines), never from argv or the environment; without one, no token
is sent.
"""

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import traceback

OURS = ".sglang-serve-weights"
MARKER = "staged-by.json"
MANIFEST = "manifest.json"
QUARANTINE = ".quarantine"
HUB_METADATA = ".cache"  # huggingface_hub's local_dir bookkeeping (.cache/huggingface)

EXIT_USAGE = 64
EXIT_NOT_OURS = 65
EXIT_MISMATCH = 66
EXIT_DISK = 67
EXIT_FAILED = 1

COMMIT = re.compile(r"^[0-9a-f]{40}$")
CHUNK = 8 * 1024 * 1024


class Stage:
    def __init__(self, args):
        self.args = args
        self.dir = os.path.abspath(args.dir)
        self.state = args.state
        self.phase = "starting"
        self.files = []  # [(path, size)] expected
        self.hasher = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        os.makedirs(self.state, exist_ok=True)
        self.log_file = open(os.path.join(self.state, "log"), "a", buffering=1)

    # -- output for the poller -------------------------------------------
    def say(self, line):
        self.log_file.write(line.rstrip("\n") + "\n")

    def write_json(self, name, value):
        tmp = os.path.join(self.state, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(value, f, sort_keys=True)
        os.replace(tmp, os.path.join(self.state, name))

    def progress(self):
        done_files = 0
        done_bytes = 0
        if self.phase == "verifying" or self.phase == "done":
            done_files, done_bytes = self.hasher.valid() if self.hasher else (0, 0)
        else:
            for path, size in self.files:
                try:
                    st = os.stat(os.path.join(self.dir, path))
                except OSError:
                    continue
                if st.st_size == size:
                    done_files += 1
                    done_bytes += size
            done_bytes += incomplete_bytes(os.path.join(self.dir, HUB_METADATA, "huggingface", "download"))
        total = sum(size for _, size in self.files)
        return {
            "phase": self.phase,
            "files": len(self.files),
            "filesDone": done_files,
            "bytes": total,
            "bytesDone": min(done_bytes, total) if total else done_bytes,
            "at": time.time(),
        }

    def report(self):
        with self.lock:
            self.write_json("progress.json", self.progress())

    def reporter(self):
        while not self.stop.wait(1.0):
            try:
                self.report()
            except Exception:  # a file vanishing mid-walk: the next tick reports
                pass

    def set_phase(self, phase):
        self.phase = phase
        self.report()

    def finish(self, code, result):
        self.stop.set()
        result["exitStatus"] = code
        try:
            self.report()
        except Exception:
            pass
        self.write_json("result.json", result)
        with open(os.path.join(self.state, "exit.tmp"), "w") as f:
            f.write("%d\n" % code)
        os.replace(os.path.join(self.state, "exit.tmp"), os.path.join(self.state, "exit"))
        return code

    # -- the staging -------------------------------------------------------
    def run(self):
        a = self.args
        if not COMMIT.match(a.revision):
            self.say("sglang-serve: the revision %r is not a full 40-hex commit id: pin the commit" % a.revision)
            return self.finish(EXIT_USAGE, {"error": "revision not pinned"})
        ours = os.path.join(self.dir, OURS)
        manifest_path = os.path.join(ours, MANIFEST)
        if os.path.exists(manifest_path):
            with open(manifest_path) as f:
                manifest = json.load(f)
            self.say("sglang-serve: %s is staged already (manifest %s)" % (self.dir, manifest.get("digest")))
            return self.finish(0, {"staged": True, "already": True, "digest": manifest.get("digest")})
        if os.path.exists(self.dir) and not os.path.exists(os.path.join(ours, MARKER)):
            self.say("sglang-serve: %s exists and was not staged by sglang-serve: move it away, or serve it as a path" % self.dir)
            return self.finish(EXIT_NOT_OURS, {"error": "not ours"})
        os.makedirs(ours, exist_ok=True)
        if not os.path.exists(os.path.join(ours, MARKER)):
            write_atomic(
                os.path.join(ours, MARKER),
                json.dumps({"repo": a.repo, "revision": a.revision, "stagedBy": a.owner, "startedAt": time.time()}, sort_keys=True) + "\n",
            )

        token = read_token(a.env_file) if a.env_file else None
        # Imported here: a box whose venv lacks it still gets the refusals above, and a clear line below.
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.utils import disable_progress_bars, filter_repo_objects

        disable_progress_bars()
        hub_log = logging.getLogger("huggingface_hub")
        handler = logging.StreamHandler(self.log_file)
        handler.setFormatter(logging.Formatter("huggingface_hub: %(message)s"))
        hub_log.addHandler(handler)
        hub_log.setLevel(logging.WARNING)

        api = HfApi(endpoint=a.endpoint, token=token if token else False)
        self.set_phase("listing")
        info = api.model_info(a.repo, revision=a.revision, files_metadata=True)
        if info.sha != a.revision:
            self.say("sglang-serve: the Hub answers commit %s for revision %s" % (info.sha, a.revision))
            return self.finish(EXIT_FAILED, {"error": "revision mismatch", "sha": info.sha})
        allow = a.allow or None
        ignore = a.ignore or None
        expected = sorted(filter_repo_objects(info.siblings, allow_patterns=allow, ignore_patterns=ignore, key=lambda s: s.rfilename), key=lambda s: s.rfilename)
        self.files = [(s.rfilename, s.size) for s in expected]
        total = sum(size for _, size in self.files)
        present = sum(size for path, size in self.files if file_size(os.path.join(self.dir, path)) == size)
        need = total - present
        free = free_bytes(self.dir)
        self.say(
            "sglang-serve: %s@%s: %d files, %d bytes (%d present, %d to fetch; %d bytes free)"
            % (a.repo, a.revision, len(self.files), total, present, need, free)
        )
        if need > free:
            self.say("sglang-serve: not enough disk: %d bytes to fetch, %d bytes free" % (need, free))
            return self.finish(EXIT_DISK, {"error": "disk", "needBytes": need, "freeBytes": free, "bytes": total, "presentBytes": present})

        threading.Thread(target=self.reporter, daemon=True).start()
        self.hasher = Hasher(self.dir, expected)
        downloading = threading.Event()
        downloading.set()
        # Files are hashed as they land (huggingface_hub moves each into place whole), so verifying overlaps the download.
        follower = threading.Thread(target=self.hasher.follow, args=(downloading,), daemon=True)
        self.set_phase("downloading")
        started = time.time()
        follower.start()
        try:
            snapshot_download(
                a.repo,
                revision=a.revision,
                local_dir=self.dir,
                endpoint=a.endpoint,
                token=token if token else False,
                allow_patterns=allow,
                ignore_patterns=ignore,
                max_workers=a.max_workers,
            )
        finally:
            downloading.clear()
            follower.join()
        ready_files, ready_bytes = self.hasher.valid()
        self.say(
            "sglang-serve: downloaded in %.1f s (%d of %d files verified meanwhile); verifying the rest against the Hub's hashes"
            % (time.time() - started, ready_files, len(self.files))
        )

        self.set_phase("verifying")
        self.hasher.finish(workers=min(a.max_workers, os.cpu_count() or 1))
        hashes = {}
        mismatches = []
        for s in expected:
            got = self.hasher.result(s.rfilename)
            if got is None:
                mismatches.append({"path": s.rfilename, "algorithm": "missing", "expected": str(s.size), "actual": "(no file)"})
                continue
            size, sha256, blob = got
            hashes[s.rfilename] = (size, sha256)
            if s.lfs is not None:
                if sha256 != s.lfs.sha256 or size != s.lfs.size:
                    mismatches.append({"path": s.rfilename, "algorithm": "sha256", "expected": s.lfs.sha256, "actual": sha256, "size": size, "expectedSize": s.lfs.size})
            elif blob != s.blob_id or size != s.size:
                mismatches.append({"path": s.rfilename, "algorithm": "git-blob-sha1", "expected": s.blob_id, "actual": blob, "size": size, "expectedSize": s.size})
        extras = sorted(set(walk_files(self.dir)) - set(p for p, _ in self.files))

        if mismatches or extras:
            quarantine = os.path.join(os.path.dirname(self.dir), QUARANTINE, a.revision)
            moved = []
            for m in mismatches:
                self.say("sglang-serve: %s does not match the Hub: %s expected %s, got %s" % (m["path"], m["algorithm"], m["expected"], m["actual"]))
            for p in [m["path"] for m in mismatches if m["algorithm"] != "missing"] + extras:
                dest = os.path.join(quarantine, p)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if os.path.lexists(dest):
                    os.remove(dest)
                os.replace(os.path.join(self.dir, p), dest)
                forget_download(self.dir, p)
                moved.append({"path": p, "to": dest})
                self.say("sglang-serve: quarantined %s to %s" % (p, dest))
            for e in extras:
                self.say("sglang-serve: %s is not a file of %s@%s (moved out)" % (e, a.repo, a.revision))
            if mismatches:
                return self.finish(EXIT_MISMATCH, {"error": "mismatch", "mismatches": mismatches, "quarantined": moved, "extras": extras})

        files = []
        for path, _ in self.files:
            size, sha256 = hashes[path]
            files.append({"path": path, "size": size, "sha256": sha256, "mtimeNs": str(os.stat(os.path.join(self.dir, path)).st_mtime_ns)})
        manifest = {
            "format": 1,
            "repo": a.repo,
            "revision": a.revision,
            "stagedBy": a.owner,
            "stagedAt": time.time(),
            "files": files,
            "digest": manifest_digest(files),
        }
        write_atomic(manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        self.set_phase("done")
        self.say("sglang-serve: staged %s@%s in %s: %d files, %d bytes, manifest %s" % (a.repo, a.revision, self.dir, len(files), total, manifest["digest"]))
        return self.finish(0, {"staged": True, "digest": manifest["digest"], "files": len(files), "bytes": total})


class Hasher:
    """Each expected file's (size, sha256, git blob id or None), computed once
    per version of the file: a hash is kept only while the file's inode, size
    and mtime are those it was computed over, so a file huggingface_hub
    replaces after it was hashed is hashed again."""

    def __init__(self, root, expected):
        self.root = root
        self.expected = list(expected)
        self.lock = threading.Lock()
        self.done = {}  # path -> (stat key, (size, sha256, blob))

    @staticmethod
    def key(path):
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def current(self, s):
        path = os.path.join(self.root, s.rfilename)
        with self.lock:
            got = self.done.get(s.rfilename)
        return got is not None and got[0] == self.key(path)

    def hash_one(self, s):
        path = os.path.join(self.root, s.rfilename)
        before = self.key(path)
        if before is None or self.current(s):
            return
        got = hash_file(path, want_blob=s.lfs is None)
        if got is not None and self.key(path) == before:
            with self.lock:
                self.done[s.rfilename] = (before, got)

    def follow(self, running):
        """While `running` is set: hash each file that has reached its full size at its final path."""
        while running.is_set():
            for s in self.expected:
                if not running.is_set():
                    return
                path = os.path.join(self.root, s.rfilename)
                k = self.key(path)
                if k is not None and k[1] == s.size and not self.current(s):
                    self.hash_one(s)
            time.sleep(0.5)

    def finish(self, workers):
        """Hashes every file not hashed in its present version, `workers` at a time (hashlib releases the GIL)."""
        from concurrent.futures import ThreadPoolExecutor

        todo = [s for s in self.expected if not self.current(s)]
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(self.hash_one, todo))

    def result(self, name):
        with self.lock:
            got = self.done.get(name)
        if got is None:
            return None
        return got[1] if got[0] == self.key(os.path.join(self.root, name)) else None

    def valid(self):
        """(files, bytes) hashed in their present version."""
        n = b = 0
        for s in self.expected:
            if self.current(s):
                n += 1
                b += s.size
        return n, b


def manifest_digest(files):
    """sha256 of the sorted `<sha256>  <size>  <path>` lines (core/weights/manifest.ts manifestDigest)."""
    lines = "".join("%s  %d  %s\n" % (f["sha256"], f["size"], f["path"]) for f in sorted(files, key=lambda f: f["path"]))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def hash_file(path, want_blob):
    """(size, sha256, git blob id or None), or None when there is no file."""
    try:
        size = os.stat(path).st_size
        f = open(path, "rb")
    except OSError:
        return None
    sha = hashlib.sha256()
    blob = hashlib.sha1(b"blob %d\0" % size) if want_blob else None
    with f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            sha.update(chunk)
            if blob is not None:
                blob.update(chunk)
    return size, sha.hexdigest(), blob.hexdigest() if blob is not None else None


def walk_files(root):
    """Files under root, relative, '/'-separated; the stack's and huggingface_hub's bookkeeping left out."""
    out = []
    for d, dirs, names in os.walk(root):
        if d == root:
            dirs[:] = [x for x in dirs if x not in (OURS, HUB_METADATA)]
        for n in names:
            out.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/"))
    return out


def incomplete_bytes(download_dir):
    total = 0
    for d, _, names in os.walk(download_dir):
        for n in names:
            if n.endswith(".incomplete"):
                try:
                    total += os.stat(os.path.join(d, n)).st_size
                except OSError:
                    pass
    return total


def forget_download(local_dir, path):
    """Removes huggingface_hub's record of a downloaded file, so a later snapshot_download fetches it again."""
    meta = os.path.join(local_dir, HUB_METADATA, "huggingface", "download", *path.split("/")) + ".metadata"
    try:
        os.remove(meta)
    except FileNotFoundError:
        pass


def file_size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def free_bytes(path):
    # The folder may not exist yet: ask the nearest one that does.
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def read_token(env_file):
    """HF_TOKEN from a NAME=value file (systemd's EnvironmentFile as the stack writes it); None without one."""
    try:
        with open(env_file) as f:
            for raw in f:
                line = raw.strip()
                if not line or line[0] in "#;" or "=" not in line:
                    continue
                name, value = line.split("=", 1)
                if name.strip() == "HF_TOKEN":
                    return value.strip() or None
    except FileNotFoundError:
        return None
    return None


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sglang-serve-weights")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stage")
    s.add_argument("--repo", required=True)
    s.add_argument("--revision", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--state", required=True)
    s.add_argument("--owner", required=True)
    s.add_argument("--endpoint", default=None)
    s.add_argument("--allow", action="append", default=[])
    s.add_argument("--ignore", action="append", default=[])
    s.add_argument("--env-file", default=None)
    s.add_argument("--max-workers", type=int, default=8)
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    stage = Stage(args)
    try:
        return stage.run()
    except BaseException as e:  # noqa: BLE001 - every failure ends in result.json and exit
        stage.say("sglang-serve: the staging failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        for line in traceback.format_exc().splitlines()[-12:]:
            stage.say("    " + line)
        return stage.finish(EXIT_FAILED, {"error": type(e).__name__, "message": str(e)[:2000]})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
