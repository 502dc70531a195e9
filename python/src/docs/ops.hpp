// The docstrings of ops.cpp's bindings: the ops as headgrad.* functions and
// headgrad.nn.functional. Binary ops broadcast as in PyTorch, with no type promotion: tensor
// operands share one dtype and device, and a number is converted to the tensor's dtype.
#pragma once

namespace headgrad::python::docs {

// --- arithmetic ---------------------------------------------------------------------------
constexpr const char* matmul =
    R"doc(The matrix product (torch.matmul): 1-d operands are vectors, batch dimensions broadcast.

Args:
    input (Tensor), other (Tensor): same dtype and device.

Returns:
    Tensor: (*, n, p) for (*, n, m) @ (*, m, p); (n,) for (n, m) @ (m,); 0-d for two
    vectors.)doc";

constexpr const char* add = R"doc(input + alpha * other, broadcasting (torch.add).

Args:
    input (Tensor).
    other (Tensor or number).
    alpha (float, keyword): the factor of other. Default 1.0.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* sub = R"doc(input - alpha * other, broadcasting (torch.sub).

Args:
    input (Tensor).
    other (Tensor or number).
    alpha (float, keyword): the factor of other. Default 1.0.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* mul =
    R"doc(mul(input, other): input * other, elementwise and broadcasting (torch.mul).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* div =
    R"doc(div(input, other): input / other, elementwise and broadcasting (torch.div).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* pow =
    R"doc(pow(input, exponent): input ** exponent, elementwise and broadcasting (torch.pow).

Args:
    input (Tensor or number), exponent (Tensor or number): at least one a Tensor. The
        gradient with respect to a tensor exponent needs input > 0.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* maximum =
    R"doc(maximum(input, other): the elementwise maximum, broadcasting (torch.maximum).

Ties send half the gradient to each side.

Args:
    input (Tensor), other (Tensor): same dtype and device.

Returns:
    Tensor of the broadcast shape.)doc";

constexpr const char* minimum =
    R"doc(minimum(input, other): the elementwise minimum, broadcasting (torch.minimum).

Ties send half the gradient to each side.

Args:
    input (Tensor), other (Tensor): same dtype and device.

Returns:
    Tensor of the broadcast shape.)doc";

// --- elementwise --------------------------------------------------------------------------------
constexpr const char* neg = R"doc(-input, elementwise (torch.neg).

Args:
    input (Tensor).

Returns:
    Tensor of input's shape.)doc";

