"""tvm_ffi (apache-tvm-ffi, SGLang's JIT kernel FFI since 0.5.x), stubbed:
importable (as on a CUDA box), every name an inert placeholder."""
import _sglang_lab_stub as _stub

__version__ = _stub.dist_version("apache-tvm-ffi", "0")

_stub.stub_package(__name__)
_stub.make_permissive(__name__)
