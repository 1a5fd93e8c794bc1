#!/usr/bin/env python3
"""The oracle: SGLang's own config layer, run for real with the hardware stubbed.

    python3 oracle.py --version 0.5.11 < cases.jsonl > results.jsonl

Each stdin line is a case:
    {"argv": [...], "entry": "sglang-serve" | "launch-server", "env": {...},
     "gpuCount": 2, "gpuMemoryMiB": 49140}
and gets one stdout line, in order:
    {"status": "ok" | "argparse-error" | "exception" | "exit", "exitCode": 0 | 2 | 1 | n,
     "exceptionType", "message", "checkReads" (for an exception: the settings the raising
     check reads, from the release's source), "stdout", "stderr", "logs": [{level, logger, message}],
     "serverArgs", "serverInfo", "serverInfoSimulated", "launcher", "stubsTouched"}

With --serve it keeps SGLang imported and takes batches until stdin ends: a
header line {"cases": N, "jobs": J, "timeout": T}, then N case lines, answered
with N result lines (oracle.ts keeps one such process per release and
environment, so a process judging many configs imports each release once).

SGLang is imported once in this process; every case runs in a forked child
(fresh environment, SGLang's lru caches cleared, stdout/stderr captured), so
nothing leaks from one case to the next. The verdicts are SGLang's: the
child runs `sglang serve` (sglang.cli.main.main) or `python -m
sglang.launch_server` (runpy) exactly as the console script / interpreter
would, up to the point where the release hands ServerArgs to the HTTP (or
gRPC, encoder, Ray) launcher; that call is the boundary, recorded as "ok".
See README.md for what is real and what is stubbed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE_FILE = os.path.abspath(__file__)
STUBS = os.path.join(HERE, "stubs")


def _isolate():
    # No user or site packages, no PYTHON* variables, no .pyc written into the
    # checkout: only the release, its pinned deps and the stubs are importable.
    if not (sys.flags.isolated and sys.flags.no_site and sys.dont_write_bytecode):
        os.execv(sys.executable, [sys.executable, "-I", "-S", "-B", ORACLE_FILE, *sys.argv[1:]])


if __name__ == "__main__":
    # Imported (by sglang_lab_venv.py, for server_info and the launcher list), it leaves the process alone.
    _isolate()

import argparse  # noqa: E402
import ast  # noqa: E402
import asyncio  # noqa: E402
import dataclasses  # noqa: E402
import enum  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

# The lab's GPUs: 2 x RTX A6000 (lab/README.md), unless the caller says otherwise.
GPU_DEFAULTS = {
    "SGLANG_LAB_GPU_COUNT": "2",
    "SGLANG_LAB_GPU_MEMORY_MIB": "49140",
    "SGLANG_LAB_GPU_NAME": "NVIDIA RTX A6000",
    "SGLANG_LAB_GPU_CAPABILITY": "8.6",
    "SGLANG_LAB_GPU_SM_COUNT": "84",
    "SGLANG_LAB_DRIVER_VERSION": "570.133.20",
    "SGLANG_LAB_CUDA_VERSION": "12.8",
}

# Stubbed distributions and the release's pins for them (its wheel METADATA).
# SGLang does not pin torchvision or triton: they follow torch (torchvision
# 0.(minor+15).patch, the release pairing torch has kept since 2.0; triton as
# torch's own wheel pins it for the torch versions listed, else left out).
STUBBED_DISTS = ("torch", "torchaudio", "torchcodec", "flashinfer-python", "sglang-kernel", "sgl-kernel",
                 "nvidia-ml-py", "apache-tvm-ffi")
TRITON_FOR_TORCH = {"2.9": "3.5.1", "2.10": "3.6.0", "2.11": "3.6.0"}


def torch_companions(torch_version):
    parts = torch_version.split("+", 1)[0].split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
        return {}
    major, minor, patch = (int(p) for p in parts[:3])
    out = {"torchvision": f"0.{minor + 15}.{patch}"} if major == 2 else {}
    triton = TRITON_FOR_TORCH.get(f"{major}.{minor}")
    if triton:
        out["triton"] = triton
    return out


# Where each release hands its ServerArgs over to a server (run_server in
# launch_server.py): the oracle's boundary.
LAUNCHERS = {
    "sglang.srt.entrypoints.http_server": ("launch_server", "http"),
    "sglang.srt.entrypoints.grpc_server": ("serve_grpc", "grpc"),
    "sglang.srt.disaggregation.encode_server": ("launch_server", "encode"),
    "sglang.srt.disaggregation.encode_grpc_server": ("serve_grpc_encoder", "encode-grpc"),
    "sglang.srt.ray.http_server": ("launch_server", "ray"),
    # 0.5.2x moved the encoder servers
    "sglang.srt.disaggregation.encoder.http_server": ("launch_server", "encode"),
    "sglang.srt.disaggregation.encoder.grpc_server": ("serve_grpc_encoder", "encode-grpc"),
}


def cache_root():
    root = os.environ.get("SGLANG_SERVE_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "sglang-serve")
    return os.path.join(root, "sglang")


def parse_cli():
    p = argparse.ArgumentParser(prog="oracle.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", required=True, help="SGLang release, one of sglang-release/VERSIONS")
    p.add_argument("--site", help="the release's site dir (default: the install.sh cache)")
    p.add_argument("--deps", help="the shared deps site dir (default: the install.sh cache)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    p.add_argument("--serve", action="store_true",
                   help="keep the release imported and run batches of cases until stdin ends (oracle.ts keeps one per release)")
    p.add_argument("--report", metavar="FILE",
                   help="after the run, write which distributions were imported and which stubbed names were used")
    return p.parse_args()


class Launched(BaseException):
    """Raised at the launcher boundary; BaseException so SGLang's `except Exception` lets it by."""

    def __init__(self, server_args, launcher):
        super().__init__(launcher)
        self.server_args = server_args
        self.launcher = launcher


