"""headgrad: reverse-mode autograd for attention research, from Python.

A thin layer over the C++ library (headgrad._headgrad, built with pybind11): tensors share
memory with NumPy, autograd, modules and optimizers follow PyTorch's names, and the
inspection tools (per-head captures, hook points, patching, ablation) and the
heads_compare study are one import away. See docs/python.md.

    import headgrad as hg
    x = hg.randn(4, 8, requires_grad=True)
    (x * x).sum().backward()
    x.grad.numpy()
"""
import sys as _sys

from . import _headgrad

# The extension's submodules, importable by name (from headgrad._headgrad.nn import ...).
for _name in ("autograd", "cuda", "functional", "inspect", "nn", "optim", "train"):
    _sys.modules[__name__ + "._headgrad." + _name] = getattr(_headgrad, _name)
from ._headgrad import (  # noqa: F401  (the public names)
    AutogradError, Device, DeviceError, DTypeError, Error, Generator, IOError, IndexError,
    MemoryError, OverflowError, RemovableHandle, ShapeError, Tensor, ValueError, abs, add, amax,
    arange, argmax, as_tensor, cat, causal_mask, chunk, clamp, concat, cuda_device_count,
    cuda_is_available, div, dtype, empty, empty_like, eq, exp, flatten, from_numpy, full, full_like,
    ge, get_num_threads, gt, index_put, index_select, is_grad_enabled, le, log, log_softmax,
    logical_not, lt, manual_seed, masked_fill, matmul, maximum, mean, minimum, mul, narrow, ne, neg,
    ones, ones_like, permute, pow, rand, randint, randn, relu, reshape, rsqrt, select,
    set_num_threads, sigmoid, softmax, split, sqrt, squeeze, stack, sub, sum, sum_to, tanh, tensor,
    transpose, unsqueeze, var, where, zeros, zeros_like,
)
from ._headgrad import bool, double, float, float32, float64, int64, long  # noqa: F401,A004
from ._grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401
from . import _copying

_copying.install(Tensor)  # copy.deepcopy and pickle, as torch's
from . import autograd, cuda, inspect, nn, optim, study, train  # noqa: F401
from .train import load, save  # noqa: F401

__version__ = "0.1.0"


def device(spec):
    """A device, as torch.device: headgrad.device('cuda:0').

    Args:
        spec (str or Device): 'cpu', 'cuda' (GPU 0) or 'cuda:N'.

    Returns:
        headgrad.Device.
    """
    return Device(spec)
