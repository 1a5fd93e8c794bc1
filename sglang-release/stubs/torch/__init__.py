"""torch, stubbed for SGLang's config layer (no GPU, no CUDA, no kernels).

What SGLang asks while it prepares ServerArgs is answered from the lab's GPUs
(`SGLANG_LAB_*`, see sglang-release/README.md): `torch.cuda.is_available()`,
`device_count()` (honouring CUDA_VISIBLE_DEVICES), `get_device_capability()`,
`get_device_name()`, `get_device_properties()`, `mem_get_info()`,
`torch.version.cuda`/`hip`, `torch.__version__` (the release's pinned torch),
dtypes and `finfo`. Other backends (xpu, mps, npu, hpu, musa) are absent, as in
a CUDA build. Everything else is an inert placeholder (_sglang_lab_stub).
"""

import builtins as _builtins

import _sglang_lab_stub as _stub

from . import version  # noqa: F401  (torch.version.cuda, .hip)
from .version import __version__  # noqa: F401


class dtype:
    def __init__(self, name, itemsize, is_floating_point, is_signed=True, is_complex=False):
        self._name = name
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self.is_complex = is_complex

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


_DTYPES = {
    "float32": (4, True), "float64": (8, True), "float16": (2, True), "bfloat16": (2, True),
    "float8_e4m3fn": (1, True), "float8_e4m3fnuz": (1, True), "float8_e5m2": (1, True),
    "float8_e5m2fnuz": (1, True), "float8_e8m0fnu": (1, True), "float4_e2m1fn_x2": (1, True),
    "complex64": (8, False), "complex128": (16, False),
    "int8": (1, False), "int16": (2, False), "int32": (4, False), "int64": (8, False),
    "uint8": (1, False), "uint16": (2, False), "uint32": (4, False), "uint64": (8, False),
    "bool": (1, False),
}
for _n, (_size, _fp) in _DTYPES.items():
    globals()[_n] = dtype(_n, _size, _fp, is_signed=not _n.startswith("uint") and _n != "bool",
                          is_complex=_n.startswith("complex"))
float = float32  # noqa: A001
double = float64
half = float16
int = int32  # noqa: A001
long = int64
short = int16
cfloat = complex64
uint4 = dtype("uint4", 1, False, is_signed=False)
int4 = dtype("int4", 1, False)

_FINFO = {
    "float32": (3.4028234663852886e38, 1.1920928955078125e-07, 1.1754943508222875e-38, 32),
    "float64": (1.7976931348623157e308, 2.220446049250313e-16, 2.2250738585072014e-308, 64),
    "float16": (65504.0, 0.0009765625, 6.103515625e-05, 16),
    "bfloat16": (3.3895313892515355e38, 0.0078125, 1.1754943508222875e-38, 16),
    "float8_e4m3fn": (448.0, 0.125, 0.015625, 8),
    "float8_e4m3fnuz": (240.0, 0.125, 0.0078125, 8),
    "float8_e5m2": (57344.0, 0.25, 6.103515625e-05, 8),
    "float8_e5m2fnuz": (57344.0, 0.125, 3.0517578125e-05, 8),
    "float8_e8m0fnu": (1.7014118346046923e38, 1.0, 5.877471754111438e-39, 8),
}


class finfo:
    def __init__(self, type=None):  # noqa: A002
        t = type if type is not None else float32
        self.max, self.eps, self.tiny, self.bits = _FINFO[t._name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = t._name


class iinfo:
    def __init__(self, type):  # noqa: A002
        bits = type.itemsize * 8
        self.bits = bits
        if type.is_signed:
            self.min, self.max = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        else:
            self.min, self.max = 0, 2**bits - 1
        self.dtype = type._name


class device:
    def __init__(self, type, index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            index = _builtins.int(idx)
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Size(tuple):
    pass


class Tensor(_stub._subclassable("torch.Tensor")):
    pass


class Generator(_stub._subclassable("torch.Generator")):
    pass


class _NoGrad:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, fn):
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


no_grad = inference_mode = enable_grad = _NoGrad


def compile(model=None, **kwargs):  # noqa: A001
    if model is None:
        return lambda fn: fn
    return model


def is_tensor(obj):
    return isinstance(obj, Tensor)


def get_default_dtype():
    return float32


def get_device_module(dev=None):
    from . import cuda as _cuda
    return _cuda


from . import backends, cpu, cuda, distributed, library, mps, nn, ops, utils, xpu  # noqa: E402,F401
from .nn import Parameter  # noqa: E402,F401

_stub.stub_package("torch")
# Backends a CUDA build of torch does not have: hasattr() must say no.
_stub.make_permissive(__name__, deny=("npu", "hpu", "musa", "mlu", "xla", "_lab_deny"))