def _stub_dists(site):
    """{distribution: version} of the stubbed packages, from the release's own pins."""
    from packaging.requirements import Requirement

    meta = None
    for name in os.listdir(site):
        if name.startswith("sglang-") and name.endswith(".dist-info"):
            meta = os.path.join(site, name, "METADATA")
    dists = {}
    if meta is None:
        return dists
    with open(meta, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            name = req.name.lower().replace("_", "-")
            if name not in STUBBED_DISTS or (req.marker and not req.marker.evaluate({"extra": ""})):
                continue
            # The pinned version, else the lowest the release accepts (else none).
            pinned = [s.version for s in req.specifier if s.operator == "=="] or \
                [s.version for s in req.specifier if s.operator == ">="]
            if pinned:
                dists[name] = pinned[0]
    dists.update(torch_companions(dists.get("torch", "")))
    return dists


def base_env(cli_env, stub_dists, hf_home):
    env = {
        "PATH": os.path.join(STUBS, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": cli_env.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        # Never reach out to the Hugging Face hub (tests talk to loopback only).
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": hf_home,
        "SGLANG_LAB_STUB_DISTS": json.dumps(stub_dists, sort_keys=True),
    }
    if "TMPDIR" in cli_env:
        env["TMPDIR"] = cli_env["TMPDIR"]
    for key, default in GPU_DEFAULTS.items():
        env[key] = cli_env.get(key, default)
    return env


def case_env(base, case):
    env = dict(base)
    if case.get("gpuCount") is not None:
        env["SGLANG_LAB_GPU_COUNT"] = str(int(case["gpuCount"]))
    if case.get("gpuMemoryMiB") is not None:
        env["SGLANG_LAB_GPU_MEMORY_MIB"] = str(int(case["gpuMemoryMiB"]))
    for k, v in (case.get("env") or {}).items():
        env[str(k)] = str(v)
    return env


class Capture:
    """What a stretch of code prints (fd 1 and 2) and logs (log records, Python warnings)."""

    def __init__(self):
        self.stdout = self.stderr = ""
        self.logs = []

    def silent(self):
        return not (self.stdout or self.stderr or self.logs)

    def __enter__(self):
        import logging
        import warnings

        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self._saved = (os.dup(1), os.dup(2))
        self._fds = (os.memfd_create("stdout"), os.memfd_create("stderr"))
        os.dup2(self._fds[0], 1)
        os.dup2(self._fds[1], 2)
        self._call_handlers = call_handlers = logging.Logger.callHandlers
        logs = self.logs

        def record_log(logger, record):
            logs.append({"level": record.levelname, "logger": record.name, "message": record.getMessage()})
            return call_handlers(logger, record)

        logging.Logger.callHandlers = record_log
        self._show = show = warnings.showwarning

        def record_warning(message, category, filename, lineno, file=None, line=None):
            logs.append({"level": "WARNING", "logger": "py.warnings", "category": category.__name__,
                         "message": str(message), "source": f"{filename}:{lineno}"})
            return show(message, category, filename, lineno, file, line)

        warnings.showwarning = record_warning
        return self

    def __exit__(self, *exc):
        import logging
        import warnings

        logging.Logger.callHandlers = self._call_handlers
        warnings.showwarning = self._show
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        self.stdout, self.stderr = (_read_memfd(fd) for fd in self._fds)
        for fd in (*self._saved, *self._fds):
            os.close(fd)
        return False


def import_if_silent(name):
    """Import `name` in the parent, unless that prints or logs anything (or fails).

    A module imported here is not imported again by the cases, so whatever its
    import says would be missing from their output: such a module (or one
    that fails) is left for each case to import itself.
    """
    if name in sys.modules:
        return True
    before = set(sys.modules)
    ok = True
    with Capture() as out:
        try:
            __import__(name)
        except BaseException:  # noqa: BLE001
            ok = False
    if ok and out.silent():
        return True
    for partial in set(sys.modules) - before:
        del sys.modules[partial]
    return False


# Imported by both entries before they parse arguments: their import-time
# output belongs to every case (the prelude). Then what some cases import,
# preloaded only where silent.
PRELUDE_MODULES = ("sglang", "sglang.srt.server_args")
WARM_MODULES = ("sglang.cli.main", "sglang.cli.serve", "sglang.launch_server", "sglang.srt.configs.model_config")


def preload():
    with Capture() as prelude:
        for name in PRELUDE_MODULES:
            __import__(name)
    for name in WARM_MODULES:
        import_if_silent(name)
    return prelude


def preload_more(names):
    """Modules a case imported lazily, imported here so later cases start warm; whether any was.

    Each name is tried once: one that was refused (it printed, or failed) is
    left to the cases, as before, without importing it again here each time a
    case names it."""
    tried = preload_more.__dict__.setdefault("tried", set())
    loaded = len(sys.modules)
    for name in sorted(set(names) - tried - set(LAUNCHERS)):
        tried.add(name)
        import_if_silent(name)
    return len(sys.modules) != loaded


def clear_sglang_caches():
    """Forget what SGLang cached about the hardware and environment (lru_cache)."""
    for name, mod in list(sys.modules.items()):
        if not (name == "sglang" or name.startswith("sglang.")) or mod is None:
            continue
        for value in list(vars(mod).values()):
            # The exact type: a hasattr() would wake lazy-import proxies (sglang.utils.LazyImport).
            if type(value) is functools._lru_cache_wrapper:
                value.cache_clear()


def jsonable(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    return repr(value)


def exception_type_name(exc):
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def print_traceback(exc):
    # As the interpreter prints an uncaught exception, minus the oracle's own frames.
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != ORACLE_FILE])
    sys.stderr.write("".join(te.format()))


def _extract_function(path, qualname):
    """The source of one function (Class.method or function) of a release file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    scope, parts = tree.body, qualname.split(".")
    node = None
    for part in parts:
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None, tree
        scope = node.body
    return node, tree


@functools.lru_cache(maxsize=None)
def release_function(path, qualname, module_name):
    """A function exactly as the release wrote it, outside its (GPU-bound) module.

    Its free names are bound from the module's own top-level imports; the
    caller puts the rest (the running server's state, simulated) into the
    returned globals. Parsed once, in the parent.
    """
    node, tree = _extract_function(path, qualname)
    if node is None:
        raise LookupError(f"{qualname} not found in {path}")
    node.decorator_list = []
    imports = {}
    for top in tree.body:
        if isinstance(top, ast.Import):
            for alias in top.names:
                imports[(alias.asname or alias.name).split(".")[0]] = ast.Import(names=[alias])
        elif isinstance(top, ast.ImportFrom):
            for alias in top.names:
                imports[alias.asname or alias.name] = ast.ImportFrom(module=top.module, names=[alias], level=top.level)
    ns = {"__name__": module_name, "__builtins__": __builtins__}
    for name in sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}):
        if name in imports and name not in ns:
            mod = ast.fix_missing_locations(ast.Module(body=[imports[name]], type_ignores=[]))
            exec(compile(mod, path, "exec"), ns)  # noqa: S102
    code = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    exec(compile(code, path, "exec"), ns)  # noqa: S102
    return ns[node.name], ns


SERVER_INFO_FUNCTIONS = (
    ("sglang/srt/managers/scheduler.py", "Scheduler.get_init_info", "sglang.srt.managers.scheduler"),
    ("sglang/srt/entrypoints/http_server.py", "server_info", "sglang.srt.entrypoints.http_server"),
)


def load_server_info_functions(site):
    for rel, qualname, module_name in SERVER_INFO_FUNCTIONS:
        try:
            release_function(os.path.join(site, rel), qualname, module_name)
        except Exception:  # noqa: BLE001  (reported per case by server_info)
            pass


class _SchedulerState:
    """`self` of Scheduler.get_init_info: the running scheduler's numbers are unknown here (None)."""

    def __getattr__(self, name):
        return None


def server_info(server_args, site):
    """GET /server_info as this release's http_server.py builds it.

    The handler and Scheduler.get_init_info are the release's code, run on the
    real ServerArgs; what only a running scheduler knows (token capacity,
    memory, throughput) is null and listed in the second value.
    """
    (sched_rel, sched_name, sched_mod), (http_rel, http_name, http_mod) = SERVER_INFO_FUNCTIONS
    simulated = []

    try:
        init_info, _ = release_function(os.path.join(site, sched_rel), sched_name, sched_mod)
        scheduler_info = init_info(_SchedulerState())
        simulated += sorted(set(k for k, v in scheduler_info.items() if v is None))
    except Exception:  # noqa: BLE001  (needs more of a live scheduler than this)
        scheduler_info = {"status": "ready", "max_total_num_tokens": None, "max_req_input_len": None}
        simulated += ["max_total_num_tokens", "max_req_input_len"]

    dp = getattr(server_args, "dp_size", 1) or 1
    internal = []
    for _ in range(dp):
        # Scheduler.get_internal_state (0.5.9-0.5.11): vars() of the server args plus live
        # numbers; for 0.5.2x's resolved records, their resolved_dict().
        state = server_args_dict(server_args) if hasattr(server_args, "resolved_dict") else dict(vars(server_args))
        state.pop("model_config", None)
        state.update({"last_gen_throughput": 0.0, "memory_usage": None, "effective_max_running_requests_per_dp": None})
        internal.append(state)
    simulated += [f"internal_states[].{k}" for k in ("last_gen_throughput", "memory_usage",
                                                     "effective_max_running_requests_per_dp")]

    async def get_internal_state():
        return internal

    tokenizer_manager = types.SimpleNamespace(server_args=server_args, get_internal_state=get_internal_state,
                                              startup_time=None)
    global_state = types.SimpleNamespace(tokenizer_manager=tokenizer_manager, scheduler_info=scheduler_info)
    handler, handler_globals = release_function(os.path.join(site, http_rel), http_name, http_mod)
    handler_globals["_global_state"] = global_state
    info = asyncio.run(handler())
    if "startup_time" in info:
        simulated.append("startup_time")
    return info, sorted(simulated)


def server_args_dict(server_args):
    """The release's own serialization: resolved_dict() (0.5.2x), else dataclasses.asdict."""
    if hasattr(server_args, "resolved_dict"):
        return server_args.resolved_dict()
    return dataclasses.asdict(server_args)


# --- what a refusing check reads -----------------------------------------------

def _parsed(path):
    """A release file's syntax tree, or None (parsed once per process; main() parses server_args.py before the cases fork)."""
    cache = _parsed.__dict__.setdefault("cache", {})
    if path not in cache:
        try:
            with open(path, encoding="utf-8") as f:
                cache[path] = ast.parse(f.read(), filename=path)
        except (OSError, SyntaxError, ValueError):
            cache[path] = None
    return cache[path]


def _enclosing(tree, lineno):
    """The innermost function holding `lineno`, and the statements down to the one at it (outermost first)."""
    # Down the nodes whose lines hold `lineno` only (a walk of the whole tree took most of a refused case's time).
    best, level = None, [tree]
    while level:
        holding = []
        for node in level:
            for child in ast.iter_child_nodes(node):
                start = getattr(child, "lineno", None)
                if start is None or start <= lineno <= (child.end_lineno or start):
                    holding.append(child)
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and (best is None or start >= best.lineno):
                        best = child
        level = holding
    if best is None:
        return None, []
    path, body = [], best.body
    while True:
        stmt = next((n for n in body if n.lineno <= lineno <= (n.end_lineno or n.lineno)), None)
        if stmt is None:
            return best, path
        path.append(stmt)
        inner = [getattr(stmt, field, []) for field in ("body", "orelse", "finalbody", "handlers")]
        body = [n for block in inner for n in block if isinstance(n, ast.stmt)]
        if isinstance(stmt, ast.Try):
            body += [n for h in stmt.handlers for n in h.body]


def _conditions(path, lineno):
    """The tests a statement at `lineno` depends on: the ifs (and elifs) around it, an assert's own test."""
    tests = []
    for stmt in path:
        if isinstance(stmt, (ast.If, ast.While)):
            tests.append(stmt.test)
        elif isinstance(stmt, ast.Assert) and stmt.lineno <= lineno <= (stmt.end_lineno or stmt.lineno):
            tests.append(stmt.test)
    return tests


def _attributes(node):
    """`<name>.<field>` read in an expression (the first attribute off a plain name), and `envs.<VAR>`."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            if n.value.id == "envs" and n.attr.isupper():
                out.add(f"env:{n.attr}")
            elif not n.attr.startswith("_"):
                out.add(n.attr)
    return out


def _callee_reads(func):
    """What a helper of the release reads off its first parameter (`attention_backends_of(cfg)`: cfg.attention_backend, ...)."""
    import inspect

    try:
        tree = ast.parse(__import__("textwrap").dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return set()
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None or not fn.args.args:
        return set()
    first = fn.args.args[0].arg
    return {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == first and not n.attr.startswith("_")}


def check_reads(exc, site):
    """The settings the check that raised `exc` reads, as the release's source says.

    In the innermost frame of the release's code: the raising statement's
    conditions (an assert's test, the ifs around a raise), the settings they
    read as `<name>.<field>` (and `envs.<VAR>` as env:VAR), and for a local
    name in them, what its assignment reads (through a helper of the
    release one call deep). In each calling frame of the release's config
    layer (server_args.py, arg_groups/), the ifs around the call: `if
    cfg.pp_size > 1: check_pipeline_parallel_compat(cfg)`. Sorted; None when
    the traceback holds no release frame.
    """
    frames = [(tb.tb_frame, tb.tb_lineno) for tb in _tracebacks(exc)]
    ours = [(f, line) for f, line in frames if f.f_code.co_filename.startswith(os.path.join(site, "sglang") + os.sep)]
    if not ours:
        return None
    reads = set()
    for depth, (frame, lineno) in enumerate(reversed(ours)):
        filename = frame.f_code.co_filename
        if depth > 0 and not (filename.endswith(os.sep + "server_args.py") or (os.sep + "arg_groups" + os.sep) in filename):
            break
        tree = _parsed(filename)
        if tree is None:
            continue
        fn, path = _enclosing(tree, lineno)
        tests = _conditions(path, lineno)
        for test in tests:
            reads |= _attributes(test)
        if depth > 0 or fn is None:
            continue
        # Local names in the innermost conditions: what their assignments in the function read.
        names = {n.id for t in tests for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assign) or node.lineno > lineno:
                continue
            targets = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if not targets & names:
                continue
            reads |= _attributes(node.value)
            for call in (n for n in ast.walk(node.value) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                func = frame.f_globals.get(call.func.id)
                if callable(func) and getattr(func, "__module__", "").startswith("sglang"):
                    reads |= _callee_reads(func)
    return sorted(reads)


def _tracebacks(exc):
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def install_launch_boundary():
    for module_name, (func, launcher) in LAUNCHERS.items():
        mod = types.ModuleType(module_name)
        mod.__file__ = f"<sglang-serve oracle: {launcher} launcher boundary>"

        def boundary(server_args, *args, _launcher=launcher, **kwargs):
            # What the launcher runs first, before any GPU work (Engine._launch_subprocesses).
            server_args.check_server_args()
            raise Launched(server_args, _launcher)

        setattr(mod, func, boundary)
        sys.modules[module_name] = mod


def run_entry(case, site):
    entry = case.get("entry", "sglang-serve")
    argv = [str(a) for a in case.get("argv", [])]
    if entry == "sglang-serve":
        # The console script: sglang = sglang.cli.main:main
        from sglang.cli.main import main

        sys.argv = ["sglang", "serve", *argv]
        main()
    elif entry == "launch-server":
        import runpy

        sys.argv = [os.path.join(site, "sglang", "launch_server.py"), *argv]
        # `python -m` finds the module not yet imported (the parent preloaded it).
        sys.modules.pop("sglang.launch_server", None)
        runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)
    else:
        raise ValueError(f"unknown entry {entry!r}: sglang-serve or launch-server")


def child(case, env, site, out_w, prelude):
    import _sglang_lab_stub

    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.environ.clear()
    os.environ.update(env)
    before_modules = set(sys.modules)
    touched_before = set(_sglang_lab_stub.touched())
    argparse_errors = []
    parser_error = argparse.ArgumentParser.error

    def record_parser_error(self, message):
        argparse_errors.append((self.prog, message))
        return parser_error(self, message)

    argparse.ArgumentParser.error = record_parser_error
    install_launch_boundary()
    capture = Capture().__enter__()

    result = {"status": None, "exitCode": None, "exceptionType": None, "message": None,
              "serverArgs": None, "serverInfo": None, "serverInfoSimulated": None, "launcher": None}
    launched = None
    try:
        run_entry(case, site)
        result.update(status="exit", exitCode=0)
    except Launched as done:
        launched = done
        result.update(status="ok", exitCode=0, launcher=done.launcher)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
        if argparse_errors and code == 2:
            result.update(status="argparse-error", exitCode=2, message=argparse_errors[-1][1])
        else:
            result.update(status="exit", exitCode=code)
    except BaseException as exc:  # noqa: BLE001  (uncaught in the real process: traceback, exit 1)
        print_traceback(exc)
        result.update(status="exception", exitCode=1, exceptionType=exception_type_name(exc), message=str(exc))
        try:
            result["checkReads"] = check_reads(exc, site)
        except Exception:  # noqa: BLE001  (what the check reads is a help for filing it, never the verdict)
            result["checkReads"] = None

    if launched is not None:
        args = launched.server_args
        result["serverArgs"] = jsonable(server_args_dict(args))
        try:
            info, simulated = server_info(args, site)
            result["serverInfo"], result["serverInfoSimulated"] = jsonable(info), simulated
        except Exception as exc:  # noqa: BLE001
            result["serverInfoError"] = f"{exception_type_name(exc)}: {exc}"

    capture.__exit__(None, None, None)
    result["stdout"] = prelude.stdout + capture.stdout
    result["stderr"] = prelude.stderr + capture.stderr
    result["logs"] = prelude.logs + capture.logs
    result["stubsTouched"] = sorted(set(_sglang_lab_stub.touched()) - touched_before)
    result["_modules"] = sorted(m for m in set(sys.modules) - before_modules if not m.startswith("__"))
    data = (json.dumps(result, default=repr) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(out_w, view)
        view = view[n:]
    os._exit(0)


def _read_memfd(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


class Release:
    """The release imported once in this process: its site, the base environment, what the cases taught it."""

    def __init__(self, site, deps, base, prelude):
        self.site, self.deps, self.base, self.prelude = site, deps, base, prelude
        # Modules the cases imported beyond the preload: imported here before the next fork.
        self.learned = set()
        self.touched = set()


def setup(cli):
    root = cache_root()
    site = cli.site or os.path.join(root, cli.version, "site")
    deps = cli.deps or os.path.join(root, "deps", "site")
    for path, what in ((site, f"SGLang {cli.version}"), (deps, "the shared deps")):
        if not os.path.isdir(path):
            sys.exit(f"oracle.py: {what} not installed at {path}; run sglang-release/install.sh")
    sys.path[:0] = [STUBS, site, deps]

    cli_env = dict(os.environ)
    hf_home = os.path.join(root, "hf-home")
    os.makedirs(hf_home, exist_ok=True)
    stub_dists = _stub_dists(site)
    base = base_env(cli_env, stub_dists, hf_home)
    os.environ.clear()
    os.environ.update(base)

    import _sglang_lab_stub  # noqa: F401  (before anything imports torch)

    prelude = preload()
    load_server_info_functions(site)
    # Where nearly every refusal is raised: parsed here once, so no case's check_reads parses it again.
    _parsed(os.path.join(site, "sglang", "srt", "server_args.py"))
    import sglang.version

    if sglang.version.__version__ != cli.version:
        sys.exit(f"oracle.py: {site} holds SGLang {sglang.version.__version__}, not {cli.version}")

    # What SGLang cached while it was imported here is forgotten once, here, and again after each import of
    # more of it (only then: nothing here runs SGLang's code in between): every case starts from empty caches
    # (a scan of its modules in each case took an eighth of its time).
    clear_sglang_caches()
    # Children share the parent's pages until they write them: keep the
    # collector from touching (and so copying) every imported object.
    import gc

    gc.collect()
    gc.freeze()
    release = Release(site, deps, base, prelude)
    release.touched.update(_sglang_lab_stub.touched())
    return release


def run_cases(release, cases, jobs, timeout, out):
    """Each case in a child forked from this process, `jobs` at once; one result line each on `out`, in order."""
    site, base, prelude, learned = release.site, release.base, release.prelude, release.learned
    results = [None] * len(cases)
    running = {}  # read fd -> (index, pid, started, chunks)
    next_case, next_out = 0, 0
    jobs = max(1, jobs)
    while next_out < len(cases):
        while next_case < len(cases) and len(running) < jobs:
            if learned:
                if preload_more(learned):
                    clear_sglang_caches()
                learned.clear()
            r, w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                import gc

                gc.disable()
                os.close(r)
                oracle_stderr = os.dup(2)
                try:
                    case = cases[next_case]
                    child(case, case_env(base, case), site, w, prelude)
                except BaseException:  # noqa: BLE001  (the oracle's own failure, not SGLang's verdict)
                    text = traceback.format_exc()
                    os.write(oracle_stderr, f"oracle.py: case {next_case + 1}: {text}".encode())
                    res = {"status": "exception", "exitCode": 1, "exceptionType": "OracleError",
                           "message": text, "stdout": "", "stderr": "", "logs": [],
                           "serverArgs": None, "serverInfo": None}
                    os.write(w, (json.dumps(res) + "\n").encode())
                finally:
                    os._exit(70)
            os.close(w)
            running[r] = (next_case, pid, time.monotonic(), [])
            next_case += 1
        ready, _, _ = select.select(list(running), [], [], 1.0)
        now = time.monotonic()
        for fd in list(running):
            index, pid, started, chunks = running[fd]
            if fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    chunks.append(chunk)
                    continue
            elif now - started < timeout:
                continue
            else:
                os.kill(pid, signal.SIGKILL)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            del running[fd]
            try:
                res = json.loads(b"".join(chunks))
            except json.JSONDecodeError:
                reason = f"timed out after {timeout:g} s" if now - started >= timeout else \
                    f"the case's process ended without a result (wait status {status})"
                res = {"status": "exception", "exitCode": 1, "exceptionType": "OracleError", "message": reason,
                       "stdout": "", "stderr": "", "logs": [], "serverArgs": None, "serverInfo": None}
            learned.update(res.pop("_modules", []))
            release.touched.update(res.get("stubsTouched") or [])
            results[index] = res
        while next_out < len(cases) and results[next_out] is not None:
            out.write(json.dumps(results[next_out]) + "\n")
            results[next_out] = True
            next_out += 1
        out.flush()


def read_case(line, where):
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        sys.exit(f"oracle.py: {where}: {exc}")


def serve(release, cli, inp, out):
    """--serve: batches until stdin ends, each a header line {"cases": N, "jobs": J, "timeout": T} and N case lines
    (jobs and timeout, when left out: --jobs and --timeout)."""
    lineno = 0
    while True:
        header = inp.readline()
        lineno += 1
        if not header:
            return
        if not header.strip():
            continue
        batch = read_case(header, f"stdin line {lineno} (a batch header)")
        cases = []
        for _ in range(int(batch["cases"])):
            line = inp.readline()
            lineno += 1
            if not line:
                sys.exit(f"oracle.py: stdin ended inside a batch of {batch['cases']} cases")
            cases.append(read_case(line, f"stdin line {lineno}"))
        run_cases(release, cases, int(batch.get("jobs", cli.jobs)), float(batch.get("timeout", cli.timeout)), out)


def main():
    cli = parse_cli()
    release = setup(cli)
    if cli.serve:
        serve(release, cli, sys.stdin, sys.stdout)
        return
    cases = [read_case(line, f"stdin line {lineno}") for lineno, line in enumerate(sys.stdin, 1) if line.strip()]
    run_cases(release, cases, cli.jobs, cli.timeout, sys.stdout)
    if cli.report:
        preload_more(release.learned)
        import _sglang_lab_stub

        write_report(cli.report, release.site, release.deps, release.touched | set(_sglang_lab_stub.touched()))


def write_report(path, site, deps, touched):
    """Which installed distributions the run imported (parent and cases), and the stubs it touched."""
    import importlib.metadata

    tops = {name.split(".", 1)[0] for name in sys.modules}
    imported = {}
    for dist in importlib.metadata.distributions(path=[site, deps]):
        top = (dist.read_text("top_level.txt") or "").split()
        if not top:
            top = sorted({str(f).split("/", 1)[0].removesuffix(".py") for f in (dist.files or [])
                          if "/" in str(f) or str(f).endswith(".py")})
        if any(t in tops for t in top):
            if type(dist).__name__ == "_StubDistribution":
                where = "stub"
            else:
                where = "site" if str(dist.locate_file("")).rstrip("/") == site.rstrip("/") else "deps"
            imported[dist.metadata["Name"]] = {"version": dist.version, "in": where}
    report = {"imported": dict(sorted(imported.items(), key=lambda kv: kv[0].lower())),
              "stubDistributions": json.loads(os.environ.get("SGLANG_LAB_STUB_DISTS", "{}")),
              "stubsTouched": sorted(touched)}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
