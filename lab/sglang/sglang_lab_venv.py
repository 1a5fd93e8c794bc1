"""The lab's SGLang venvs: the release's own entry points, hardware stubbed.

Each venv in the lab's container (one per release of sglang-release/VERSIONS:
`/opt/sglang/venv`, `/opt/sglang/venv-<release>`) is a real `python3 -m venv
--without-pip` of the container's python3 whose `sglang-lab.pth` puts the
hardware stubs, the release's site dir and the shared deps dir on sys.path,
and runs `boot()` below at every interpreter start. `boot()` does nothing unless the process is one of SGLang's server
entry points:

- `<venv>/bin/sglang serve ...` (the console script pip writes: sglang.cli.main:main)
- `<venv>/bin/python3 -m sglang.launch_server ...`

For those it sets what the stubs answer (the GPUs this process can open, as
the container's device cgroup allows, and lab.json's GPU model and driver),
replaces the server launchers with the boundary (as oracle.py does) and lets
the release run: its argparse, prepare_server_args, ServerArgs, its logging,
warnings and exceptions are SGLang's own, printed by this interpreter. At the
boundary, where the release would start the HTTP server, it runs the first
steps of the release's Engine._launch_subprocesses that need no GPU
(configure_logger, check_server_args, the `server_args=ServerArgs(...)` line),
builds `/server_info` with the release's own handler (oracle.server_info), and
execs the lab's simulator (node) in this process, so the unit's MainPID is
the same, with the resolved args on a memfd. The simulator then does what
needs GPUs: loading, memory, the HTTP API, faults.

With the lab's start cache (boot's second argument; sglang_lab_start_cache.py),
a start whose key the release already judged replays that run's hand-off and
output instead of importing SGLang; any other start runs the release as above
and records it.
"""

import json
import os
import sys
import time

_BOOTED = False


