// The docstrings of core.cpp's bindings (headgrad.dtype, Device, Tensor, the factories,
// Generator, the thread count and headgrad.cuda): each a summary line, the arguments and the
// exact form of the result. Kept here so that the binding functions stay short.
#pragma once

namespace headgrad::python::docs {

// --- dtype and Device ------------------------------------------------------------------
constexpr const char* dtype_is_floating_point = R"doc(Whether the dtype is float32 or float64.

Returns:
    bool.)doc";

constexpr const char* dtype_itemsize = R"doc(The size of one element in bytes.

Returns:
    int: 4 (float32), 8 (float64, int64) or 1 (bool).)doc";

constexpr const char* device_init = R"doc(A device, as torch.device.

Args:
    device (str or Device): 'cpu', 'cuda' (GPU 0) or 'cuda:N'.)doc";

constexpr const char* device_type = R"doc(The kind of device.

Returns:
    str: 'cpu' or 'cuda'.)doc";

constexpr const char* device_index = R"doc(The GPU's number.

Returns:
    int for a GPU (0 for 'cuda'), None for the CPU.)doc";

// --- Tensor: metadata --------------------------------------------------------------------
constexpr const char* tensor_shape = R"doc(The sizes of the dimensions (torch.Tensor.shape).

Returns:
    tuple of int: one entry per dimension; () for a 0-d tensor.)doc";

constexpr const char* tensor_size = R"doc(The shape, or one dimension's size (torch.Tensor.size).

Args:
    dim (int, optional): a dimension; negative counts from the end. Default None.

Returns:
    tuple of int (the shape) when dim is None, else int.)doc";

constexpr const char* tensor_dim = R"doc(The number of dimensions (torch.Tensor.dim).

Returns:
    int: 0 for a 0-d tensor.)doc";

constexpr const char* tensor_ndim = R"doc(The number of dimensions, as dim().

Returns:
    int.)doc";

constexpr const char* tensor_numel = R"doc(The number of elements: the product of the shape.

Returns:
    int: 1 for a 0-d tensor.)doc";

constexpr const char* tensor_dtype = R"doc(The element type.

Returns:
    headgrad.dtype: float32, float64, int64 or bool.)doc";

constexpr const char* tensor_device = R"doc(Where the tensor's storage lives.

Returns:
    headgrad.Device ('cpu' or 'cuda:N').)doc";

constexpr const char* tensor_is_cuda = R"doc(Whether the tensor is on a GPU.

Returns:
    bool.)doc";

constexpr const char* tensor_is_floating_point = R"doc(Whether the dtype is float32 or float64.

Returns:
    bool.)doc";

constexpr const char* tensor_element_size = R"doc(The size of one element in bytes.

Returns:
    int: 4 (float32), 8 (float64, int64) or 1 (bool).)doc";

constexpr const char* tensor_name =
    R"doc(The tensor's name in error messages ('' by default); settable.

Returns:
    str.)doc";

// --- Tensor: autograd ----------------------------------------------------------------------
constexpr const char* tensor_requires_grad = R"doc(Whether autograd records ops on this tensor.

Settable on leaves (only floating tensors may require grad), as requires_grad_().

Returns:
    bool.)doc";

constexpr const char* tensor_requires_grad_ =
    R"doc(Sets requires_grad in place (torch.Tensor.requires_grad_).

Args:
    requires_grad (bool): default True. Only leaves may change it, and only floating
        tensors may require grad.

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_is_leaf =
    R"doc(Whether the tensor is a graph leaf: made by the user, not by a recorded op.

Returns:
    bool.)doc";

constexpr const char* tensor_grad =
    R"doc(The gradient accumulated by backward (torch.Tensor.grad); settable.

Returns:
    Tensor of this tensor's shape and dtype, or None (no backward yet, or a non-leaf
    without retain_grad()).)doc";

constexpr const char* tensor_retain_grad =
    R"doc(Makes backward keep this non-leaf tensor's gradient in .grad (torch.Tensor.retain_grad).

Returns:
    None.)doc";

constexpr const char* tensor_retains_grad = R"doc(Whether retain_grad() was called on this tensor.

Returns:
    bool.)doc";

