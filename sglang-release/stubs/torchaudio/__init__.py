"""torchaudio, stubbed: importable (as on a CUDA box), every name an inert placeholder."""
import _sglang_lab_stub as _stub

__version__ = _stub.dist_version("torchaudio", "0")

_stub.stub_package(__name__)
_stub.make_permissive(__name__)
