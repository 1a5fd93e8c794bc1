import _sglang_lab_stub as _stub


def is_available():
    return True


def device_count():
    return 1


_stub.make_permissive(__name__)