constexpr const char* tensor_backward =
    R"doc(Backpropagates from this tensor into the leaves' .grad (torch.Tensor.backward).

Runs without the GIL.

Args:
    gradient (Tensor or number, optional): the gradient of this tensor, of its shape (a
        number is converted to its dtype and device). Required unless the tensor holds one
        element. Default None.
    retain_graph (bool): keep the graph for another backward. Default False.

Returns:
    None.)doc";

constexpr const char* tensor_detach = R"doc(The same data outside the graph (torch.Tensor.detach).

Returns:
    Tensor sharing this tensor's storage, with requires_grad False.)doc";

constexpr const char* tensor_clone =
    R"doc(A copy in new storage, differentiable (torch.Tensor.clone).

Returns:
    Tensor of the same shape, dtype and device.)doc";

constexpr const char* tensor_zero_grad = R"doc(Drops the gradient: sets .grad to None.

Returns:
    None.)doc";

// --- Tensor: conversions ------------------------------------------------------------------
constexpr const char* tensor_to =
    R"doc(This tensor with another dtype and/or device (torch.Tensor.to).

Args:
    target (optional): a headgrad.dtype or its name ('float64'), a Device or 'cpu' /
        'cuda' / 'cuda:N', or a Tensor (its dtype and device). Default None.
    dtype (headgrad.dtype or str, optional): a dtype, besides a device target. Default None.

Returns:
    Tensor of the same shape: a differentiable copy, or this tensor's own storage when the
    dtype and device already match.)doc";

constexpr const char* tensor_cpu = R"doc(This tensor on the CPU (torch.Tensor.cpu).

Returns:
    Tensor: a copy from a GPU, or this tensor's own storage when it is on the CPU.)doc";

constexpr const char* tensor_cuda = R"doc(This tensor on a GPU (torch.Tensor.cuda).

Args:
    device (int): the GPU's number. Default 0.

Returns:
    Tensor on 'cuda:<device>' (DeviceError without a GPU).)doc";

constexpr const char* tensor_float = R"doc(This tensor as float32: to(headgrad.float32).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_double = R"doc(This tensor as float64: to(headgrad.float64).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_long = R"doc(This tensor as int64: to(headgrad.int64).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_bool = R"doc(This tensor as bool: to(headgrad.bool).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_numpy =
    R"doc(A NumPy array sharing this CPU tensor's memory (torch.Tensor.numpy).

A tensor that requires grad is refused (AutogradError) unless grad mode is off, and a GPU
tensor (DeviceError): use t.detach().cpu().numpy().

Returns:
    numpy.ndarray of the same shape, dtype float32, float64, int64 or bool.)doc";

constexpr const char* tensor_item = R"doc(The value of a one-element tensor (torch.Tensor.item).

Returns:
    float (floating dtypes), int (int64) or bool (bool).)doc";

constexpr const char* tensor_tolist = R"doc(The values as nested Python lists (torch.Tensor.tolist).

Returns:
    list nested dim() deep, of float, int or bool; a bare number for a 0-d tensor.)doc";

// --- Tensor: in place ----------------------------------------------------------------------
// In-place writes are not recorded in the graph: on a tensor that requires grad they raise
// AutogradError while grad mode is on (write under headgrad.no_grad()).
constexpr const char* tensor_zero_ =
    R"doc(Fills the tensor with zeros, in place (not recorded in the graph).

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_fill_ =
    R"doc(Fills the tensor with one value, in place (not recorded in the graph).

Args:
    value (number): converted to the tensor's dtype (an int64 tensor takes a Python int
        exactly).

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_copy_ =
    R"doc(Copies values into the tensor, in place (not recorded in the graph).

Args:
    src (Tensor, array or list): of this tensor's shape; converted to its dtype.

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_add_ =
    R"doc(self += alpha * other, in place (not recorded in the graph).

Args:
    other (Tensor or number): broadcast to this tensor's shape; a number is converted to its
        dtype.
    alpha (float): the factor of other. Default 1.0.

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_mul_ = R"doc(self *= other, in place (not recorded in the graph).

Args:
    other (float): a number.

Returns:
    Tensor: this tensor.)doc";

