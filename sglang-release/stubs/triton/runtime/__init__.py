import _sglang_lab_stub as _stub

from . import driver  # noqa: F401

_stub.make_permissive(__name__)
