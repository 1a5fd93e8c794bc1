"""triton, stubbed: importable (as on a CUDA box), kernels are inert placeholders.

The active driver reports the lab GPU as a CUDA target (what SGLang's FLA
helpers ask at import time); see runtime/driver.py.
"""
import _sglang_lab_stub as _stub

from . import runtime  # noqa: F401

__version__ = _stub.dist_version("triton", "3.6.0")

_stub.stub_package(__name__)
_stub.make_permissive(__name__)
