"""The lab's start cache: the release's config layer paid once per start key.

A simulated server start (sglang_lab_venv.py) imports the release's config
layer for real: argparse, prepare_server_args, ServerArgs, check_server_args,
the release's /server_info handler. That is about 3.7 CPU-seconds, and the
same command line is started in many labs. The first start of a key runs the
release's code as always and records what it handed the simulator (the
resolved ServerArgs, /server_info), what it printed on stdout and stderr, and
what it changed in its environment; a later start of the same key checks the
record's dependencies, prints the same lines (timestamps renewed) and execs
the simulator without importing SGLang.

The key is everything a verdict can depend on that is known before the
release runs: the lab's own Python side (this file, the boot, oracle.py, the
stubs), the interpreter and its sys.path, every distribution there (the
RECORD of each dist-info: the release and its pins, file by file), the full
command line and working directory, the whole environment after the boot
set the GPU facts the stubs answer (SGLANG_LAB_GPU_*, driver, CUDA; only
systemd's per-invocation and sshd's per-session variables are left out), the GPUs this process
may open, and lab.json's GPUs, driver and CUDA (what the lab's nvidia-smi
answers). What the release read outside its code is found while it runs (the
interpreter's audit events) and kept in the record as dependencies: every
file it opened (by content digest), every folder it listed, and each path on
its command line (whether it is there, and its listing): a hit checks them
all, and any difference is a miss.

Only starts that reach the launcher boundary are recorded, and only when the
run stayed in bounds: no network connection, no port bound (a probe on port
0 aside), no subprocess but the lab's nvidia-smi asked for fixed GPU facts,
no file left written (tempfile's probe, made and removed, aside), and every secret of the resolved args (api_key, ...) found
verbatim in the command line, the environment or a file it read. The record
keeps a secret's place (argv index, variable, or file and offset), never
its value; a hit reads it back from there. A refusal (argparse error,
exception) is never recorded: every failing start runs the release.
SGLANG_LAB_START_CACHE=off in a start's environment runs the release and
records nothing.
"""

import hashlib
import json
import os
import re
import sys
import time

FORMAT = 1
OFF_VARIABLE = "SGLANG_LAB_START_CACHE"
# systemd's per-invocation variables and sshd's per-session ones: they differ at every start and no
# release reads them (0.5.9-0.5.23 and their pins: none does).
PER_INVOCATION_ENV = frozenset(("INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID", "LISTEN_PID", "LISTEN_FDS",
                                "LISTEN_FDNAMES", "WATCHDOG_PID", "WATCHDOG_USEC", "NOTIFY_SOCKET", "SSH_CLIENT", "SSH_CONNECTION",
                                "SSH_TTY"))
# ServerArgs fields that hold secrets (a string value is one).
SECRET_FIELD = re.compile(r"(^|_)(api_key|password|secret|token)$")
_PLACEHOLDER = "\x00sglang-lab-secret-{}\x00"
_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", re.M)
# Large files (weights) are keyed by size and their first MiB: a config layer reads headers at most.
_HEAD_BYTES = 1 << 20


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _file_digest(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEAD_BYTES)
    except OSError as e:
        return f"error:{e.errno}"
    return f"{size}:{_sha(head)}"


def _listing(path):
    """A folder's entries with their kind and size (files): what an existence check of an entry sees."""
    try:
        entries = []
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat()
                    entries.append((e.name, "d" if e.is_dir() else "f", 0 if e.is_dir() else st.st_size))
                except OSError:
                    entries.append((e.name, "?", 0))
        return _sha(json.dumps(sorted(entries)).encode())
    except NotADirectoryError:
        return "file:" + _file_digest(path)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"error:{e.errno}"


def dependency_state(kind, path):
    return _file_digest(path) if kind == "file" else _listing(path)


def _tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            h.update(os.path.relpath(full, root).encode() + b"\0")
            with open(full, "rb") as f:
                h.update(_sha(f.read()).encode())
    return h.hexdigest()


def _distributions_digest(dirs):
    """Every distribution on the path: its dist-info's name and RECORD (each file's hash, as installed)."""
    h = hashlib.sha256()
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        h.update(d.encode() + b"\0" + "\0".join(names).encode() + b"\0")
        for name in names:
            if name.endswith(".dist-info"):
                try:
                    with open(os.path.join(d, name, "RECORD"), "rb") as f:
                        h.update(_sha(f.read()).encode())
                except OSError:
                    h.update(b"no-record")
    return h.hexdigest()


