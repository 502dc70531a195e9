// Gathering by integer index: index_select, embedding and one_hot. Forward gathers copy
// whole contiguous rows; backwards scatter-add rows into a zero gradient, so repeated
// indices accumulate.
#include "headgrad/ops/index.hpp"

#include <cstring>
#include <string>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "ops/cpu/permute.hpp"

namespace headgrad {

namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

// Throws IndexError naming op, the first index outside [0, size), and the size.
void check_indices(const char* op, const std::int64_t* idx, std::int64_t n, std::int64_t size,
                   const std::string& where) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || idx[i] >= size)
      throw IndexError(std::string(op) + ": index " + std::to_string(idx[i]) +
                       " is out of range for " + where + " of size " + std::to_string(size));
  }
}

// The same check for an index tensor on a GPU: one int64 comes back (a synchronization).
void check_indices_on_device(const char* op, const Tensor& index, std::int64_t size,
                             const std::string& where) {
  Tensor bad = detail::new_tensor({}, kInt64, index.device());
  cuda::backend().check_index_range(index, size, bad);
  if (const std::int64_t at = bad.item<std::int64_t>(); at != 0) {
    const auto value =
        static_cast<std::int64_t>(detail::alias(index, {index.numel()}).at({at - 1}));
    throw IndexError(std::string(op) + ": index " + std::to_string(value) +
                     " is out of range for " + where + " of size " + std::to_string(size));
  }
}

// dst[(o, i, :)] += src[(o, k, :)] with i = idx[k], for o < outer, k < n: the scatter-add
// that is the backward of every gather here.
template <typename T>
void scatter_add_rows(const T* src, T* dst, const std::int64_t* idx, std::int64_t n,
                      std::int64_t outer, std::int64_t size, std::int64_t inner,
                      std::int64_t skip = -1) {
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t k = 0; k < n; ++k) {
      if (idx[k] == skip) continue;
      const T* s = src + (o * n + k) * inner;
      T* d = dst + (o * size + idx[k]) * inner;
      for (std::int64_t j = 0; j < inner; ++j) d[j] += s[j];
    }
  }
}

