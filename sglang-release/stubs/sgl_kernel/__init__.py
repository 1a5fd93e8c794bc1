"""sgl_kernel (distribution sglang-kernel, sgl-kernel before 0.5.10), stubbed:
importable (as on a CUDA box), every name an inert placeholder."""
import _sglang_lab_stub as _stub

_dists = _stub.stub_distributions()
__version__ = _dists.get("sglang-kernel") or _dists.get("sgl-kernel") or "0"

_stub.stub_package(__name__)
_stub.make_permissive(__name__)
