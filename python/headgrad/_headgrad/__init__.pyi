"""Type stubs of headgrad._headgrad (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

from . import autograd, cuda, functional, inspect, nn, optim, train


class AutogradError(Error, builtins.RuntimeError):
    """Autograd misuse (an in-place write to a tensor that requires grad, a second backward through a freed graph); also a RuntimeError."""

class DTypeError(Error, builtins.TypeError):
    """A dtype an op does not take, mixed dtypes, or a NumPy dtype headgrad cannot hold; also a TypeError."""

class Device:
    """Where a tensor lives: Device('cpu'), Device('cuda:0')"""
    def __init__(self: Device, device: object) -> None: """A device, as torch.device."""
    @property
    def index(self) -> object: ...
    @property
    def type(self) -> str: ...

class DeviceError(Error, builtins.RuntimeError):
    """No GPU, or tensors on two devices; also a RuntimeError."""

class Error(builtins.RuntimeError):
    """The base of headgrad's errors, with the C++ library's message; also a RuntimeError."""

class Generator:
    """A seedable random number generator (torch.Generator)"""
    def __init__(self: Generator, seed: int = ...) -> None: """A random number generator (torch.Generator)."""
    def initial_seed(self: Generator) -> int: """The seed the generator was last seeded with."""
    def manual_seed(self: Generator, seed: int) -> Generator: """Reseeds the generator."""

class IOError(Error, builtins.OSError):
    """Checkpoints and files (a missing or malformed .npz); also an OSError."""

class IndexError(Error, builtins.IndexError):
    """An index out of range, or an unknown name (a hook point, a parameter); also an IndexError."""

class MemoryError(Error, builtins.MemoryError):
    """A tensor larger than the memory available; also a MemoryError."""

class OverflowError(Error, builtins.OverflowError):
    """A Python int beyond int64 where an int64 is stored (a size, hg.tensor([2**63])); also an OverflowError."""

class RemovableHandle:
    """What Tensor.register_hook returns (torch's RemovableHandle)."""
    @property
    def id(self) -> int: ...
    def remove(self: RemovableHandle) -> None: """Unregisters the hook; a second call does nothing."""

class ShapeError(Error, builtins.ValueError):
    """Shapes that do not fit (matmul, view, a hook's replacement); also a ValueError."""

class Tensor:
    """An n-d array with a dtype, a device and autograd (headgrad::Tensor)"""
    @property
    def T(self) -> Tensor: ...
    def __getitem__(self: Tensor, arg0: object) -> Tensor: ...
    def __init__(self: Tensor, data: object) -> None: """A tensor over `data` (as headgrad.as_tensor without a dtype)."""
    def __iter__(self: Tensor) -> Iterator: ...
    def __len__(self: Tensor) -> int: ...
    def __setitem__(self: Tensor, arg0: object, arg1: object) -> None: ...
    def abs(self: Tensor) -> Tensor: """|self|, elementwise (gradient sign(x), 0 at 0)."""
    def add(self: Tensor, other: object, *, alpha: builtins.float = ...) -> Tensor: """self + alpha * other, broadcasting (torch.Tensor.add)."""
    def add_(self: Tensor, other: object, alpha: builtins.float = ...) -> Tensor: """self += alpha * other, in place (not recorded in the graph)."""
    def amax(self: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The maximum over dimensions (torch.Tensor.amax); ties share the gradient."""
    def argmax(self: Tensor, dim: Optional[int] = ..., keepdim: builtins.bool = ...) -> Tensor: """The index of the first maximum (torch.Tensor.argmax; not differentiable)."""
    def backward(self: Tensor, gradient: Optional[object] = ..., retain_graph: builtins.bool = ...) -> None: """Backpropagates from this tensor into the leaves' .grad (torch.Tensor.backward)."""
    def bool(self: Tensor) -> Tensor: """This tensor as bool: to(headgrad.bool)."""
    def chunk(self: Tensor, chunks: int, dim: int = ...) -> List[Tensor]: """`chunks` pieces along a dimension (torch.Tensor.chunk); copies."""
    def clamp(self: Tensor, min: Optional[builtins.float] = ..., max: Optional[builtins.float] = ...) -> Tensor: """Each element limited to [min, max] (torch.Tensor.clamp); gradient 1 inside, 0 outside."""
    def clone(self: Tensor) -> Tensor: """A copy in new storage, differentiable (torch.Tensor.clone)."""
    def contiguous(self: Tensor) -> Tensor: """This tensor: storage is always contiguous (torch.Tensor.contiguous)."""
    def copy_(self: Tensor, src: object) -> Tensor: """Copies values into the tensor, in place (not recorded in the graph)."""
    def cpu(self: Tensor) -> Tensor: """This tensor on the CPU (torch.Tensor.cpu)."""
    def cuda(self: Tensor, device: int = ...) -> Tensor: """This tensor on a GPU (torch.Tensor.cuda)."""
    def detach(self: Tensor) -> Tensor: """The same data outside the graph (torch.Tensor.detach)."""
    @property
    def device(self) -> Device: ...
    def dim(self: Tensor) -> int: """The number of dimensions (torch.Tensor.dim)."""
    def div(self: Tensor, other: object) -> Tensor: """self / other, elementwise and broadcasting (torch.Tensor.div)."""
    def double(self: Tensor) -> Tensor: """This tensor as float64: to(headgrad.float64)."""
    @property
    def dtype(self) -> dtype: ...
    def element_size(self: Tensor) -> int: """The size of one element in bytes."""
    def eq(self: Tensor, other: object) -> Tensor: """self == other, elementwise and broadcasting (not differentiable)."""
    def exp(self: Tensor) -> Tensor: """e ** self, elementwise."""
    def expand(self: Tensor, *args) -> Tensor: """Broadcasts to a larger shape (torch.Tensor.expand); a copy, not a view."""
    def fill_(self: Tensor, value: object) -> Tensor: """Fills the tensor with one value, in place (not recorded in the graph)."""
    def flatten(self: Tensor, start_dim: int = ..., end_dim: int = ...) -> Tensor: """Dimensions start_dim .. end_dim merged into one (torch.Tensor.flatten)."""
    def float(self: Tensor) -> Tensor: """This tensor as float32: to(headgrad.float32)."""
    def ge(self: Tensor, other: object) -> Tensor: """self >= other, elementwise and broadcasting (not differentiable)."""
    def gelu(self: Tensor, *, approximate: str = ...) -> Tensor: """GELU, elementwise (torch.nn.functional.gelu)."""
    @property
    def grad(self) -> object: ...
    @property
    def grad_fn(self) -> object: ...
    def gt(self: Tensor, other: object) -> Tensor: """self > other, elementwise and broadcasting (not differentiable)."""
    def index_put_(self: Tensor, indices: tuple, values: object, accumulate: builtins.bool = ...) -> Tensor: """self[indices] = values, or += with accumulate, in place (torch.Tensor.index_put_)."""
    def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor: """Entries along a dimension picked by an index tensor (torch.Tensor.index_select)."""
    def is_contiguous(self: Tensor) -> builtins.bool: """Whether the storage is contiguous: always True here."""
    @property
    def is_cuda(self) -> builtins.bool: ...
    def is_floating_point(self: Tensor) -> builtins.bool: """Whether the dtype is float32 or float64."""
    @property
    def is_leaf(self) -> builtins.bool: ...
    def item(self: Tensor) -> object: """The value of a one-element tensor (torch.Tensor.item)."""
    def le(self: Tensor, other: object) -> Tensor: """self <= other, elementwise and broadcasting (not differentiable)."""
    def log(self: Tensor) -> Tensor: """The natural logarithm, elementwise."""
    def log_softmax(self: Tensor, dim: int) -> Tensor: """log(softmax(self, dim)), computed stably (torch.Tensor.log_softmax)."""
    def logical_not(self: Tensor) -> Tensor: """Elementwise not of a bool tensor."""
    def long(self: Tensor) -> Tensor: """This tensor as int64: to(headgrad.int64)."""
    def lt(self: Tensor, other: object) -> Tensor: """self < other, elementwise and broadcasting (not differentiable)."""
    @property
    def mT(self) -> Tensor: ...
    def masked_fill(self: Tensor, mask: Tensor, value: builtins.float) -> Tensor: """value where mask is True, self elsewhere (torch.Tensor.masked_fill)."""
    def matmul(self: Tensor, other: Tensor) -> Tensor: """The matrix product self @ other, with torch.matmul's rules."""
    def max(self: Tensor, dim: Optional[int] = ..., keepdim: builtins.bool = ...) -> object: """The maximum (torch.Tensor.max)."""
    def mean(self: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The mean over dimensions (torch.Tensor.mean); floating tensors."""
    def mul(self: Tensor, other: object) -> Tensor: """self * other, elementwise and broadcasting (torch.Tensor.mul)."""
    def mul_(self: Tensor, other: builtins.float) -> Tensor: """self *= other, in place (not recorded in the graph)."""
    @property
    def name(self) -> str: ...
    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor: """A contiguous range along one dimension (torch.Tensor.narrow); a copy."""
    @property
    def ndim(self) -> int: ...
    def ne(self: Tensor, other: object) -> Tensor: """self != other, elementwise and broadcasting (not differentiable)."""
    def neg(self: Tensor) -> Tensor: """-self, elementwise."""
    def numel(self: Tensor) -> int: """The number of elements: the product of the shape."""
    def numpy(self: Tensor) -> numpy.ndarray: """A NumPy array sharing this CPU tensor's memory (torch.Tensor.numpy)."""
    def permute(self: Tensor, *args) -> Tensor: """The dimensions reordered (torch.Tensor.permute); a copy."""
    def pow(self: Tensor, exponent: object) -> Tensor: """self ** exponent, elementwise."""
    def register_hook(self: Tensor, hook: function) -> RemovableHandle: """Registers a hook on this tensor's gradient (torch.Tensor.register_hook)."""
    def register_post_accumulate_grad_hook(self: Tensor, hook: function) -> RemovableHandle: """Registers a hook run after backward accumulates into this leaf's .grad."""
    def relu(self: Tensor) -> Tensor: """max(self, 0), elementwise (gradient 0 at 0, as PyTorch)."""
    @property
    def requires_grad(self) -> builtins.bool: ...
    def requires_grad_(self: Tensor, requires_grad: builtins.bool = ...) -> Tensor: """Sets requires_grad in place (torch.Tensor.requires_grad_)."""
    def reshape(self: Tensor, *args) -> Tensor: """The same elements in another shape (torch.Tensor.reshape)."""
    def retain_grad(self: Tensor) -> None: """Makes backward keep this non-leaf tensor's gradient in .grad (torch.Tensor.retain_grad)."""
    @property
    def retains_grad(self) -> builtins.bool: ...
    def rsqrt(self: Tensor) -> Tensor: """1 / sqrt(self), elementwise."""
    def select(self: Tensor, dim: int, index: int) -> Tensor: """One index of one dimension, that dimension removed (torch.Tensor.select); a copy."""
    @property
    def shape(self) -> tuple: ...
    def sigmoid(self: Tensor) -> Tensor: """1 / (1 + exp(-self)), elementwise."""
    def size(self: Tensor, dim: Optional[int] = ...) -> object: """The shape, or one dimension's size (torch.Tensor.size)."""
    def softmax(self: Tensor, dim: int) -> Tensor: """Softmax along a dimension (torch.Tensor.softmax)."""
    def split(self: Tensor, split_size_or_sections: object, dim: int = ...) -> List[Tensor]: """Pieces along a dimension (torch.Tensor.split); copies."""
    def sqrt(self: Tensor) -> Tensor: """The square root, elementwise."""
    def squeeze(self: Tensor, dim: Optional[int] = ...) -> Tensor: """Dimensions of size 1 removed (torch.Tensor.squeeze)."""
    def sub(self: Tensor, other: object, *, alpha: builtins.float = ...) -> Tensor: """self - alpha * other, broadcasting (torch.Tensor.sub)."""
    def sum(self: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The sum over dimensions (torch.Tensor.sum)."""
    def t(self: Tensor) -> Tensor: """The transpose of a 2-d tensor (torch.Tensor.t); a copy."""
    def tanh(self: Tensor) -> Tensor: """The hyperbolic tangent, elementwise."""
    def to(self: Tensor, target: object = ..., dtype: object = ...) -> Tensor: """This tensor with another dtype and/or device (torch.Tensor.to)."""
    def tolist(self: Tensor) -> object: """The values as nested Python lists (torch.Tensor.tolist)."""
    def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor: """Two dimensions swapped (torch.Tensor.transpose); a copy."""
    def unsqueeze(self: Tensor, dim: int) -> Tensor: """A dimension of size 1 inserted (torch.Tensor.unsqueeze)."""
    def var(self: Tensor, dim: object = ..., unbiased: builtins.bool = ..., keepdim: builtins.bool = ..., *, correction: Optional[int] = ...) -> Tensor: """The variance over dimensions (torch.Tensor.var)."""
    def view(self: Tensor, *args) -> Tensor: """The same elements in another shape (torch.Tensor.view); the same op as reshape."""
    def zero_(self: Tensor) -> Tensor: """Fills the tensor with zeros, in place (not recorded in the graph)."""
    def zero_grad(self: Tensor) -> None: """Drops the gradient: sets .grad to None."""

class ValueError(Error, builtins.ValueError):
    """A bad argument (an unknown task, a bad option); also a ValueError."""

def abs(input: Tensor) -> Tensor: """|input|, elementwise (torch.abs); gradient sign(x), 0 at 0."""

def add(input: Tensor, other: object, *, alpha: builtins.float = ...) -> Tensor: """input + alpha * other, broadcasting (torch.add)."""

def amax(input: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The maximum over dimensions (torch.amax); ties share the gradient."""

def arange(start: object, end: object = ..., step: object = ..., *, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """start, start + step, ... below end (torch.arange); arange(end) starts at 0."""

def argmax(input: Tensor, dim: int, keepdim: builtins.bool = ...) -> Tensor: """The index of the first maximum along a dimension (torch.argmax; not differentiable)."""

def as_tensor(data: object, dtype: object = ...) -> Tensor: """A tensor over `data`'s memory where it can (torch.as_tensor)."""
bool: dtype

def cat(tensors: List[Tensor], dim: int = ...) -> Tensor: """Tensors joined along an existing dimension (torch.cat)."""

def causal_mask(size: int, source_len: Optional[int] = ...) -> Tensor: """The causal attention mask, PyTorch's attn_mask convention (True = blocked)."""

def chunk(input: Tensor, chunks: int, dim: int = ...) -> List[Tensor]: """`chunks` pieces along a dimension (torch.chunk); copies."""

def clamp(input: Tensor, min: Optional[builtins.float] = ..., max: Optional[builtins.float] = ...) -> Tensor: """Each element limited to [min, max] (torch.clamp); gradient 1 inside, 0 outside."""

def concat(tensors: List[Tensor], dim: int = ...) -> Tensor: """Tensors joined along an existing dimension (torch.concat, = cat)."""

def cuda_device_count() -> int: """The number of usable GPUs (headgrad.cuda.device_count)."""

def cuda_is_available() -> builtins.bool: """Whether a GPU can be used (the CUDA backend loads and a device is there)."""

def div(input: Tensor, other: object) -> Tensor: """div(input, other): input / other, elementwise and broadcasting (torch.div)."""
double: dtype

class dtype:
    """A tensor's element type"""
    def __init__(self: dtype, value: int) -> None: ...
    bool: Any
    float32: Any
    float64: Any
    int64: Any
    @property
    def is_floating_point(self) -> builtins.bool: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

def empty(*args, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """An uninitialized tensor (torch.empty): its values are arbitrary."""

def empty_like(input: Tensor) -> Tensor: """An uninitialized tensor of another tensor's shape, dtype and device (torch.empty_like)."""

def eq(input: Tensor, other: object) -> Tensor: """eq(input, other): input == other, elementwise and broadcasting (not differentiable)."""

def exp(input: Tensor) -> Tensor: """e ** input, elementwise (torch.exp)."""

def flatten(input: Tensor, start_dim: int = ..., end_dim: int = ...) -> Tensor: """Dimensions start_dim .. end_dim merged into one (torch.flatten)."""
float: dtype
float32: dtype
float64: dtype

def from_numpy(array: numpy.ndarray) -> Tensor: """A tensor over a NumPy array's memory (torch.from_numpy)."""

def full(size: object, fill_value: object, *, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """A tensor filled with one value (torch.full)."""

def full_like(input: Tensor, fill_value: object) -> Tensor: """A tensor of another's shape, dtype and device, filled with one value (torch.full_like)."""

def ge(input: Tensor, other: object) -> Tensor: """ge(input, other): input >= other, elementwise and broadcasting (not differentiable)."""

def get_num_threads() -> int: """The number of threads an op uses (torch.get_num_threads)."""

def gt(input: Tensor, other: object) -> Tensor: """gt(input, other): input > other, elementwise and broadcasting (not differentiable)."""

def index_put(input: Tensor, indices: tuple, values: object, accumulate: builtins.bool = ...) -> Tensor: """A copy of input with values written (or added) at input[indices] (torch.index_put)."""

def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor: """Entries along a dimension picked by an index tensor (torch.index_select)."""
int64: dtype

def is_grad_enabled() -> builtins.bool: """Whether ops record the autograd graph on this thread (torch.is_grad_enabled)."""

def le(input: Tensor, other: object) -> Tensor: """le(input, other): input <= other, elementwise and broadcasting (not differentiable)."""

def log(input: Tensor) -> Tensor: """The natural logarithm, elementwise (torch.log)."""

def log_softmax(input: Tensor, dim: int, *, safe: builtins.bool = ...) -> Tensor: """log(softmax(input, dim)), computed stably (torch.log_softmax)."""

def logical_not(input: Tensor) -> Tensor: """Elementwise not (torch.logical_not)."""
long: dtype

def lt(input: Tensor, other: object) -> Tensor: """lt(input, other): input < other, elementwise and broadcasting (not differentiable)."""

def manual_seed(seed: int) -> None: """Reseeds the default generator (torch.manual_seed)."""

def masked_fill(input: Tensor, mask: Tensor, value: builtins.float) -> Tensor: """value where mask is True, input elsewhere (torch.masked_fill)."""

def matmul(input: Tensor, other: Tensor) -> Tensor: """The matrix product (torch.matmul): 1-d operands are vectors, batch dimensions broadcast."""

def maximum(input: Tensor, other: Tensor) -> Tensor: """maximum(input, other): the elementwise maximum, broadcasting (torch.maximum)."""

def mean(input: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The mean over dimensions (torch.mean); floating inputs."""

def minimum(input: Tensor, other: Tensor) -> Tensor: """minimum(input, other): the elementwise minimum, broadcasting (torch.minimum)."""

def mul(input: Tensor, other: object) -> Tensor: """mul(input, other): input * other, elementwise and broadcasting (torch.mul)."""

def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor: """A contiguous range along one dimension (torch.narrow); a copy."""

def ne(input: Tensor, other: object) -> Tensor: """ne(input, other): input != other, elementwise and broadcasting (not differentiable)."""

def neg(input: Tensor) -> Tensor: """-input, elementwise (torch.neg)."""

def ones(*args, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """A tensor of ones (torch.ones)."""

def ones_like(input: Tensor) -> Tensor: """Ones of another tensor's shape, dtype and device (torch.ones_like)."""

def permute(input: Tensor, dims: object) -> Tensor: """permute(input, dims): the dimensions reordered (torch.permute); a copy."""

def pow(input: object, exponent: object) -> Tensor: """pow(input, exponent): input ** exponent, elementwise and broadcasting (torch.pow)."""

def rand(*args: Any, **kwargs: Any) -> Any: """Uniform random numbers in [0, 1) (torch.rand)."""

def randint(*args: Any, **kwargs: Any) -> Any: """Uniform random integers in [low, high) (torch.randint)."""

def randn(*args: Any, **kwargs: Any) -> Any: """Standard normal random numbers (torch.randn)."""

def relu(input: Tensor) -> Tensor: """max(input, 0), elementwise (torch.relu); gradient 0 at 0."""

def reshape(input: Tensor, shape: object) -> Tensor: """reshape(input, shape): the same elements in another shape (torch.reshape)."""

def rsqrt(input: Tensor) -> Tensor: """1 / sqrt(input), elementwise (torch.rsqrt)."""

def select(input: Tensor, dim: int, index: int) -> Tensor: """One index of one dimension, that dimension removed (torch.select); a copy."""

def set_num_threads(n: int) -> None: """Sets the number of threads an op uses (torch.set_num_threads), for the whole process."""

def sigmoid(input: Tensor) -> Tensor: """1 / (1 + exp(-input)), elementwise (torch.sigmoid)."""

def softmax(input: Tensor, dim: int, *, safe: builtins.bool = ...) -> Tensor: """Softmax along a dimension (torch.softmax)."""

def split(tensor: Tensor, split_size_or_sections: object, dim: int = ...) -> List[Tensor]: """Pieces along a dimension (torch.split); copies."""

def sqrt(input: Tensor) -> Tensor: """The square root, elementwise (torch.sqrt)."""

def squeeze(input: Tensor, dim: Optional[int] = ...) -> Tensor: """Dimensions of size 1 removed (torch.squeeze)."""

def stack(tensors: List[Tensor], dim: int = ...) -> Tensor: """Tensors of one shape joined along a new dimension (torch.stack)."""

def sub(input: Tensor, other: object, *, alpha: builtins.float = ...) -> Tensor: """input - alpha * other, broadcasting (torch.sub)."""

def sum(input: Tensor, dim: object = ..., keepdim: builtins.bool = ...) -> Tensor: """The sum over dimensions (torch.sum)."""

def sum_to(input: Tensor, shape: List[int]) -> Tensor: """Sums input down to `shape`: the gradient of broadcasting (differentiable)."""

def tanh(input: Tensor) -> Tensor: """The hyperbolic tangent, elementwise (torch.tanh)."""

def tensor(data: object, *, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """A new tensor holding a copy of `data` (torch.tensor)."""

def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor: """Two dimensions swapped (torch.transpose); a copy."""

def unsqueeze(input: Tensor, dim: int) -> Tensor: """A dimension of size 1 inserted (torch.unsqueeze)."""

def var(input: Tensor, dim: object = ..., unbiased: builtins.bool = ..., keepdim: builtins.bool = ...) -> Tensor: """The variance over dimensions (torch.var)."""

def where(condition: Tensor, input: object, other: object) -> Tensor: """input where condition is True, other elsewhere (torch.where)."""

def zeros(*args, dtype: object = ..., device: object = ..., requires_grad: builtins.bool = ...) -> Tensor: """A tensor of zeros (torch.zeros)."""

def zeros_like(input: Tensor) -> Tensor: """Zeros of another tensor's shape, dtype and device (torch.zeros_like)."""