// dst[(o, k, :)] = src[(o, idx[k], :)], for o < outer, k < n (any dtype, by element size).
void gather_rows(const Tensor& src, Tensor& dst, const std::int64_t* idx, std::int64_t n,
                 std::int64_t outer, std::int64_t size, std::int64_t inner) {
  cpu::with_element_type(element_size(src.dtype()), [&]<typename U>() {
    const U* s = static_cast<const U*>(src.raw_data());
    U* d = static_cast<U*>(dst.raw_data());
    const std::size_t bytes = static_cast<std::size_t>(inner) * sizeof(U);
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t k = 0; k < n; ++k) {
        U* row = d + (o * n + k) * inner;
        const U* from = s + (o * size + idx[k]) * inner;
        if (inner == 1)
          *row = *from;
        else
          std::memcpy(row, from, bytes);
      }
    }
  });
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
  if (x.device().is_cuda()) {
    check_indices_on_device("index_select", index, size, where);
    cuda::backend().index_select(x, outer, size, inner, index, out);
  } else {
    const std::int64_t* idx = detail::ptr<std::int64_t>(index);
    check_indices("index_select", idx, n, size, where);
    gather_rows(x, out, idx, n, outer, size, inner);
  }

  if (is_floating(x.dtype()) && autograd::any_requires_grad({x})) {
    autograd::record(
        "index_select", {x}, {&out}, {index},
        [in_shape, outer, size, inner](const Grads& g, const BackwardContext& ctx) -> Grads {
          const Tensor& saved_index = ctx.saved(0);
          if (g[0].device().is_cuda()) {
            Tensor dx = detail::new_tensor(in_shape, g[0].dtype(), g[0].device());
            cuda::backend().index_add(g[0], outer, size, inner, saved_index, dx);
            return {dx};
          }
          Tensor dx = zeros(in_shape, g[0].options());
          detail::dispatch_floating(g[0].dtype(), "index_select backward", [&]<typename T>() {
            scatter_add_rows(detail::ptr<T>(g[0]), detail::ptr<T>(dx),
                             detail::ptr<std::int64_t>(saved_index), saved_index.numel(), outer,
                             size, inner);
          });
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
  const std::int64_t n = indices.numel();
  Shape out_shape = indices.shape();
  out_shape.push_back(width);
  Tensor out = detail::new_tensor(out_shape, weight.dtype(), weight.device());
  if (weight.device().is_cuda()) {
    check_indices_on_device("embedding", indices, vocab, "weight " + detail::describe(weight));
    cuda::backend().index_select(weight, 1, vocab, width, indices, out);
  } else {
    const std::int64_t* idx = detail::ptr<std::int64_t>(indices);
    check_indices("embedding", idx, n, vocab, "weight " + detail::describe(weight));
    gather_rows(weight, out, idx, n, 1, vocab, width);
  }

  if (autograd::any_requires_grad({weight})) {
    autograd::record(
        "embedding", {weight}, {&out}, {indices},
        [vocab, width, skip](const Grads& g, const BackwardContext& ctx) -> Grads {
          const Tensor& saved_indices = ctx.saved(0);
          if (g[0].device().is_cuda()) {
            Tensor dweight = detail::new_tensor({vocab, width}, g[0].dtype(), g[0].device());
            cuda::backend().index_add(g[0], 1, vocab, width, saved_indices, dweight);
            if (skip >= 0) {  // the padding row gets no gradient
              Tensor row = detail::alias(dweight, {vocab, width}).detach();
              row.impl()->offset = skip * width;
              row.impl()->shape = {width};
              cuda::backend().fill(row, 0.0);
            }
            return {dweight};
          }
          Tensor dweight = zeros({vocab, width}, g[0].options());
          detail::dispatch_floating(g[0].dtype(), "embedding backward", [&]<typename T>() {
            scatter_add_rows(detail::ptr<T>(g[0]), detail::ptr<T>(dweight),
                             detail::ptr<std::int64_t>(saved_indices), saved_indices.numel(), 1,
                             vocab, width, skip);
          });
          return {dweight};
        });
  }
  return out;
}

// indices (*s) int64 -> y (*s, C) with y[i, c] = (indices[i] == c); C = max + 1 when
// num_classes is -1 (as torch). Not differentiable.
Tensor one_hot(const Tensor& indices, std::int64_t num_classes, DType dtype) {
  detail::check_dtype("one_hot", indices, DType::int64, "indices");
  if (indices.device().is_cuda()) {
    if (num_classes == -1) {  // the largest index decides: read the indices back
      num_classes = one_hot(indices.to(Device::cpu()), -1, kBool).shape().back();
    } else if (num_classes < 0) {
      throw ValueError("one_hot: num_classes must be non-negative or -1, got " +
                       std::to_string(num_classes));
    }
    check_indices_on_device("one_hot", indices, num_classes, "the one-hot dim (num_classes)");
    Shape out_shape = indices.shape();
    out_shape.push_back(num_classes);
    Tensor out = detail::new_tensor(out_shape, dtype, indices.device());
    cuda::backend().one_hot(indices, num_classes, out);
    return out;
  }
  const std::int64_t n = indices.numel();
  const std::int64_t* idx = detail::ptr<std::int64_t>(indices);
  if (num_classes == -1) {
    if (n == 0)
      throw ValueError("one_hot: cannot infer num_classes from empty indices " +
                       detail::describe(indices));
    num_classes = 0;
    for (std::int64_t i = 0; i < n; ++i) num_classes = std::max(num_classes, idx[i] + 1);
  } else if (num_classes < 0) {
    throw ValueError("one_hot: num_classes must be non-negative or -1, got " +
                     std::to_string(num_classes));
  }
  check_indices("one_hot", idx, n, num_classes, "the one-hot dim (num_classes)");
  Shape out_shape = indices.shape();
  out_shape.push_back(num_classes);
  Tensor out = zeros(out_shape, dtype);
  detail::dispatch_all(dtype, [&]<typename T>() {
    T* y = detail::ptr<T>(out);
    for (std::int64_t i = 0; i < n; ++i) y[i * num_classes + idx[i]] = static_cast<T>(1);
  });
  return out;
}

}  // namespace headgrad