constexpr const char* tensor_index_put_ =
    R"doc(self[indices] = values, or += with accumulate, in place (torch.Tensor.index_put_).

Not recorded in the graph: headgrad.index_put is the differentiable form.

Args:
    indices (tuple): index entries as for t[...]: ints, slices, None, Ellipsis, bool masks
        or int64 index tensors (several tensors pick elements pairwise).
    values (Tensor, array or number): broadcast to the indexed region.
    accumulate (bool): add instead of writing; repeated positions add up. Default False.

Returns:
    Tensor: this tensor.)doc";

// --- Tensor: shape --------------------------------------------------------------------------
constexpr const char* tensor_reshape =
    R"doc(The same elements in another shape (torch.Tensor.reshape).

Args:
    *shape (int, or one tuple of int): the new shape; one entry may be -1 (inferred).

Returns:
    Tensor of that shape, sharing this tensor's storage.)doc";

constexpr const char* tensor_view =
    R"doc(The same elements in another shape (torch.Tensor.view); the same op as reshape.

Storage is always contiguous here, so every view is a reshape.

Args:
    *shape (int, or one tuple of int): the new shape; one entry may be -1 (inferred).

Returns:
    Tensor of that shape, sharing this tensor's storage.)doc";

constexpr const char* tensor_expand =
    R"doc(Broadcasts to a larger shape (torch.Tensor.expand); a copy, not a view.

Args:
    *sizes (int, or one tuple of int): the target shape; -1 keeps a dimension; new leading
        dimensions are allowed.

Returns:
    Tensor of that shape.)doc";

constexpr const char* tensor_permute =
    R"doc(The dimensions reordered (torch.Tensor.permute); a copy.

Args:
    *dims (int, or one tuple of int): a permutation of 0 .. dim()-1 (negatives allowed).

Returns:
    Tensor whose dimension i is this tensor's dims[i].)doc";

constexpr const char* tensor_flatten =
    R"doc(Dimensions start_dim .. end_dim merged into one (torch.Tensor.flatten).

Args:
    start_dim (int): default 0.
    end_dim (int): inclusive; default -1.

Returns:
    Tensor sharing this tensor's storage; a 0-d tensor gives shape (1,).)doc";

constexpr const char* tensor_transpose =
    R"doc(Two dimensions swapped (torch.Tensor.transpose); a copy.

Args:
    dim0 (int), dim1 (int): the dimensions (negative counts from the end).

Returns:
    Tensor with sizes dim0 and dim1 exchanged.)doc";

constexpr const char* tensor_T = R"doc(Every dimension reversed (torch.Tensor.T); a copy.

Returns:
    Tensor of shape (..., s1, s0) for shape (s0, s1, ...).)doc";

constexpr const char* tensor_mT = R"doc(The last two dimensions swapped (torch.Tensor.mT); a copy.

Returns:
    Tensor of shape (*, n, m) for shape (*, m, n).)doc";

constexpr const char* tensor_t = R"doc(The transpose of a 2-d tensor (torch.Tensor.t); a copy.

Returns:
    Tensor (n, m) for (m, n); ShapeError for other ranks.)doc";

constexpr const char* tensor_unsqueeze =
    R"doc(A dimension of size 1 inserted (torch.Tensor.unsqueeze).

Args:
    dim (int): its position in the result, in [-dim()-1, dim()].

Returns:
    Tensor with dim()+1 dimensions, sharing this tensor's storage.)doc";

constexpr const char* tensor_squeeze = R"doc(Dimensions of size 1 removed (torch.Tensor.squeeze).

Args:
    dim (int, optional): only this dimension, when its size is 1 (else unchanged).
        Default None: every size-1 dimension.

Returns:
    Tensor sharing this tensor's storage.)doc";

constexpr const char* tensor_narrow =
    R"doc(A contiguous range along one dimension (torch.Tensor.narrow); a copy.

Args:
    dim (int): the dimension.
    start (int): the first index (negative counts from the end).
    length (int): how many entries.

Returns:
    Tensor with size `length` at dim.)doc";

constexpr const char* tensor_select =
    R"doc(One index of one dimension, that dimension removed (torch.Tensor.select); a copy.

Args:
    dim (int): the dimension.
    index (int): negative counts from the end.

