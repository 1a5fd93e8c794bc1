"""torch.distributed before init_process_group (SGLang never gets that far here)."""
import _sglang_lab_stub as _stub


import enum as _enum


class ReduceOp(_enum.IntEnum):
    # c10d's values (torch/csrc/distributed/c10d/Types.hpp)
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


def is_available():
    return True


def is_initialized():
    return False


_stub.make_permissive(__name__)