def argv_paths(argv):
    """The command line's values that may name a path (with a slash, or a leading dot), as absolute paths."""
    out = []
    for a in argv[1:]:
        value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if value.startswith("-") or not ("/" in value or value.startswith(".")):
            continue
        p = os.path.abspath(value)
        if p not in out:
            out.append(p)
    return out


# What the lab's nvidia-smi answers from lab.json alone (its GPUs, in the key): no holder's memory, no utilization.
_STATIC_GPU_FIELDS = frozenset(("index", "name", "uuid", "memory.total", "compute_cap", "driver_version", "count", "pci.bus_id"))


def _static_gpu_query(argv):
    """Whether a subprocess is the lab's nvidia-smi asked only for the GPUs' fixed facts."""
    if not isinstance(argv, (list, tuple)) or not argv or os.path.basename(str(argv[0])) != "nvidia-smi":
        return False
    fields = []
    for a in argv[1:]:
        a = str(a)
        if a.startswith("--query-gpu="):
            fields += a.split("=", 1)[1].split(",")
        elif not a.startswith("--format="):
            return False
    return bool(fields) and all(f.strip() in _STATIC_GPU_FIELDS for f in fields)


def start_key(lab_code_dir, visible, lab):
    """The start's key: see the module's docstring."""
    env = {k: v for k, v in os.environ.items() if k not in PER_INVOCATION_ENV}
    dirs = [p for p in sys.path if p and os.path.isdir(p)]
    pyvenv = os.path.join(sys.prefix, "pyvenv.cfg")
    parts = {
        "format": FORMAT,
        "lab": _tree_digest(lab_code_dir),
        "python": [sys.version, sys.executable, sys.prefix, sys.base_prefix, sys.path, _file_digest(pyvenv)],
        "distributions": _distributions_digest(dirs),
        "argv": list(sys.orig_argv),
        "cwd": os.getcwd(),
        "env": env,
        "visibleGpus": visible,
        "labGpus": [lab.get("gpus"), lab.get("driverVersion"), lab.get("cudaVersion")],
    }
    return _sha(json.dumps(parts, sort_keys=True).encode())