Returns:
    Tensor with dim()-1 dimensions.)doc";

constexpr const char* tensor_index_select =
    R"doc(Entries along a dimension picked by an index tensor (torch.Tensor.index_select).

Differentiable; repeated indices are allowed.

Args:
    dim (int): the dimension.
    index (Tensor): 1-d int64 (k).

Returns:
    Tensor with size k at dim.)doc";

constexpr const char* tensor_split = R"doc(Pieces along a dimension (torch.Tensor.split); copies.

Args:
    split_size_or_sections (int or list of int): the size of every piece (the last may be
        smaller), or each piece's size (adding up to the dimension's size).
    dim (int): default 0.

Returns:
    list of Tensor.)doc";

constexpr const char* tensor_chunk =
    R"doc(`chunks` pieces along a dimension (torch.Tensor.chunk); copies.

Each piece has ceil(size / chunks) entries; the last may be smaller, and there may be fewer
than `chunks` pieces.

Args:
    chunks (int): positive.
    dim (int): default 0.

Returns:
    list of Tensor.)doc";

constexpr const char* tensor_contiguous =
    R"doc(This tensor: storage is always contiguous (torch.Tensor.contiguous).

Returns:
    Tensor sharing this tensor's storage.)doc";

constexpr const char* tensor_is_contiguous =
    R"doc(Whether the storage is contiguous: always True here.

Returns:
    bool.)doc";

// --- Tensor: reductions -----------------------------------------------------------------------
constexpr const char* tensor_sum =
    R"doc(The sum over dimensions (torch.Tensor.sum).

int64 and bool tensors sum to an exact int64 (on the CPU).

Args:
    dim (int or sequence of int, optional): the dimensions; None sums everything. Default
        None.
    keepdim (bool): keep the summed dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else the shape without (or with size 1 at) the dims.)doc";

constexpr const char* tensor_mean =
    R"doc(The mean over dimensions (torch.Tensor.mean); floating tensors.

Args:
    dim (int or sequence of int, optional): None averages everything. Default None.
    keepdim (bool): keep the averaged dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else the shape without (or with size 1 at) the dims.)doc";

constexpr const char* tensor_var = R"doc(The variance over dimensions (torch.Tensor.var).

Args:
    dim (int or sequence of int, optional): None: every element. Default None.
    unbiased (bool): divide by n - 1 (Bessel's correction) rather than n. Default True.
    keepdim (bool): keep the reduced dimensions with size 1. Default False.
    correction (int, keyword, optional): divide by n - correction; overrides unbiased.

Returns:
    Tensor: 0-d without dim, else the shape without (or with size 1 at) the dims.)doc";

constexpr const char* tensor_max = R"doc(The maximum (torch.Tensor.max).

Args:
    dim (int, optional): None: of every element. Default None.
    keepdim (bool): keep dim with size 1. Default False.

Returns:
    Tensor (0-d) without dim (the gradient is shared between ties); with dim a named tuple
    (values, indices): values the maxima, indices the int64 position of the first maximum,
    both of the shape without (or with size 1 at) dim.)doc";

constexpr const char* tensor_amax =
    R"doc(The maximum over dimensions (torch.Tensor.amax); ties share the gradient.

Args:
    dim (int or sequence of int, optional): None: every element. Default None.
    keepdim (bool): keep the reduced dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else the shape without (or with size 1 at) the dims.)doc";

constexpr const char* tensor_argmax =
    R"doc(The index of the first maximum (torch.Tensor.argmax; not differentiable).

Args:
    dim (int, optional): None: the index into the flattened tensor. Default None.
    keepdim (bool): keep dim with size 1. Default False.

Returns:
    Tensor, int64: 0-d without dim, else the shape without (or with size 1 at) dim.)doc";

// --- Tensor: arithmetic ------------------------------------------------------------------------
// Binary ops broadcast as in PyTorch, with no type promotion: a tensor operand must have this
// tensor's dtype and device; a number is converted to this tensor's dtype.
constexpr const char* tensor_matmul =
    R"doc(The matrix product self @ other, with torch.matmul's rules.

1-d operands are vectors; batch dimensions broadcast.

