import _sglang_lab_stub as _stub


def is_available():
    return False


def is_built():
    return False


_stub.make_permissive(__name__)