class _Tee:
    """sys.stdout / sys.stderr while a start is recorded: what the release prints, in order, still printed."""

    def __init__(self, stream, fd, chunks):
        self._stream = stream
        self._fd = fd
        self._chunks = chunks

    def write(self, text):
        self._chunks.append([self._fd, text])
        return self._stream.write(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Recorder:
    """What a start that runs the release does, for its record (installed before the release runs)."""

    def __init__(self, cache_dir, key, ignore_roots):
        self.cache_dir = cache_dir
        self.key = key
        self.env_before = dict(os.environ)
        self.cwd = os.getcwd()
        self.chunks = []
        self.files = set()
        self.dirs = set()
        self.written = set()
        self.spoilers = set()
        self.ignore = tuple(r.rstrip("/") + "/" for r in ignore_roots)
        self.active = True
        sys.stdout = _Tee(sys.stdout, 1, self.chunks)
        sys.stderr = _Tee(sys.stderr, 2, self.chunks)
        sys.addaudithook(self._audit)

    def _outside(self, path):
        return not path.startswith(self.ignore)

    def _audit(self, event, args):
        if not self.active:
            return
        try:
            self._note(event, args)
        except Exception as e:  # noqa: BLE001  (a hook that raises would fail the release's own call)
            self.spoilers.add(f"audit of {event}: {e!r}")

    def _note(self, event, args):
        if event == "open":
            path, mode, flags = args
            if not isinstance(path, (str, bytes)):
                return
            path = os.path.abspath(os.fsdecode(path))
            if not self._outside(path):
                return
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            (self.written if writes else self.files).add(path)
        elif event in ("os.listdir", "os.scandir"):
            path = args[0]
            if isinstance(path, (str, bytes)):
                path = os.path.abspath(os.fsdecode(path))
                if self._outside(path):
                    self.dirs.add(path)
        elif event == "subprocess.Popen":
            if not _static_gpu_query(args[1]):
                self.spoilers.add(f"ran {args[1]!r}")
        elif event == "socket.bind":
            address = args[1]
            # A probe of the stack (urllib3's IPv6 check: port 0) is no fact of the machine's state; a port's availability is.
            if not (isinstance(address, tuple) and len(address) >= 2 and address[1] == 0):
                self.spoilers.add(f"bound {address!r}")
        elif event in ("socket.connect", "socket.sendto", "os.system", "os.exec", "os.posix_spawn", "os.fork"):
            self.spoilers.add(event)

    def save(self, handoff):
        """Writes the record of a start that reached the boundary; returns why not, or None."""
        self.active = False
        # A file it made and removed (tempfile's probe of its folder) is no side effect a replay would lose; one it left is.
        self.spoilers.update(f"wrote {p}" for p in self.written if os.path.lexists(p))
        self.files -= self.written
        if self.spoilers:
            return "; ".join(sorted(self.spoilers))
        secrets = sorted({v for k, v in handoff["serverArgs"].items() if SECRET_FIELD.search(k) and isinstance(v, str) and v})
        deps = [["file", p, dependency_state("file", p)] for p in sorted(self.files)]
        deps += [["dir", p, dependency_state("dir", p)] for p in sorted(self.dirs | set(argv_paths(sys.orig_argv)))]
        places = []
        for s in secrets:
            place = _find_secret(s, self.files)
            if place is None:
                return "a secret of the resolved args is in no input it can be read back from"
            places.append(place)
        env_after = dict(os.environ)
        env_changes = {k: env_after.get(k) for k in set(self.env_before) | set(env_after) if self.env_before.get(k) != env_after.get(k)}
        record = {
            "format": FORMAT,
            "deps": deps,
            "secrets": places,
            "handoff": {k: handoff[k] for k in ("release", "entry", "site", "serverArgs", "serverInfo", "serverInfoSimulated")},
            "output": self.chunks,
            "env": env_changes,
            "cwd": os.getcwd(),
        }
        text = _hide(json.dumps(record), secrets)
        if any(s in text or json.dumps(s)[1:-1] in text or repr(s)[1:-1] in text for s in secrets):
            return "a secret is in the record in another form"
        path = os.path.join(self.cache_dir, f"{self.key}.json")
        tmp = f"{path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return f"not written: {e}"
        return None


def _hide(text, secrets):
    for i, s in enumerate(secrets):
        text = text.replace(json.dumps(s)[1:-1], json.dumps(_PLACEHOLDER.format(i))[1:-1])
    return text


def _find_secret(secret, files):
    for i, a in enumerate(sys.orig_argv):
        at = a.find(secret)
        if at >= 0:
            return {"argv": i, "start": at, "end": at + len(secret)}
    for name, value in sorted(os.environ.items()):
        at = value.find(secret)
        if at >= 0:
            return {"env": name, "start": at, "end": at + len(secret)}
    data = secret.encode()
    for path in sorted(files):
        try:
            with open(path, "rb") as f:
                content = f.read(_HEAD_BYTES)
        except OSError:
            continue
        at = content.find(data)
        if at >= 0:
            return {"file": path, "start": at, "end": at + len(data)}
    return None


def _read_secret(place):
    if "argv" in place:
        return sys.orig_argv[place["argv"]][place["start"]:place["end"]]
    if "env" in place:
        return os.environ[place["env"]][place["start"]:place["end"]]
    with open(place["file"], "rb") as f:
        return f.read(_HEAD_BYTES)[place["start"]:place["end"]].decode()


def lookup(cache_dir, key):
    """The record of `key` when every dependency is as it was, its secrets read back; else None (a miss)."""
    path = os.path.join(cache_dir, f"{key}.json")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        record = json.loads(text)
        if record.get("format") != FORMAT:
            return None
        for kind, dep, state in record["deps"]:
            if dependency_state(kind, dep) != state:
                return None
        secrets = [_read_secret(p) for p in record["secrets"]]
    except (OSError, ValueError, KeyError, UnicodeDecodeError):
        return None
    for i, s in enumerate(secrets):
        text = text.replace(json.dumps(_PLACEHOLDER.format(i))[1:-1], json.dumps(s)[1:-1])
    try:
        now = time.time()
        os.utime(path, (now, now))  # used now: pruning keeps it
    except OSError:
        pass
    return json.loads(text)


def replay_output(record):
    """The release's lines as it printed them, log timestamps renewed (logging's asctime: local time)."""
    stamp = "[" + time.strftime("%Y-%m-%d %H:%M:%S")
    for fd, text in record["output"]:
        (sys.stdout if fd == 1 else sys.stderr).write(_STAMP.sub(lambda _m: stamp, text))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()


def apply_environment(record):
    for k, v in record["env"].items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    os.chdir(record["cwd"])
