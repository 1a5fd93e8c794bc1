"""Shared machinery of the lab's hardware stubs (torch, triton, sgl_kernel, ...).

SGLang's config layer imports the GPU stack at module level (kernels, layers,
quantization methods) but, while it prepares ServerArgs, only *asks* it a few
things: is CUDA there, how many devices, which compute capability, how much
memory. Those answers are written out in torch/ (from SGLANG_LAB_* variables).
Everything else a module touches at import time (decorators, base classes,
dtype tables, `torch.ops.*`) gets an inert placeholder from here:

- a placeholder is falsy, callable (a call with one function returns that
  function, so it works as a decorator and as a decorator factory), a context
  manager, subclassable, iterable (empty) and has every attribute;
- submodules of a stubbed package that have no file here are made on import.

Every placeholder handed out is recorded (`touched()`), so the oracle can say
exactly which stubbed names a run used. Nothing here answers a question that
SGLang's argument rules decide on: those names are real attributes in torch/.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import os
import sys
import types

_TOUCHED: set = set()


def touched() -> list:
    return sorted(_TOUCHED)


class Placeholder:
    """An inert stand-in; `class X(placeholder)` works, and so does `placeholder(...)`."""

    _name = "placeholder"

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (callable(args[0]) or isinstance(args[0], type)):
            return args[0]
        return placeholder(f"{self._name}()")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return placeholder(f"{self._name}.{name}")

    def __mro_entries__(self, bases):
        return (_subclassable(self._name),)

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __getitem__(self, key):
        return placeholder(f"{self._name}[]")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __or__(self, other):
        return self

    __ror__ = __or__

    def _arith(self, *other):
        # Tensor maths at import time (module-level constants): no values here.
        return placeholder(f"{self._name}<op>")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __matmul__ = _arith
    __pow__ = __rpow__ = __mod__ = __neg__ = __pos__ = __abs__ = __invert__ = _arith

    def __repr__(self):
        return f"<lab stub {self._name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


class StubBase:
    """Base of stubbed classes (`class RMSNorm(nn.Module)`): a plain class, so it
    mixes with ABCs; instances answer unknown attributes with placeholders."""

    _lab_name = "StubBase"

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return placeholder(f"{type(self)._lab_name}.{name}")


_CLASSES: dict = {}


def _subclassable(name: str) -> type:
    cls = _CLASSES.get(name)
    if cls is None:
        cls = type(name.rsplit(".", 1)[-1], (StubBase,), {"_lab_name": name})
        _CLASSES[name] = cls
    return cls


def placeholder(name: str) -> Placeholder:
    _TOUCHED.add(name)
    p = Placeholder()
    object.__setattr__(p, "_name", name)
    return p


class StubModule(types.ModuleType):
    """A module whose unknown attributes are placeholders (except `deny`)."""

    def __init__(self, name, deny=()):
        super().__init__(name)
        self.__dict__["_lab_deny"] = frozenset(deny)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in self.__dict__["_lab_deny"]:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        return placeholder(f"{self.__name__}.{name}")


def make_permissive(module_name: str, deny=()) -> None:
    """Give an existing (file-backed) stub module the placeholder fallback."""
    mod = sys.modules[module_name]
    mod.__class__ = StubModule
    mod.__dict__["_lab_deny"] = frozenset(deny)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes any missing submodule of a stubbed package (`torch.nn.functional`)."""

    def __init__(self):
        self.roots: set = set()

    def find_spec(self, fullname, path, target=None):
        root = fullname.split(".", 1)[0]
        if root not in self.roots or "." not in fullname:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        _TOUCHED.add(spec.name)
        mod = StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        pass


# Installed-package metadata of the stubbed packages, as pip would have left
# it on a GPU box: {"distribution name": "version"} in SGLANG_LAB_STUB_DISTS,
# which the oracle fills from the release's own pins (its wheel METADATA), so
# importlib.metadata.version("torch") and transformers' package checks agree
# with the release. Import names of each distribution:
_TOP_LEVEL = {
    "torch": "torch",
    "triton": "triton",
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "torchcodec": "torchcodec",
    "flashinfer-python": "flashinfer",
    "sglang-kernel": "sgl_kernel",
    "sgl-kernel": "sgl_kernel",
    "nvidia-ml-py": "pynvml",
    "apache-tvm-ffi": "tvm_ffi",
}


def stub_distributions() -> dict:
    return json.loads(os.environ.get("SGLANG_LAB_STUB_DISTS") or "{}")


def dist_version(name: str, default: str) -> str:
    return stub_distributions().get(name, default)


class _StubDistribution(importlib.metadata.Distribution):
    def __init__(self, name, version):
        self._name, self._version = name, version

    def read_text(self, filename):
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {self._version}\n"
        if filename == "top_level.txt":
            return _TOP_LEVEL.get(self._name, self._name.replace("-", "_")) + "\n"
        return None

    def locate_file(self, path):
        return path


def _find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
    wanted = context.name
    norm = (lambda n: n.lower().replace("_", "-").replace(".", "-"))
    for name, version in stub_distributions().items():
        if wanted is None or norm(wanted) == norm(name):
            yield _StubDistribution(name, version)


_Finder.find_distributions = _find_distributions

_FINDER = _Finder()
sys.meta_path.append(_FINDER)


def stub_package(root: str) -> None:
    """Serve missing submodules of `root` with placeholder modules."""
    _FINDER.roots.add(root)
