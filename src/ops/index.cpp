// Gathering by integer index: index_select, embedding and one_hot. Forward gathers copy
// whole contiguous rows; backwards scatter-add rows into a zero gradient, so repeated
// indices accumulate.
#include "headgrad/ops/index.hpp"

#include <algorithm>
#include <string>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"

namespace headgrad {

namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

// Throws IndexError naming op, the first index outside [0, size), and the size. On a GPU
// one int64 comes back (a synchronization).
void check_indices(const char* op, const Tensor& index, std::int64_t size,
                   const std::string& where) {
  Tensor bad = detail::new_tensor({}, kInt64, index.device());
  kernels_for(index.device(), op).check_index_range(index, size, bad);
  if (const std::int64_t at = bad.item<std::int64_t>(); at != 0) {
    const auto value =
        static_cast<std::int64_t>(detail::alias(index, {index.numel()}).at({at - 1}));
    throw IndexError(std::string(op) + ": index " + std::to_string(value) +
                     " is out of range for " + where + " of size " + std::to_string(size));
  }
}

}  // namespace

// x (a, n, b), index (m) int64 -> y (a, m, b), y[:, k] = x[:, index[k]];
// dx[:, index[k]] += dy[:, k] (repeated indices accumulate)
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index) {
  detail::check_defined("index_select", x);
  detail::check_dtype("index_select", index, DType::int64, "index");
  detail::check_same_device("index_select", x, index);
  if (index.dim() > 1)
    throw ShapeError("index_select: index must be 0-d or 1-d, got " + detail::describe(index));
  if (x.dim() == 0)
    throw ShapeError("index_select: cannot index a zero-dimensional tensor " + detail::describe(x));
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim(), "index_select"));
  const Shape& in_shape = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= in_shape[k];
  for (std::size_t k = d + 1; k < in_shape.size(); ++k) inner *= in_shape[k];
  const std::int64_t size = in_shape[d];
  const std::int64_t n = index.numel();
  const std::string where = "dim " + std::to_string(d) + " of input " + detail::describe(x);
  Shape out_shape = in_shape;
  out_shape[d] = n;
  Tensor out = detail::new_tensor(out_shape, x.dtype(), x.device());
  check_indices("index_select", index, size, where);
  kernels_for(x.device(), "index_select").index_select(x, outer, size, inner, index, out);

  if (is_floating(x.dtype()) && autograd::any_requires_grad({x})) {
    autograd::record(
        "index_select", {x}, {&out}, {index},
        [in_shape, outer, size, inner](const Grads& g, const BackwardContext& ctx) -> Grads {
          Tensor dx = detail::new_tensor(in_shape, g[0].dtype(), g[0].device());
          kernels_for(g[0].device(), "index_select backward")
              .index_add(g[0], outer, size, inner, ctx.saved(0), dx);
          return {dx};
        });
  }
  return out;
}

// weight (V, D), indices (*s) int64 -> y (*s, D), y[i] = weight[indices[i]];
// dweight[indices[i]] += dy[i] for every i with indices[i] != padding_idx
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<std::int64_t> padding_idx) {
  detail::check_float_op("embedding", weight);
  detail::check_dtype("embedding", indices, DType::int64, "indices");
  detail::check_same_device("embedding", weight, indices);
  if (weight.dim() != 2)
    throw ShapeError("embedding: weight must be 2-d (num_embeddings, dim), got " +
                     detail::describe(weight));
  const std::int64_t vocab = weight.shape()[0];
  const std::int64_t width = weight.shape()[1];
  std::int64_t skip = -1;
  if (padding_idx) {
    if (*padding_idx < -vocab || *padding_idx >= vocab)
      throw IndexError("embedding: padding_idx " + std::to_string(*padding_idx) +
                       " is out of range for weight " + detail::describe(weight) + " with " +
                       std::to_string(vocab) + " rows");
    skip = *padding_idx < 0 ? *padding_idx + vocab : *padding_idx;
  }
  Shape out_shape = indices.shape();
  out_shape.push_back(width);
  Tensor out = detail::new_tensor(out_shape, weight.dtype(), weight.device());
  check_indices("embedding", indices, vocab, "weight " + detail::describe(weight));
  kernels_for(weight.device(), "embedding").index_select(weight, 1, vocab, width, indices, out);

  if (autograd::any_requires_grad({weight})) {
    autograd::record(
        "embedding", {weight}, {&out}, {indices},
        [vocab, width, skip](const Grads& g, const BackwardContext& ctx) -> Grads {
          Kernels& kernels = kernels_for(g[0].device(), "embedding backward");
          Tensor dweight = detail::new_tensor({vocab, width}, g[0].dtype(), g[0].device());
          kernels.index_add(g[0], 1, vocab, width, ctx.saved(0), dweight);
          if (skip >= 0) {  // the padding row gets no gradient
            Tensor row = detail::alias(dweight, {vocab, width}).detach();
            row.impl()->offset = skip * width;
            row.impl()->shape = {width};
            kernels.fill(row, 0.0);
          }
          return {dweight};
        });
  }
  return out;
}

// indices (*s) int64 -> y (*s, C) with y[i, c] = (indices[i] == c); C = max + 1 when
// num_classes is -1 (as torch). Not differentiable.
Tensor one_hot(const Tensor& indices, std::int64_t num_classes, DType dtype) {
  detail::check_dtype("one_hot", indices, DType::int64, "indices");
  if (num_classes == -1) {  // the largest index decides (read back from a GPU)
    const Tensor host = indices.to(Device::cpu());
    const std::int64_t n = host.numel();
    if (n == 0)
      throw ValueError("one_hot: cannot infer num_classes from empty indices " +
                       detail::describe(indices));
    const std::int64_t* idx = detail::ptr<std::int64_t>(host);
    num_classes = 0;
    for (std::int64_t i = 0; i < n; ++i) num_classes = std::max(num_classes, idx[i] + 1);
  } else if (num_classes < 0) {
    throw ValueError("one_hot: num_classes must be non-negative or -1, got " +
                     std::to_string(num_classes));
  }
  check_indices("one_hot", indices, num_classes, "the one-hot dim (num_classes)");
  Shape out_shape = indices.shape();
  out_shape.push_back(num_classes);
  Tensor out = detail::new_tensor(out_shape, dtype, indices.device());
  kernels_for(indices.device(), "one_hot").one_hot(indices, num_classes, out);
  return out;
}

}  // namespace headgrad
