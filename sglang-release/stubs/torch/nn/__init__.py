import _sglang_lab_stub as _stub


class Module(_stub._subclassable("torch.nn.Module")):
    # Methods that transformers wraps (functools.wraps) at class definition.
    def cuda(self, *args, **kwargs):
        return self

    def to(self, *args, **kwargs):
        return self

    def half(self, *args, **kwargs):
        return self

    def float(self, *args, **kwargs):
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("lab stub: no tensors here")


class Parameter(_stub._subclassable("torch.nn.Parameter")):
    pass


_stub.make_permissive(__name__)
