"""torch.cuda answered from the lab's GPUs.

SGLANG_LAB_GPU_COUNT (2), SGLANG_LAB_GPU_MEMORY_MIB (49140),
SGLANG_LAB_GPU_NAME ("NVIDIA RTX A6000"), SGLANG_LAB_GPU_CAPABILITY ("8.6"),
SGLANG_LAB_GPU_SM_COUNT (84), read at each call so a forked case can set them.
CUDA_VISIBLE_DEVICES narrows the devices as the CUDA runtime does.
"""

import os as _os

import _sglang_lab_stub as _stub


def _physical_count():
    return int(_os.environ.get("SGLANG_LAB_GPU_COUNT", "2"))


def _visible():
    n = _physical_count()
    vis = _os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is None:
        return list(range(n))
    out = []
    # The runtime stops at the first entry that is not a valid device.
    for part in vis.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= n or int(part) in out:
            break
        out.append(int(part))
    return out


def _index(dev):
    if dev is None:
        return 0
    if isinstance(dev, int):
        return dev
    idx = getattr(dev, "index", None)
    if idx is not None:
        return idx
    if isinstance(dev, str) and ":" in dev:
        return int(dev.split(":", 1)[1])
    return 0


def _check(dev):
    i = _index(dev)
    if not 0 <= i < len(_visible()):
        raise RuntimeError("CUDA error: invalid device ordinal")
    return i


def _total_bytes():
    return int(_os.environ.get("SGLANG_LAB_GPU_MEMORY_MIB", "49140")) * 1024 * 1024


def is_available():
    return len(_visible()) > 0


def device_count():
    return len(_visible())


def _get_nvml_device_index(dev):
    # torch's private map from a torch ordinal to the NVML index.
    return _visible()[_check(dev)]


def is_initialized():
    return False


def current_device():
    return 0


def set_device(dev):
    _check(dev)


def get_device_capability(dev=None):
    _check(dev)
    major, minor = _os.environ.get("SGLANG_LAB_GPU_CAPABILITY", "8.6").split(".")
    return (int(major), int(minor))


def get_device_name(dev=None):
    _check(dev)
    return _os.environ.get("SGLANG_LAB_GPU_NAME", "NVIDIA RTX A6000")


class _DeviceProperties:
    def __init__(self, i):
        self.name = get_device_name(i)
        self.major, self.minor = get_device_capability(i)
        self.total_memory = _total_bytes()
        self.multi_processor_count = int(_os.environ.get("SGLANG_LAB_GPU_SM_COUNT", "84"))
        self.is_integrated = False
        self.is_multi_gpu_board = False
        self.warp_size = 32
        self.gcnArchName = "NVIDIA"
        self.L2_cache_size = 6 * 1024 * 1024

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(dev=None):
    return _DeviceProperties(_check(dev))


def mem_get_info(dev=None):
    _check(dev)
    total = _total_bytes()
    used = int(_os.environ.get("SGLANG_LAB_GPU_USED_MIB", "0")) * 1024 * 1024
    return (total - used, total)


def is_bf16_supported(including_emulation=True):
    return get_device_capability()[0] >= 8


def memory_allocated(dev=None):
    return 0


def memory_reserved(dev=None):
    return 0


def max_memory_allocated(dev=None):
    return 0


def synchronize(dev=None):
    pass


def empty_cache():
    pass


class device:
    def __init__(self, dev):
        self.idx = _index(dev)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_stub.make_permissive(__name__)