constexpr const char* exp = R"doc(e ** input, elementwise (torch.exp).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* log = R"doc(The natural logarithm, elementwise (torch.log).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* sqrt = R"doc(The square root, elementwise (torch.sqrt).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* rsqrt = R"doc(1 / sqrt(input), elementwise (torch.rsqrt).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* abs = R"doc(|input|, elementwise (torch.abs); gradient sign(x), 0 at 0.

Args:
    input (Tensor).

Returns:
    Tensor of input's shape.)doc";

constexpr const char* tanh = R"doc(The hyperbolic tangent, elementwise (torch.tanh).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* sigmoid = R"doc(1 / (1 + exp(-input)), elementwise (torch.sigmoid).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* relu = R"doc(max(input, 0), elementwise (torch.relu); gradient 0 at 0.

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* logical_not = R"doc(Elementwise not (torch.logical_not).

Args:
    input (Tensor): bool.

Returns:
    Tensor, bool, of input's shape.)doc";

constexpr const char* clamp =
    R"doc(Each element limited to [min, max] (torch.clamp); gradient 1 inside, 0 outside.

Args:
    input (Tensor).
    min (float, optional): the lower bound; None for none. Default None.
    max (float, optional): the upper bound; None for none. Default None.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* where = R"doc(input where condition is True, other elsewhere (torch.where).

Differentiable in input and other.

Args:
    condition (Tensor): bool.
    input (Tensor or number), other (Tensor or number): at least one a Tensor; a number
        takes the other's dtype and device.

Returns:
    Tensor of the shape the three broadcast to.)doc";

constexpr const char* eq =
    R"doc(eq(input, other): input == other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* ne =
    R"doc(ne(input, other): input != other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* lt =
    R"doc(lt(input, other): input < other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* le =
    R"doc(le(input, other): input <= other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* gt =
    R"doc(gt(input, other): input > other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

constexpr const char* ge =
    R"doc(ge(input, other): input >= other, elementwise and broadcasting (not differentiable).

Args:
    input (Tensor), other (Tensor or number).

Returns:
    Tensor, bool, of the broadcast shape.)doc";

// --- reductions ---------------------------------------------------------------------------------
constexpr const char* sum =
    R"doc(The sum over dimensions (torch.sum).

int64 and bool inputs sum to an exact int64 (on the CPU).

Args:
    input (Tensor).
    dim (int or sequence of int, optional): None sums everything. Default None.
    keepdim (bool): keep the summed dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else input's shape without (or with size 1 at) the dims.)doc";

constexpr const char* mean = R"doc(The mean over dimensions (torch.mean); floating inputs.

Args:
    input (Tensor).
    dim (int or sequence of int, optional): None averages everything. Default None.
    keepdim (bool): keep the averaged dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else input's shape without (or with size 1 at) the dims.)doc";

constexpr const char* var = R"doc(The variance over dimensions (torch.var).

Args:
    input (Tensor).
    dim (int or sequence of int, optional): None: every element. Default None.
    unbiased (bool): divide by n - 1 (Bessel's correction) rather than n. Default True.
    keepdim (bool): keep the reduced dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else input's shape without (or with size 1 at) the dims.)doc";

constexpr const char* amax =
    R"doc(The maximum over dimensions (torch.amax); ties share the gradient.

Args:
    input (Tensor).
    dim (int or sequence of int, optional): None: every element. Default None.
    keepdim (bool): keep the reduced dimensions with size 1. Default False.

Returns:
    Tensor: 0-d without dim, else input's shape without (or with size 1 at) the dims.)doc";

constexpr const char* argmax =
    R"doc(The index of the first maximum along a dimension (torch.argmax; not differentiable).

Args:
    input (Tensor).
    dim (int): required here.
    keepdim (bool): keep dim with size 1. Default False.

Returns:
    Tensor, int64, of input's shape without (or with size 1 at) dim.)doc";

constexpr const char* sum_to =
    R"doc(Sums input down to `shape`: the gradient of broadcasting (differentiable).

The dimensions that broadcasting added or enlarged to go from `shape` to input's are summed.

Args:
    input (Tensor).
    shape (sequence of int): a shape that broadcasts to input's.

Returns:
    Tensor of shape `shape`.)doc";

// --- shape and indexing
// ---------------------------------------------------------------------------
constexpr const char* reshape =
    R"doc(reshape(input, shape): the same elements in another shape (torch.reshape).

Args:
    input (Tensor).
    shape (int or sequence of int): one entry may be -1 (inferred).

Returns:
    Tensor of that shape, sharing input's storage.)doc";

constexpr const char* flatten =
    R"doc(Dimensions start_dim .. end_dim merged into one (torch.flatten).

Args:
    input (Tensor).
    start_dim (int): default 0.
    end_dim (int): inclusive; default -1.

Returns:
    Tensor sharing input's storage; a 0-d input gives shape (1,).)doc";

constexpr const char* transpose = R"doc(Two dimensions swapped (torch.transpose); a copy.

Args:
    input (Tensor).
    dim0 (int), dim1 (int): the dimensions (negative counts from the end).

Returns:
    Tensor with sizes dim0 and dim1 exchanged.)doc";

constexpr const char* permute =
    R"doc(permute(input, dims): the dimensions reordered (torch.permute); a copy.

Args:
    input (Tensor).
    dims (sequence of int): a permutation of 0 .. input.dim()-1.

Returns:
    Tensor whose dimension i is input's dims[i].)doc";

constexpr const char* unsqueeze = R"doc(A dimension of size 1 inserted (torch.unsqueeze).

Args:
    input (Tensor).
    dim (int): its position in the result, in [-input.dim()-1, input.dim()].

Returns:
    Tensor with one more dimension, sharing input's storage.)doc";

constexpr const char* squeeze = R"doc(Dimensions of size 1 removed (torch.squeeze).

Args:
    input (Tensor).
    dim (int, optional): only this dimension, when its size is 1 (else unchanged).
        Default None: every size-1 dimension.

Returns:
    Tensor sharing input's storage.)doc";

constexpr const char* cat = R"doc(Tensors joined along an existing dimension (torch.cat).

