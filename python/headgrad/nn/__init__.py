"""headgrad.nn: modules with PyTorch's names, and the base for modules written in Python.

The layers and models are C++ modules (headgrad::nn); a Python subclass of Module works as
in PyTorch: assigning a Parameter or a Module to an attribute registers it, so
named_parameters(), state_dict(), load_state_dict(), train()/eval(), to() and the
optimizers see C++ and Python parts alike.

    class Probe(headgrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = headgrad.nn.MultiheadAttention(16, 4, batch_first=True)
            self.scale = headgrad.nn.Parameter(headgrad.ones(16))

        def forward(self, x):
            return self.attn(x * self.scale, x, x)[0]
"""
from .. import _headgrad
from .._headgrad import Tensor
from .._headgrad.nn import (  # noqa: F401
    GELU, GPT, MLP, AttentionHead, AttentionLayer, Dropout, Embedding, EncoderClassifier,
    EncoderDecoder, FusionClassifier, HeadwiseMultiheadAttention, LayerNorm, Linear, Module, MultiheadAttention,
    ReLU, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer, UnaryModule,
)
from . import functional, utils  # noqa: F401


class Parameter(Tensor):
    """A leaf tensor that a Module registers when assigned to one of its attributes
    (torch.nn.Parameter). It shares memory with `data`."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _headgrad.empty(0)
        source = data if isinstance(data, Tensor) else _headgrad.tensor(data)
        Tensor.__init__(self, source.detach())
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


# --- what Module gains in Python ----------------------------------------------------------
_native_init = Module.__init__


def _module_init(self, *args, **kwargs):
    # A Python subclass names itself in repr() and errors; C++ layers have their own __init__.
    _native_init(self, type(self).__name__)


def _module_init_subclass(cls, **kwargs):
    cls._python_module = True


def _module_setattr(self, name, value):
    if getattr(type(self), "_python_module", False) and not name.startswith("_"):
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
    object.__setattr__(self, name, value)


def _module_call(self, *args, **kwargs):
    return self.forward(*args, **kwargs)


Module.__init__ = _module_init
Module.__init_subclass__ = classmethod(_module_init_subclass)
Module.__setattr__ = _module_setattr
Module.__call__ = _module_call
Module._python_module = False


class ModuleList(Module):
    """A list of modules registered as "0", "1", ... (torch.nn.ModuleList)."""

    def __init__(self, modules=()):
        super().__init__()
        self._items = []
        for module in modules:
            self.append(module)

    def append(self, module):
        setattr(self, str(len(self._items)), module)
        self._items.append(module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)


class Sequential(ModuleList):
    """Modules applied in turn, registered as "0", "1", ... (torch.nn.Sequential)."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, x):
        for module in self._items:
            x = module(x)
        return x
