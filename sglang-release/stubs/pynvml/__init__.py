"""pynvml (nvidia-ml-py), stubbed: NVML answered from the lab's GPUs.

The device queries SGLang makes (count, handle, name, compute capability,
memory, driver version, UUID) answer from SGLANG_LAB_GPU_* like the torch
stub; NVML lists every GPU (it ignores CUDA_VISIBLE_DEVICES). Confidential
Computing reads as off (an Ampere card). Any other nvml* call raises
NVMLError_NotSupported, as NVML does for a query a device cannot answer.
"""

import ctypes as _ctypes
import os as _os

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_CC_SYSTEM_FEATURE_DISABLED = 0
NVML_CC_SYSTEM_FEATURE_ENABLED = 1
NVML_CC_SYSTEM_MULTIGPU_NONE = 0
NVML_CC_SYSTEM_MULTIGPU_PROTECTED_PCIE = 1

_MESSAGES = {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported"}


class NVMLError(Exception):
    def __new__(cls, value=NVML_ERROR_NOT_SUPPORTED):
        if cls is NVMLError and value in _SUBCLASSES:
            cls = _SUBCLASSES[value]
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __init__(self, value=NVML_ERROR_NOT_SUPPORTED):
        self.value = value

    def __str__(self):
        return _MESSAGES.get(self.value, f"Unknown Error {self.value}")


class NVMLError_Uninitialized(NVMLError):
    def __init__(self, value=NVML_ERROR_UNINITIALIZED):
        super().__init__(value)


class NVMLError_InvalidArgument(NVMLError):
    def __init__(self, value=NVML_ERROR_INVALID_ARGUMENT):
        super().__init__(value)


class NVMLError_NotSupported(NVMLError):
    def __init__(self, value=NVML_ERROR_NOT_SUPPORTED):
        super().__init__(value)


_SUBCLASSES = {1: NVMLError_Uninitialized, 2: NVMLError_InvalidArgument, 3: NVMLError_NotSupported}
_initialized = 0


def _count():
    return int(_os.environ.get("SGLANG_LAB_GPU_COUNT", "2"))


def _need_init():
    if _initialized <= 0:
        raise NVMLError_Uninitialized()


def _check_return(ret):
    if ret != NVML_SUCCESS:
        raise NVMLError(ret)
    return ret


_nvmlCheckReturn = _check_return


def nvmlInit():
    global _initialized
    _initialized += 1


nvmlInitWithFlags = lambda flags=0: nvmlInit()  # noqa: E731


def nvmlShutdown():
    global _initialized
    _need_init()
    _initialized -= 1


class _Handle:
    def __init__(self, index):
        self.index = index


def nvmlDeviceGetCount():
    _need_init()
    return _count()


def nvmlDeviceGetHandleByIndex(index):
    _need_init()
    if not 0 <= int(index) < _count():
        raise NVMLError_InvalidArgument()
    return _Handle(int(index))


def nvmlDeviceGetName(handle):
    return _os.environ.get("SGLANG_LAB_GPU_NAME", "NVIDIA RTX A6000")


def nvmlDeviceGetCudaComputeCapability(handle):
    major, minor = _os.environ.get("SGLANG_LAB_GPU_CAPABILITY", "8.6").split(".")
    return int(major), int(minor)


class c_nvmlMemory_t:
    def __init__(self, total):
        self.total, self.used, self.free = total, 0, total


def nvmlDeviceGetMemoryInfo(handle, version=None):
    return c_nvmlMemory_t(int(_os.environ.get("SGLANG_LAB_GPU_MEMORY_MIB", "49140")) * 1024 * 1024)


def nvmlDeviceGetUUID(handle):
    return f"GPU-00000000-0000-0000-0000-{handle.index:012d}"


def nvmlDeviceGetIndex(handle):
    return handle.index


def nvmlSystemGetDriverVersion():
    _need_init()
    return _os.environ.get("SGLANG_LAB_DRIVER_VERSION", "570.133.20")


def nvmlSystemGetCudaDriverVersion():
    _need_init()
    return 12080


class c_nvmlSystemConfComputeSettings_v1_t(_ctypes.Structure):
    _fields_ = [("version", _ctypes.c_uint), ("environment", _ctypes.c_uint), ("ccFeature", _ctypes.c_uint),
                ("devToolsMode", _ctypes.c_uint), ("multiGpuMode", _ctypes.c_uint)]


class c_nvmlConfComputeSystemState_t(_ctypes.Structure):
    _fields_ = [("environment", _ctypes.c_uint), ("ccFeature", _ctypes.c_uint), ("devToolsMode", _ctypes.c_uint)]


def nvmlSystemGetConfComputeSettings(settings):
    _need_init()
    raise NVMLError_NotSupported()  # Hopper and newer only


def nvmlSystemGetConfComputeState():
    _need_init()
    return c_nvmlConfComputeSystemState_t(0, NVML_CC_SYSTEM_FEATURE_DISABLED, 0)


def __getattr__(name):
    if name.startswith("nvml"):
        def not_supported(*args, **kwargs):
            _need_init()
            raise NVMLError_NotSupported()

        not_supported.__name__ = name
        return not_supported
    raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