Args:
    other (Tensor): same dtype and device.

Returns:
    Tensor: (*, n, p) for (*, n, m) @ (*, m, p); 0-d for two vectors.)doc";

constexpr const char* tensor_add = R"doc(self + alpha * other, broadcasting (torch.Tensor.add).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.
    alpha (float, keyword): the factor of other. Default 1.0.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* tensor_sub = R"doc(self - alpha * other, broadcasting (torch.Tensor.sub).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.
    alpha (float, keyword): the factor of other. Default 1.0.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* tensor_mul =
    R"doc(self * other, elementwise and broadcasting (torch.Tensor.mul).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* tensor_div =
    R"doc(self / other, elementwise and broadcasting (torch.Tensor.div).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* tensor_neg = R"doc(-self, elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_exp = R"doc(e ** self, elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_log = R"doc(The natural logarithm, elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_sqrt = R"doc(The square root, elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_rsqrt = R"doc(1 / sqrt(self), elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_abs = R"doc(|self|, elementwise (gradient sign(x), 0 at 0).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_tanh = R"doc(The hyperbolic tangent, elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_sigmoid = R"doc(1 / (1 + exp(-self)), elementwise.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_relu = R"doc(max(self, 0), elementwise (gradient 0 at 0, as PyTorch).

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_gelu = R"doc(GELU, elementwise (torch.nn.functional.gelu).

Args:
    approximate (str, keyword): 'none' (the exact erf form) or 'tanh'. Default 'none'.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_clamp =
    R"doc(Each element limited to [min, max] (torch.Tensor.clamp); gradient 1 inside, 0 outside.

Args:
    min (float, optional): the lower bound; None for none. Default None.
    max (float, optional): the upper bound; None for none. Default None.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_pow = R"doc(self ** exponent, elementwise.

Args:
    exponent (Tensor or float): a tensor broadcasting with self (same dtype and device; its
        gradient needs self > 0), or a number.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* tensor_softmax =
    R"doc(Softmax along a dimension (torch.Tensor.softmax).

A row of all -inf gives NaN, as in PyTorch; headgrad.softmax(..., safe=True) gives zeros.

Args:
    dim (int): the dimension that sums to 1.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_log_softmax =
    R"doc(log(softmax(self, dim)), computed stably (torch.Tensor.log_softmax).

Args:
    dim (int): the dimension.

Returns:
    Tensor of the same shape.)doc";

constexpr const char* tensor_masked_fill =
    R"doc(value where mask is True, self elsewhere (torch.Tensor.masked_fill).

No gradient flows to the filled positions.

Args:
    mask (Tensor): bool, broadcastable to self's shape (it may not enlarge it).
    value (float): e.g. float('-inf') before a softmax.

Returns:
    Tensor of self's shape.)doc";

constexpr const char* tensor_logical_not = R"doc(Elementwise not of a bool tensor.

Returns:
    Tensor, bool, of the same shape.)doc";

constexpr const char* tensor_eq =
    R"doc(self == other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* tensor_ne =
    R"doc(self != other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* tensor_lt =
    R"doc(self < other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* tensor_le =
    R"doc(self <= other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* tensor_gt =
    R"doc(self > other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* tensor_ge =
    R"doc(self >= other, elementwise and broadcasting (not differentiable).

Args:
    other (Tensor or number): a tensor of the same dtype and device, or a number.

Returns:
    Tensor, bool, of the broadcast shape.)doc";

// --- factories -----------------------------------------------------------------------------
constexpr const char* zeros = R"doc(A tensor of zeros (torch.zeros).

Args:
    *size (int, or one tuple of int): the shape.
    dtype (headgrad.dtype or str, keyword, optional): default float32.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* ones = R"doc(A tensor of ones (torch.ones).

Args:
    *size (int, or one tuple of int): the shape.
    dtype (headgrad.dtype or str, keyword, optional): default float32.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* empty = R"doc(An uninitialized tensor (torch.empty): its values are arbitrary.

Args:
    *size (int, or one tuple of int): the shape.
    dtype (headgrad.dtype or str, keyword, optional): default float32.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* full = R"doc(A tensor filled with one value (torch.full).

Args:
    size (int or sequence of int): the shape.
    fill_value (number): converted to the dtype (an int64 tensor takes a Python int
        exactly).
    dtype (headgrad.dtype or str, keyword, optional): default float32, whatever the value.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* rand = R"doc(Uniform random numbers in [0, 1) (torch.rand).

Args:
    *size (int, or one tuple of int): the shape.
    generator (Generator, keyword, optional): default the default generator (manual_seed).
    dtype (headgrad.dtype or str, keyword, optional): float32 (default) or float64.
    device (Device or str, keyword, optional): default the CPU; a GPU tensor holds the
        values drawn on the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* randn = R"doc(Standard normal random numbers (torch.randn).

Args:
    *size (int, or one tuple of int): the shape.
    generator (Generator, keyword, optional): default the default generator (manual_seed).
    dtype (headgrad.dtype or str, keyword, optional): float32 (default) or float64.
    device (Device or str, keyword, optional): default the CPU; a GPU tensor holds the
        values drawn on the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* randint = R"doc(Uniform random integers in [low, high) (torch.randint).

Called as randint(high, size) or randint(low, high, size).

Args:
    low (int): the lower bound (inclusive); the upper bound when size is omitted (low 0).
    high (int or sequence of int): the upper bound (exclusive); the shape when size is
        omitted.
    size (int or sequence of int, optional): the shape.
    generator (Generator, keyword, optional): default the default generator.
    dtype (headgrad.dtype or str, keyword, optional): default int64.
    device (Device or str, keyword, optional): default the CPU.

Returns:
    Tensor of shape `size`.)doc";

constexpr const char* arange =
    R"doc(start, start + step, ... below end (torch.arange); arange(end) starts at 0.

Args:
    start (number): the first value; the end when end is None.
    end (number, optional): exclusive. Default None.
    step (number): default 1.
    dtype (headgrad.dtype or str, keyword, optional): default int64 when every argument is
        an int, else float32.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor, 1-d, of ceil((end - start) / step) values.)doc";

