"""triton.runtime.driver.active for the lab GPU (a CUDA target, SGLANG_LAB_*)."""
import os as _os

import _sglang_lab_stub as _stub


class GPUTarget:
    def __init__(self, backend, arch, warp_size):
        self.backend, self.arch, self.warp_size = backend, arch, warp_size


class _Utils:
    def get_device_properties(self, device):
        import torch

        props = torch.cuda.get_device_properties(device)
        return {
            "max_shared_mem": 101376 if props.major == 8 and props.minor in (6, 9) else 166912,
            "multiprocessor_count": props.multi_processor_count,
            "sm_clock_rate": 1800000,
            "mem_clock_rate": 8001000,
            "mem_bus_width": 384,
        }


class _ActiveDriver:
    utils = _Utils()

    def get_current_target(self):
        import torch

        major, minor = torch.cuda.get_device_capability()
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_current_device(self):
        return 0

    def is_active(self):
        return _os.environ.get("SGLANG_LAB_GPU_COUNT", "2") != "0"


active = _ActiveDriver()

_stub.make_permissive(__name__)