Args:
    tensors (sequence of Tensor): at least one; equal shapes but at dim, one dtype and
        device.
    dim (int): default 0.

Returns:
    Tensor whose size at dim is the sum of theirs.)doc";

constexpr const char* concat =
    R"doc(Tensors joined along an existing dimension (torch.concat, = cat).

Args:
    tensors (sequence of Tensor): at least one; equal shapes but at dim, one dtype and
        device.
    dim (int): default 0.

Returns:
    Tensor whose size at dim is the sum of theirs.)doc";

constexpr const char* stack = R"doc(Tensors of one shape joined along a new dimension (torch.stack).

Args:
    tensors (sequence of Tensor): at least one, of equal shape s.
    dim (int): the new dimension's position. Default 0.

Returns:
    Tensor of shape s with len(tensors) inserted at dim.)doc";

constexpr const char* split = R"doc(Pieces along a dimension (torch.split); copies.

Args:
    tensor (Tensor).
    split_size_or_sections (int or list of int): the size of every piece (the last may be
        smaller), or each piece's size (adding up to the dimension's size).
    dim (int): default 0.

Returns:
    list of Tensor.)doc";

constexpr const char* chunk =
    R"doc(`chunks` pieces along a dimension (torch.chunk); copies.

Each piece has ceil(size / chunks) entries; the last may be smaller, and there may be fewer
than `chunks` pieces.

Args:
    input (Tensor).
    chunks (int): positive.
    dim (int): default 0.

Returns:
    list of Tensor.)doc";

constexpr const char* narrow = R"doc(A contiguous range along one dimension (torch.narrow); a copy.

Args:
    input (Tensor).
    dim (int): the dimension.
    start (int): the first index (negative counts from the end).
    length (int): how many entries.

Returns:
    Tensor with size `length` at dim.)doc";

constexpr const char* select =
    R"doc(One index of one dimension, that dimension removed (torch.select); a copy.

Args:
    input (Tensor).
    dim (int): the dimension.
    index (int): negative counts from the end.

Returns:
    Tensor with one dimension fewer.)doc";

constexpr const char* index_select =
    R"doc(Entries along a dimension picked by an index tensor (torch.index_select).

Differentiable; repeated indices are allowed.

Args:
    input (Tensor).
    dim (int): the dimension.
    index (Tensor): 1-d int64 (k).

Returns:
    Tensor with size k at dim.)doc";

constexpr const char* index_put =
    R"doc(A copy of input with values written (or added) at input[indices] (torch.index_put).

Differentiable in input and values.

Args:
    input (Tensor).
    indices (tuple of Tensor): int64 index tensors (or lists), one per leading dimension,
        picking elements pairwise; or one bool mask.
    values (Tensor or number): broadcast to the indexed region.
    accumulate (bool): add instead of writing; repeated positions add up (without it the
        last write wins). Default False.

Returns:
    Tensor of input's shape.)doc";

// --- softmax and masks
// ----------------------------------------------------------------------------
constexpr const char* softmax = R"doc(Softmax along a dimension (torch.softmax).

Args:
    input (Tensor): floating.
    dim (int): the dimension that sums to 1.
    safe (bool, keyword): a row of all -inf gives zeros (and zero gradients) instead of
        NaN. Default False.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* log_softmax =
    R"doc(log(softmax(input, dim)), computed stably (torch.log_softmax).

Args:
    input (Tensor): floating.
    dim (int): the dimension.
    safe (bool, keyword): a row of all -inf gives -inf with zero gradients instead of NaN.
        Default False.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* masked_fill =
    R"doc(value where mask is True, input elsewhere (torch.masked_fill).

No gradient flows to the filled positions.

Args:
    input (Tensor).
    mask (Tensor): bool, broadcastable to input's shape (it may not enlarge it).
    value (float): e.g. float('-inf') before a softmax.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* causal_mask =
    R"doc(The causal attention mask, PyTorch's attn_mask convention (True = blocked).

Args:
    size (int): L, the number of queries.
    source_len (int, optional): S, the number of keys. Default None: S = L.

Returns:
    Tensor (L, S), bool: True where key j > query i (top-left aligned, as SDPA's
    is_causal).)doc";

// --- headgrad.nn.functional ---------------------------------------------------------------------
constexpr const char* f_linear = R"doc(input @ weight^T + bias (torch.nn.functional.linear).