constexpr const char* zeros_like =
    R"doc(Zeros of another tensor's shape, dtype and device (torch.zeros_like).

Args:
    input (Tensor).

Returns:
    Tensor, not requiring grad.)doc";

constexpr const char* ones_like =
    R"doc(Ones of another tensor's shape, dtype and device (torch.ones_like).

Args:
    input (Tensor).

Returns:
    Tensor, not requiring grad.)doc";

constexpr const char* empty_like =
    R"doc(An uninitialized tensor of another tensor's shape, dtype and device (torch.empty_like).

Args:
    input (Tensor).

Returns:
    Tensor, not requiring grad, with arbitrary values.)doc";

constexpr const char* full_like =
    R"doc(A tensor of another's shape, dtype and device, filled with one value (torch.full_like).

Args:
    input (Tensor).
    fill_value (number): converted to input's dtype.

Returns:
    Tensor, not requiring grad.)doc";

constexpr const char* tensor_factory = R"doc(A new tensor holding a copy of `data` (torch.tensor).

Args:
    data (Tensor, numpy.ndarray, nested list or number): a list of floats gives float32,
        of ints int64, of bools bool; an array keeps its dtype when headgrad has it.
    dtype (headgrad.dtype or str, keyword, optional): converts to it.
    device (Device or str, keyword, optional): default the CPU.
    requires_grad (bool, keyword): default False.

Returns:
    Tensor of data's shape, in storage of its own.)doc";

constexpr const char* as_tensor =
    R"doc(A tensor over `data`'s memory where it can (torch.as_tensor).

Args:
    data (Tensor, numpy.ndarray, nested list or number): a Tensor is returned as it is, an
        array shared when from_numpy can share it; anything else is copied.
    dtype (headgrad.dtype or str, optional): converts (a copy) when it differs.

Returns:
    Tensor of data's shape.)doc";

constexpr const char* from_numpy = R"doc(A tensor over a NumPy array's memory (torch.from_numpy).

Shared when the array is float32, float64, int64 or bool, C-contiguous, aligned, writeable
and in native byte order; otherwise a converted copy (other float widths to float32 or
float64, ints to int64).

Args:
    array (numpy.ndarray).

Returns:
    Tensor of the array's shape.)doc";

