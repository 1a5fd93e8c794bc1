"""torch.version: the release's pinned torch and the lab's CUDA."""

import os as _os

import _sglang_lab_stub as _stub


class TorchVersion(str):
    """Compares as a version, like torch's own TorchVersion."""

    def _cmp(self, other):
        from packaging.version import Version

        if isinstance(other, tuple):
            other = ".".join(str(x) for x in other)
        return Version(self.split("+")[0]), Version(str(other).split("+")[0])

    def __lt__(self, other):
        a, b = self._cmp(other)
        return a < b

    def __le__(self, other):
        a, b = self._cmp(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._cmp(other)
        return a > b

    def __ge__(self, other):
        a, b = self._cmp(other)
        return a >= b

    __hash__ = str.__hash__


__version__ = TorchVersion(_stub.dist_version("torch", "2.11.0"))
cuda = _os.environ.get("SGLANG_LAB_CUDA_VERSION", "12.8") or None
hip = None
git_version = "0000000000000000000000000000000000000000"
debug = False