Args:
    input (Tensor): (*, in).
    weight (Tensor): (out, in).
    bias (Tensor, optional): (out). Default None.

Returns:
    Tensor (*, out).)doc";

constexpr const char* f_softmax = R"doc(Softmax along a dimension (torch.nn.functional.softmax).

Args:
    input (Tensor): floating.
    dim (int): the dimension that sums to 1.
    safe (bool, keyword): a row of all -inf gives zeros (and zero gradients) instead of
        NaN. Default False.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_log_softmax =
    R"doc(log(softmax(input, dim)), computed stably (torch.nn.functional.log_softmax).

Args:
    input (Tensor): floating.
    dim (int): the dimension.
    safe (bool, keyword): a row of all -inf gives -inf with zero gradients instead of NaN.
        Default False.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_relu = R"doc(max(input, 0), elementwise (torch.nn.functional.relu).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_gelu = R"doc(GELU, elementwise (torch.nn.functional.gelu).

Args:
    input (Tensor): floating.
    approximate (str, keyword): 'none' (the exact erf form) or 'tanh'. Default 'none'.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_sigmoid =
    R"doc(1 / (1 + exp(-input)), elementwise (torch.nn.functional.sigmoid).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_tanh = R"doc(The hyperbolic tangent, elementwise (torch.nn.functional.tanh).

Args:
    input (Tensor): floating.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_dropout =
    R"doc(Inverted dropout (torch.nn.functional.dropout).

In training each element is zeroed with probability p and the rest scaled by 1 / (1 - p);
the identity when training is False or p is 0.

Args:
    input (Tensor): floating.
    p (float): the probability of zeroing, in [0, 1]. Default 0.5.
    training (bool): default True.
    generator (Generator, keyword, optional): the mask's generator; default the default
        generator.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_layer_norm =
    R"doc(Layer normalization over the trailing dimensions (torch.nn.functional.layer_norm).

(x - mean) / sqrt(var + eps) * weight + bias, with the biased variance.

Args:
    input (Tensor): (*, *normalized_shape).
    normalized_shape (int or sequence of int): the trailing dimensions normalized over.
    weight (Tensor, optional): of normalized_shape. Default None (1).
    bias (Tensor, optional): of normalized_shape. Default None (0).
    eps (float): default 1e-5.

Returns:
    Tensor of input's shape.)doc";

constexpr const char* f_cross_entropy =
    R"doc(Cross-entropy of logits against class indices (torch.nn.functional.cross_entropy).

log_softmax and the negative log-likelihood, fused.

Args:
    input (Tensor): logits (N, C), (C) or (N, C, d1, ...).
    target (Tensor): int64 class indices (N), 0-d, or (N, d1, ...).
    reduction (str, keyword): 'mean' (over the targets not ignored; NaN when all are),
        'sum' or 'none'. Default 'mean'.
    ignore_index (int, keyword): targets equal to it add no loss and no gradient. Default
        -100.
    label_smoothing (float, keyword): in [0, 1). Default 0.0.

Returns:
    Tensor: 0-d for 'mean' and 'sum'; of target's shape for 'none'.)doc";

constexpr const char* f_mse_loss =
    R"doc(The squared error (input - target)^2 (torch.nn.functional.mse_loss).

Args:
    input (Tensor), target (Tensor): same (or broadcastable) shapes, one dtype.
    reduction (str, keyword): 'mean', 'sum' or 'none'. Default 'mean'.

Returns:
    Tensor: 0-d for 'mean' and 'sum'; of the broadcast shape for 'none'.)doc";

constexpr const char* f_embedding =
    R"doc(Rows of a table looked up by index (torch.nn.functional.embedding).

Args:
    input (Tensor): int64 indices of any shape, values in [0, V).
    weight (Tensor): the table (V, D).
    padding_idx (int, optional): rows equal to it get no gradient. Default None.

Returns:
    Tensor (*input.shape, D).)doc";

constexpr const char* f_one_hot = R"doc(One-hot encoding (torch.nn.functional.one_hot).

Args:
    input (Tensor): int64 indices of any shape, values in [0, num_classes).
    num_classes (int): default -1: the largest index + 1.
    dtype (headgrad.dtype or str, keyword, optional): default int64, as PyTorch.

Returns:
    Tensor (*input.shape, num_classes).)doc";

}  // namespace headgrad::python::docs