// --- Generator, threads ------------------------------------------------------------------------
constexpr const char* generator_init = R"doc(A random number generator (torch.Generator).

Args:
    seed (int): default 0x5EED.)doc";

constexpr const char* generator_manual_seed = R"doc(Reseeds the generator.

Args:
    seed (int): a 64-bit unsigned seed.

Returns:
    Generator: this generator.)doc";

constexpr const char* generator_initial_seed = R"doc(The seed the generator was last seeded with.

Returns:
    int.)doc";

constexpr const char* set_num_threads =
    R"doc(Sets the number of threads an op uses (torch.set_num_threads), for the whole process.

Args:
    n (int): in [1, 1024].

Returns:
    None.)doc";

constexpr const char* get_num_threads =
    R"doc(The number of threads an op uses (torch.get_num_threads).

By default OMP_NUM_THREADS, else the CPUs the process may use.

Returns:
    int.)doc";

constexpr const char* cuda_is_available =
    R"doc(Whether a GPU can be used (the CUDA backend loads and a device is there).

Returns:
    bool.)doc";

constexpr const char* cuda_device_count =
    R"doc(The number of usable GPUs (headgrad.cuda.device_count).

Returns:
    int: 0 without a driver, a GPU or a CUDA build.)doc";

// --- headgrad.cuda -----------------------------------------------------------------------------
constexpr const char* cuda_built =
    R"doc(Whether the CUDA backend library loads; says nothing of a driver or a GPU.

Returns:
    bool.)doc";

constexpr const char* cuda_unavailable_reason = R"doc(Why no GPU can be used.

Returns:
    str: the missing part (the backend library, a CUDA library, the driver, a device), or
    '' when a GPU can be used.)doc";

constexpr const char* cuda_device_name = R"doc(The GPU's name, e.g. 'NVIDIA H100 80GB HBM3'.

Args:
    index (int): the GPU. Default 0.

Returns:
    str (DeviceError when there is no such GPU).)doc";

constexpr const char* cuda_synchronize =
    R"doc(Waits until every kernel queued on the GPU has finished (before reading a timer).

Runs without the GIL.

Args:
    index (int): the GPU. Default 0.

Returns:
    None (DeviceError when there is no such GPU).)doc";

constexpr const char* cuda_set_allow_tf32 =
    R"doc(Lets float32 matmuls on the GPU use TF32 tensor cores; off by default.

As torch.backends.cuda.matmul.allow_tf32.

Args:
    allow (bool).

Returns:
    None.)doc";

constexpr const char* cuda_allow_tf32 = R"doc(Whether float32 matmuls on the GPU may use TF32.

Returns:
    bool.)doc";

constexpr const char* cuda_memory_stats = R"doc(The caching allocator's counters for one GPU.

Args:
    index (int): the GPU. Default 0.

Returns:
    dict {'allocated_bytes': int (held by live tensors), 'reserved_bytes': int (allocated
    plus cached), 'peak_allocated_bytes': int (since the last reset), 'cuda_malloc_calls':
    int}; all 0 when there is no such GPU.)doc";

constexpr const char* cuda_reset_peak_memory =
    R"doc(Resets peak_allocated_bytes to the memory allocated now (nothing without that GPU).

Args:
    index (int): the GPU. Default 0.

Returns:
    None.)doc";

constexpr const char* cuda_empty_cache =
    R"doc(Returns every cached (free) block of GPU memory to the driver (torch.cuda.empty_cache).

Returns:
    None.)doc";

// --- existing one-line docstrings, completed ----------------------------------------------
constexpr const char* tensor_init =
    R"doc(A tensor over `data` (as headgrad.as_tensor without a dtype).

Args:
    data (Tensor, numpy.ndarray, nested list or number): a Tensor's storage is shared, an
        array's when from_numpy can share it; lists and numbers are copied (floats as
        float32, ints as int64, bools as bool).)doc";

constexpr const char* manual_seed =
    R"doc(Reseeds the default generator (torch.manual_seed).

Every random op without a generator= draws from it.

Args:
    seed (int): a 64-bit unsigned seed.

Returns:
    None.)doc";

}  // namespace headgrad::python::docs
