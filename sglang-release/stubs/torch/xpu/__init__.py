"""torch.xpu of a CUDA build: present, never available."""
import _sglang_lab_stub as _stub


def is_available():
    return False


def device_count():
    return 0


_stub.make_permissive(__name__)
