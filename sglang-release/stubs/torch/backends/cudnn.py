"""torch.backends.cudnn: the box's cuDNN is not known here.

`version()` is what real torch returns when it cannot load cuDNN (None), unless
SGLANG_LAB_CUDNN_VERSION gives one (e.g. 91002, torch 2.9.1+cu128's 9.10.2).
SGLang 0.5.9's check_server_args asks it for multimodal models with torch 2.9.1
(check_torch_2_9_1_cudnn_compatibility): None makes it warn that the version
could not be determined, a version below 9.15 makes it raise, as on a box.
"""

import os

import _sglang_lab_stub as _stub


def version():
    value = os.environ.get("SGLANG_LAB_CUDNN_VERSION")
    return int(value) if value else None


def is_available():
    return version() is not None


_stub.make_permissive(__name__)
