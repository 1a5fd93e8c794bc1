import _sglang_lab_stub as _stub

_stub.make_permissive(__name__)