def server_entry(argv, bindir):
    """'sglang-serve' | 'launch-server' | None for an interpreter command line (sys.orig_argv)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-m" or (a.startswith("-m") and len(a) > 2):
            module = argv[i + 1] if a == "-m" and i + 1 < len(argv) else a[2:]
            return "launch-server" if module == "sglang.launch_server" else None
        if a.startswith("-c") or a == "-":
            return None
        if a in ("-W", "-X", "--check-hash-based-pycs"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        script = os.path.abspath(a)
        if os.path.basename(script) == "sglang" and os.path.dirname(script) == bindir:
            return "sglang-serve" if argv[i + 1:i + 2] == ["serve"] else None
        return None
    return None


def visible_gpus(indices):
    """The GPUs this process may use: /dev/nvidiactl and /dev/nvidiaN openable as far as
    the kernel says (ENXIO: allowed, no driver; EPERM: the device cgroup denies it)."""

    def usable(node):
        try:
            os.close(os.open(node, os.O_RDWR))
            return True
        except OSError as e:
            return e.errno not in (1, 2, 13)  # EPERM, ENOENT, EACCES

    if not usable("/dev/nvidiactl"):
        return []
    return [i for i in indices if usable(f"/dev/nvidia{i}")]


class _Server:
    def __init__(self, lab_dir, entry):
        self.launched_ms = int(time.time() * 1000)
        self.entry = entry
        self.lab_dir = lab_dir
        with open(os.path.join(lab_dir, "lab.json"), encoding="utf-8") as f:
            self.lab = json.load(f)

    def event(self, event, **fields):
        now = time.time()
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z",
                  "epochMs": int(now * 1000), "pid": os.getpid(), "invocationId": os.environ.get("INVOCATION_ID"),
                  "event": event, **fields}
        if record["invocationId"] is None:
            del record["invocationId"]
        try:
            with open(self.lab["eventsFile"], "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        except OSError:
            pass  # the lab is being torn down

    def install(self, start_cache):
        gpus = self.lab["gpus"]
        env = os.environ
        visible = visible_gpus([g["index"] for g in gpus])
        env.setdefault("SGLANG_LAB_GPU_COUNT", str(len(visible)))
        env.setdefault("SGLANG_LAB_GPU_MEMORY_MIB", str(gpus[0]["memoryMiB"]))
        env.setdefault("SGLANG_LAB_GPU_NAME", gpus[0]["name"])
        if gpus[0].get("computeCap"):
            # What nvidia-smi's compute_cap says of the lab's GPUs (lab/gpu/compute-capability.ts).
            env.setdefault("SGLANG_LAB_GPU_CAPABILITY", gpus[0]["computeCap"])
        env.setdefault("SGLANG_LAB_DRIVER_VERSION", self.lab["driverVersion"])
        env.setdefault("SGLANG_LAB_CUDA_VERSION", self.lab["cudaVersion"])
        # The lab reaches no model hub: a path that is no local folder fails as offline.
        env.setdefault("HF_HUB_OFFLINE", "1")
        self.recorder = None
        if start_cache and env.get("SGLANG_LAB_START_CACHE") != "off" and os.path.isdir(start_cache):
            # The release's verdict on this very start, when one was recorded (sglang_lab_start_cache.py).
            import sglang_lab_start_cache as cache

            key = cache.start_key(os.path.dirname(os.path.abspath(__file__)), visible, self.lab)
            record = cache.lookup(start_cache, key)
            if record is not None:
                self.replay(cache, record)
            ignore = ["/usr", "/proc", "/sys", "/dev", sys.prefix, self.lab_dir, start_cache, *filter(None, sys.path)]
            self.recorder = cache.Recorder(start_cache, key, ignore)
        import importlib.metadata

        import oracle

        self.site = str(importlib.metadata.distribution("sglang").locate_file(""))
        env.setdefault("SGLANG_LAB_STUB_DISTS", json.dumps(oracle._stub_dists(self.site), sort_keys=True))
        import _sglang_lab_stub  # noqa: F401  (the stubbed distributions' metadata, before anything asks)

        self.oracle = oracle
        self._install_boundary()
        self._record_failures()
        self.event("launched", detail=" ".join(sys.orig_argv), configLayer="ran")

    def replay(self, cache, record):
        """A recorded start of this key: the release's output and environment, then the simulator (no SGLang import)."""
        cache.apply_environment(record)
        self.event("launched", detail=" ".join(sys.orig_argv), configLayer="replayed")
        cache.replay_output(record)
        self.exec_simulator({**record["handoff"], "argv": list(sys.orig_argv), "launchedAtMs": self.launched_ms})

    def _install_boundary(self):
        import types

        for module_name, (func, launcher) in self.oracle.LAUNCHERS.items():
            mod = types.ModuleType(module_name)
            mod.__file__ = f"<sglang-lab: {launcher} launcher boundary>"

            def boundary(server_args, *args, _launcher=launcher, **kwargs):
                return self.hand_off(server_args, _launcher)

            setattr(mod, func, boundary)
            sys.modules[module_name] = mod

    def _record_failures(self):
        """Events for the lab's tests (argparse-error, startup-failed); the output stays SGLang's."""
        import argparse

        error = argparse.ArgumentParser.error
        server = self

        def recorded_error(parser, message):
            server.event("argparse-error", detail=f"{parser.prog}: error: {message}")
            return error(parser, message)

        argparse.ArgumentParser.error = recorded_error
        hook = sys.excepthook

        def excepthook(kind, value, tb):
            server.event("startup-failed", detail=f"{kind.__name__}: {value}")
            return hook(kind, value, tb)

        sys.excepthook = excepthook

    def hand_off(self, server_args, launcher):
        """Where the release starts its server: the GPU-free first steps of
        Engine._launch_subprocesses, then the simulator in this process."""
        import logging

        from sglang.srt.utils.common import configure_logger

        configure_logger(server_args)
        server_args.check_server_args()
        logging.getLogger("sglang.srt.entrypoints.engine").info(f"{server_args=}")
        if launcher != "http":
            raise RuntimeError(f"sglang-lab: the {launcher} server is not simulated (only the HTTP server)")
        oracle = self.oracle
        info, simulated = oracle.server_info(server_args, self.site)
        import sglang.version

        payload = {
            "release": sglang.version.__version__,
            "entry": self.entry,
            "argv": list(sys.orig_argv),
            "launchedAtMs": self.launched_ms,
            "site": self.site,
            "serverArgs": oracle.jsonable(oracle.server_args_dict(server_args)),
            "serverInfo": oracle.jsonable(info),
            "serverInfoSimulated": simulated,
        }
        if self.recorder is not None:
            unrecorded = self.recorder.save(payload)
            if unrecorded is not None:
                # Not an event: the tests read the events of a start as the server's own.
                try:
                    with open(os.path.join(self.lab_dir, "start-cache.log"), "a", encoding="utf-8") as f:
                        f.write(json.dumps({"pid": os.getpid(), "argv": sys.orig_argv, "notRecorded": unrecorded}) + "\n")
                except OSError:
                    pass
        self.exec_simulator(payload)

    def exec_simulator(self, payload):
        """The simulator (node) in this process, so the unit's MainPID stays, with the hand-off on a memfd."""
        data = json.dumps(payload).encode()
        fd = os.memfd_create("sglang-lab-server-args", 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        os.set_inheritable(fd, True)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        node = self.lab["nodePath"]
        os.execv(node, [node, os.path.join(self.lab["distDir"], "bin", "sglang-server.js"), str(fd), self.lab_dir])


def boot(lab_dir, start_cache=None):
    """Run from the venv's sglang-lab.pth (site.py may read it twice: lib and lib64).
    start_cache: the lab's start cache folder (sglang_lab_start_cache.py), None for none."""
    global _BOOTED
    if _BOOTED:
        return
    _BOOTED = True
    entry = server_entry(getattr(sys, "orig_argv", []), os.path.dirname(os.path.abspath(sys.executable)))
    if entry is not None:
        _Server(lab_dir, entry).install(start_cache)
