import _sglang_lab_stub as _stub


class _DecoratorContextManager:
    def __call__(self, fn):
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def clone(self):
        return self.__class__()


_stub.make_permissive(__name__)
