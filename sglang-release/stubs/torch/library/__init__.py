import _sglang_lab_stub as _stub


class Library:
    def __init__(self, *args, **kwargs):
        pass

    def define(self, *args, **kwargs):
        pass

    def impl(self, *args, **kwargs):
        return lambda fn: fn

    def _register_fake(self, *args, **kwargs):
        pass


def infer_schema(fn, *args, **kwargs):
    # Real torch derives it from the annotations; the schema is never used here.
    return "(...) -> ()"


def custom_op(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def register_fake(*args, **kwargs):
    return lambda fn: fn


_stub.make_permissive(__name__)
