"""headgrad.nn: modules with PyTorch's names, and the base for modules written in Python.

The layers and models are C++ modules (headgrad::nn); a Python subclass of Module works as
in PyTorch: assigning a Parameter or a Module to an attribute registers it, so
named_parameters(), state_dict(), load_state_dict(), train()/eval(), to() and the
optimizers see C++ and Python parts alike. Assigning a HookPoint registers a hook point
(TransformerLens's): Hooks, Capture, run_with_cache and patching see it as
"<module path>.<attribute>".

    class Probe(headgrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = headgrad.nn.MultiheadAttention(16, 4, batch_first=True)
            self.scale = headgrad.nn.Parameter(headgrad.ones(16))

        def forward(self, x):
            return self.attn(x * self.scale, x, x)[0]
"""
import copy as _copy

from .. import _headgrad
from .._headgrad import Tensor
from .._headgrad.nn import (  # noqa: F401
    GELU, GPT, MLP, AttentionHead, AttentionLayer, Dropout, Embedding, EncoderClassifier,
    EncoderDecoder, FusionClassifier, HeadwiseMultiheadAttention, HookPoint, LayerNorm, Linear,
    Module, MultiheadAttention,
    ReLU, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer, UnaryModule,
)
from . import functional, utils  # noqa: F401


class Parameter(Tensor):
    """A leaf tensor that a Module registers when assigned to one of its attributes
    (torch.nn.Parameter). It shares memory with `data`."""

    def __init__(self, data=None, requires_grad=True):
        """A parameter over `data`.

        Args:
            data (Tensor, numpy.ndarray, list or None): the values; a Tensor's (or a
                shareable array's) storage is shared, detached from any graph. Default None:
                an empty tensor (0,).
            requires_grad (bool): default True.
        """
        if data is None:
            data = _headgrad.empty(0)
        source = data if isinstance(data, Tensor) else _headgrad.tensor(data)
        Tensor.__init__(self, source.detach())
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            new = Parameter(Tensor.__deepcopy__(self, {}), self.requires_grad)
            if self.grad is not None:
                new.grad = Tensor.__deepcopy__(self.grad, {})
            memo[id(self)] = new
        return memo[id(self)]


# --- what Module gains in Python ----------------------------------------------------------
_native_init = Module.__init__


def _module_init(self, *args, **kwargs):
    """Initializes a module written in Python (torch.nn.Module.__init__).

    Call super().__init__() before assigning parameters, submodules or hook points. The
    module's type_name (in repr() and errors) is its class's name. Arguments are ignored.
    """
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
        elif isinstance(value, HookPoint):
            self.add_hook_point(name, value)
    object.__setattr__(self, name, value)


def _module_call(self, *args, **kwargs):
    return self.forward(*args, **kwargs)


def _module_getattr(self, name):
    # Parts registered by name only (register_buffer, register_parameter, add_module) read
    # as attributes, as in torch. Called only when ordinary lookup fails.
    if not name.startswith("__"):
        try:
            for listing in (self.named_buffers, self.named_parameters):
                for n, t in listing(recurse=False):
                    if n == name:
                        return t
            for n, m in self.named_children():
                if n == name:
                    return m
        except TypeError:  # not initialised yet (__init__ has not reached Module.__init__)
            pass
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _module_deepcopy(self, memo):
    """copy.deepcopy(module), as torch's: a module of its own with copies of the parameters
    (values, requires_grad, grad), buffers and training modes, sharing nothing with the
    original. A C++ module is rebuilt from its options (Module._clone); a module written in
    Python is rebuilt attribute by attribute, its parts deep-copied in turn."""
    if id(self) in memo:
        return memo[id(self)]
    if not getattr(type(self), "_python_module", False):
        memo[id(self)] = new = self._clone()
        return new
    cls = type(self)
    new = cls.__new__(cls)
    memo[id(self)] = new
    _native_init(new, cls.__name__)
    new.train(self.training)  # its own mode; the submodules bring theirs
    for name, value in self.__dict__.items():
        setattr(new, name, _copy.deepcopy(value, memo))
    # Tensors registered without an attribute (register_parameter, register_buffer).
    have = {n for n, _ in new.named_parameters(recurse=False)}
    for n, p in self.named_parameters(recurse=False):
        if n not in have:
            new.register_parameter(n, _copy.deepcopy(p, memo), p.requires_grad)
    have = {n for n, _ in new.named_buffers(recurse=False)}
    for n, b in self.named_buffers(recurse=False):
        if n not in have:
            new.register_buffer(n, _copy.deepcopy(b, memo))
    have = {n for n, _ in new.hook_points()}
    for n, p in self.hook_points():
        if n not in have:
            new.add_hook_point(n, _copy.deepcopy(p, memo))
    return new


Module.__init__ = _module_init
Module.__init_subclass__ = classmethod(_module_init_subclass)
Module.__setattr__ = _module_setattr
Module.__call__ = _module_call
Module.__deepcopy__ = _module_deepcopy
Module.__getattr__ = _module_getattr
Module._python_module = False


class ModuleList(Module):
    """A list of modules registered as "0", "1", ... (torch.nn.ModuleList)."""

    def __init__(self, modules=()):
        """A list of the given modules.

        Args:
            modules (iterable of Module): registered as "0", "1", ... in order. Default ().
        """
        super().__init__()
        self._items = []
        for module in modules:
            self.append(module)

    def append(self, module):
        """Registers a module under the next index (torch.nn.ModuleList.append).

        Args:
            module (Module).

        Returns:
            ModuleList: this list.
        """
        setattr(self, str(len(self._items)), module)
        self._items.append(module)
        return self

    def extend(self, modules):
        """Appends each module in turn (torch.nn.ModuleList.extend).

        Args:
            modules (iterable of Module).

        Returns:
            ModuleList: this list.
        """
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
        """Modules applied in the order given.

        Args:
            *modules (Module): each takes the previous one's output.
        """
        super().__init__(modules)

    def forward(self, x):
        """Applies the modules in turn.

        Args:
            x (Tensor): the first module's input.

        Returns:
            Tensor: the last module's output (x itself when there are none).
        """
        for module in self._items:
            x = module(x)
        return x
