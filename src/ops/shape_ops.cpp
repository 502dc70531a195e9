// Shape and layout ops. reshape/view/flatten/squeeze/unsqueeze return a new TensorImpl over
// the same storage and offset (a view); every other op writes a new contiguous tensor with
// the raw copy kernels of cpu/permute.hpp. All of them work for every dtype (bytes are
// moved by element size); only floating tensors join the autograd graph.
#include "headgrad/ops/shape_ops.hpp"

#include <string>

#include "core/broadcast.hpp"
#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/reduce.hpp"

namespace headgrad {

namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_input(const char* op, const Tensor& x) { detail::check_defined(op, x); }

// Record only floating outputs, and only when some input requires grad.
bool should_record(const Tensor& out, const std::vector<Tensor>& inputs) {
  return is_floating(out.dtype()) && autograd::any_requires_grad(inputs);
}

std::string dims_str(const Shape& dims) { return shape_str(dims); }

// A tensor over x's storage and offset with another shape of the same numel.
Tensor alias_with_shape(const Tensor& x, const Shape& shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = x.impl()->storage;
  impl->offset = x.impl()->offset;
  impl->shape = shape;
  impl->dtype = x.dtype();
  return Tensor(std::move(impl));
}

// x (*in) -> y (*shape) sharing storage; dx = dy reshaped back to (*in).
Tensor view_op(const char* op, const Tensor& x, const Shape& shape) {
  Tensor out = alias_with_shape(x, shape);
  if (should_record(out, {x})) {
    autograd::record(op, {x}, {&out}, {},
                     [in_shape = x.shape()](const Grads& g, const BackwardContext&) -> Grads {
                       return {reshape(g[0], in_shape)};
                     });
  }
  return out;
}

// Resolves one -1 in `shape` against numel; throws ShapeError naming both shapes.
Shape infer_shape(const char* op, const Shape& in_shape, const Shape& shape) {
  const std::int64_t numel = numel_of(in_shape);
  auto fail = [&](const std::string& why) {
    throw ShapeError(std::string(op) + ": cannot reshape " + shape_str(in_shape) + " (" +
                     std::to_string(numel) + " elements) to " + shape_str(shape) + ": " + why);
  };
  std::int64_t known = 1;
  std::int64_t inferred = -1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred >= 0) fail("only one dim may be -1");
      inferred = static_cast<std::int64_t>(d);
    } else if (shape[d] < 0) {
      fail("negative size " + std::to_string(shape[d]));
    } else {
      known *= shape[d];
    }
  }
  Shape out = shape;
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0)
      fail("the -1 dim cannot be inferred from " + std::to_string(known) + " known elements");
    out[static_cast<std::size_t>(inferred)] = numel / known;
  } else if (known != numel) {
    fail("the target has " + std::to_string(known) + " elements");
  }
  return out;
}

// The tensor as (outer, size, inner) around `dim` (core/broadcast.hpp).
detail::AroundDim split_at(const Shape& shape, std::size_t dim) {
  return detail::around_dim(shape, static_cast<std::int64_t>(dim));
}

// out = x[..., start : start + step*length : step, ...] along dim (no checks, no graph).
Tensor copy_slice(const Tensor& x, std::size_t dim, std::int64_t start, std::int64_t step,
                  std::int64_t length) {
  Shape out_shape = x.shape();
  out_shape[dim] = length;
  Tensor out = detail::new_tensor(out_shape, x.dtype(), x.device());
  const detail::AroundDim s = split_at(x.shape(), dim);
  // (outer, length, inner) read with the slice's strides; with step 1 each outer row is one
  // block of length * inner.
  BlockCopy c{s.outer,        length, s.inner,          start * s.inner, s.n * s.inner,
              step * s.inner, 0,      length * s.inner, s.inner};
  if (step == 1)
    c = {s.outer, 1, length * s.inner, start * s.inner, s.n * s.inner, 0, 0, length * s.inner, 0};
  kernels_for(x.device(), "slice").copy_blocks(x, out, c);
  return out;
}

// The backward of copy_slice: zeros of in_shape with g written into the slice.
Tensor scatter_slice(const Tensor& g, const Shape& in_shape, std::size_t dim, std::int64_t start,
                     std::int64_t step) {
  Tensor out = zeros(in_shape, g.options());
  const detail::AroundDim s = split_at(in_shape, dim);
  const std::int64_t length = g.shape()[dim];
  // g (outer, length, inner) written with the slice's strides.
  const BlockCopy c{s.outer,         length,        s.inner,       0, length * s.inner, s.inner,
                    start * s.inner, s.n * s.inner, step * s.inner};
  kernels_for(g.device(), "slice backward").copy_blocks(g, out, c);
  return out;
}

// x (*in) -> y (*in[perm]); dx = dy permuted by the inverse of perm.
Tensor permute_impl(const char* op, const Tensor& x, const Shape& perm) {
  const Shape& in_shape = x.shape();
  Shape out_shape(perm.size());
  Shape inverse(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    out_shape[d] = in_shape[static_cast<std::size_t>(perm[d])];
    inverse[static_cast<std::size_t>(perm[d])] = static_cast<std::int64_t>(d);
  }
  Tensor out = detail::new_tensor(out_shape, x.dtype(), x.device());
  kernels_for(x.device(), op).permute(x, perm, out);
  if (should_record(out, {x})) {
    autograd::record(op, {x}, {&out}, {},
                     [inverse](const Grads& g, const BackwardContext&) -> Grads {
                       return {permute(g[0], inverse)};
                     });
  }
  return out;
}

}  // namespace

// --- views: reshape, view, flatten, unsqueeze, squeeze ---------------------------------

// x (*in) -> y (*shape), same storage; dx = dy.reshape(in)
Tensor reshape(const Tensor& x, const Shape& shape) {
  check_input("reshape", x);
  return view_op("reshape", x, infer_shape("reshape", x.shape(), shape));
}

Tensor view(const Tensor& x, const Shape& shape) {
  check_input("view", x);
  return view_op("view", x, infer_shape("view", x.shape(), shape));
}

// x (a..., s..., b...) -> (a..., prod(s), b...) for dims start..end; a 0-d x gives (1)
// (its dims must still lie in [-1, 0], as in PyTorch).
Tensor flatten(const Tensor& x, std::int64_t start_dim, std::int64_t end_dim) {
  check_input("flatten", x);
  const auto start = static_cast<std::size_t>(normalize_dim(start_dim, x.dim(), "flatten"));
  const auto end = static_cast<std::size_t>(normalize_dim(end_dim, x.dim(), "flatten"));
  if (x.dim() == 0) return view_op("flatten", x, {1});
  if (start > end)
    throw ShapeError("flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " +
                     std::to_string(end_dim) + " for input " + detail::describe(x));
  const Shape& in = x.shape();
  Shape shape(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(start));
  std::int64_t merged = 1;
  for (std::size_t d = start; d <= end; ++d) merged *= in[d];
  shape.push_back(merged);
  shape.insert(shape.end(), in.begin() + static_cast<std::ptrdiff_t>(end) + 1, in.end());
  return view_op("flatten", x, shape);
}

// x (*in) -> in with a 1 inserted at dim (dim in [-rank-1, rank]); dx = dy.reshape(in)
Tensor unsqueeze(const Tensor& x, std::int64_t dim) {
  check_input("unsqueeze", x);
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim() + 1, "unsqueeze"));
  Shape shape = x.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return view_op("unsqueeze", x, shape);
}

// x (*in) -> in without its size-1 dims; dx = dy.reshape(in)
Tensor squeeze(const Tensor& x) {
  check_input("squeeze", x);
  Shape shape;
  for (auto s : x.shape())
    if (s != 1) shape.push_back(s);
  return view_op("squeeze", x, shape);
}

Tensor squeeze(const Tensor& x, std::int64_t dim) {
  check_input("squeeze", x);
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim(), "squeeze"));
  Shape shape = x.shape();
  if (x.dim() > 0 && shape[d] == 1) shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  return view_op("squeeze", x, shape);
}

// --- transpose and permute (materialized) --------------------------------------------

Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) {
  check_input("transpose", x);
  const std::int64_t rank = x.dim();
  const std::int64_t a = normalize_dim(dim0, rank, "transpose");
  const std::int64_t b = normalize_dim(dim1, rank, "transpose");
  Shape perm(static_cast<std::size_t>(rank));
  for (std::int64_t d = 0; d < rank; ++d) perm[static_cast<std::size_t>(d)] = d;
  if (rank > 0) std::swap(perm[static_cast<std::size_t>(a)], perm[static_cast<std::size_t>(b)]);
  return permute_impl("transpose", x, perm);
}

Tensor permute(const Tensor& x, const Shape& dims) {
  check_input("permute", x);
  const std::int64_t rank = x.dim();
  if (static_cast<std::int64_t>(dims.size()) != rank)
    throw ShapeError("permute: dims " + dims_str(dims) + " name " + std::to_string(dims.size()) +
                     " dims but the input " + detail::describe(x) + " has " + std::to_string(rank));
  Shape perm(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t d = normalize_dim(dims[i], rank, "permute");
    if (seen[static_cast<std::size_t>(d)])
      throw ShapeError("permute: dim " + std::to_string(d) + " is repeated in dims " +
                       dims_str(dims) + " for input " + detail::describe(x));
    seen[static_cast<std::size_t>(d)] = true;
    perm[i] = d;
  }
  return permute_impl("permute", x, perm);
}

// --- expand ---------------------------------------------------------------------------

// x (*in) -> y (*shape) broadcast (materialized); dx = sum_to(dy, in)
Tensor expand(const Tensor& x, const Shape& shape) {
  check_input("expand", x);
  const Shape& in = x.shape();
  auto fail = [&](const std::string& why) {
    throw ShapeError("expand: cannot expand " + detail::describe(x) + " to " + shape_str(shape) +
                     ": " + why);
  };
  if (shape.size() < in.size()) fail("the target has fewer dims than the input");
  const std::size_t lead = shape.size() - in.size();
  Shape out_shape(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t target = shape[d];
    if (d < lead) {
      if (target < 0) fail("new leading dim " + std::to_string(d) + " must have a size, not -1");
      out_shape[d] = target;
      continue;
    }
    const std::int64_t have = in[d - lead];
    if (target == -1 || target == have) {
      out_shape[d] = have;
    } else if (have == 1 && target >= 0) {
      out_shape[d] = target;
    } else {
      fail("dim " + std::to_string(d) + " has size " + std::to_string(have) +
           " (only size-1 dims can be expanded)");
    }
  }
  Tensor out = detail::new_tensor(out_shape, x.dtype(), x.device());
  kernels_for(x.device(), "expand").expand(x, out);
  if (should_record(out, {x})) {
    autograd::record(
        "expand", {x}, {&out}, {},
        [in](const Grads& g, const BackwardContext&) -> Grads { return {sum_to(g[0], in)}; });
  }
  return out;
}

// --- concat and stack -----------------------------------------------------------------

namespace {

// concat's output shape: the inputs' shared shape with the sizes along d summed; the
// inputs must agree in dtype, device and every other dim.
Shape concat_shape(const std::vector<Tensor>& tensors, std::size_t d) {
  const Tensor& first = tensors[0];
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::check_same_dtype("concat", first, t);
    detail::check_same_device("concat", first, t);
    bool match = t.dim() == first.dim();
    for (std::size_t k = 0; match && k < out_shape.size(); ++k)
      match = k == d || t.shape()[k] == first.shape()[k];
    if (!match)
      throw ShapeError("concat: tensor " + std::to_string(i) + " has shape " +
                       shape_str(t.shape()) + " but tensor 0 has shape " +
                       shape_str(first.shape()) + "; shapes must match except in dim " +
                       std::to_string(d));
    out_shape[d] += t.shape()[d];
  }
  return out_shape;
}

// Copies each input into its column range of `out` along d (outer, block per input).
void concat_into(const std::vector<Tensor>& tensors, Tensor& out, std::size_t d) {
  const detail::AroundDim s = split_at(out.shape(), d);
  Kernels& kernels = kernels_for(out.device(), "concat");
  std::int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const std::int64_t block = t.shape()[d] * s.inner;
    kernels.copy_blocks(t, out, {s.outer, 1, block, 0, block, 0, offset, s.n * s.inner, 0});
    offset += block;
  }
}

}  // namespace

// xs[i] (a, n_i, b) along dim -> y (a, sum n_i, b); dx_i = narrow(dy, dim, offset_i, n_i)
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  if (tensors.empty()) throw ValueError("concat: expected at least one tensor, got none");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    detail::check_defined("concat", tensors[i], ("tensor " + std::to_string(i)).c_str());
  }
  const Tensor& first = tensors[0];
  if (first.dim() == 0)
    throw ShapeError("concat: tensor 0 " + detail::describe(first) +
                     " is zero-dimensional and cannot be concatenated (use stack)");
  const auto d = static_cast<std::size_t>(normalize_dim(dim, first.dim(), "concat"));
  Tensor out = detail::new_tensor(concat_shape(tensors, d), first.dtype(), first.device());
  concat_into(tensors, out, d);
  if (should_record(out, tensors)) {
    Shape sizes;
    for (const Tensor& t : tensors) sizes.push_back(t.shape()[d]);
    autograd::record("concat", tensors, {&out}, {},
                     [sizes, d](const Grads& g, const BackwardContext& ctx) -> Grads {
                       Grads grads(sizes.size());
                       std::int64_t start = 0;
                       for (std::size_t i = 0; i < sizes.size(); ++i) {
                         if (ctx.needs_grad(i))
                           grads[i] = narrow(g[0], static_cast<std::int64_t>(d), start, sizes[i]);
                         start += sizes[i];
                       }
                       return grads;
                     });
  }
  return out;
}

// xs[i] (*s) -> y with a new dim of size n at dim; = concat of unsqueeze(x_i, dim)
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  if (tensors.empty()) throw ValueError("stack: expected at least one tensor, got none");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    detail::check_defined("stack", tensors[i], ("tensor " + std::to_string(i)).c_str());
    if (tensors[i].shape() != tensors[0].shape())
      throw ShapeError("stack: tensor " + std::to_string(i) + " has shape " +
                       shape_str(tensors[i].shape()) + " but tensor 0 has shape " +
                       shape_str(tensors[0].shape()) + "; stacked tensors must have equal shapes");
  }
  const std::int64_t d = normalize_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(unsqueeze(t, d));
  return concat(expanded, d);
}

// --- narrow, slice, select and the splits ----------------------------------------------

// x (a, n, b) -> y (a, length, b) = x[:, start:start+length]; dx = zeros with dy in the slice
Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  check_input("narrow", x);
  if (x.dim() == 0)
    throw ShapeError("narrow: cannot narrow a zero-dimensional tensor " + detail::describe(x));
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim(), "narrow"));
  const std::int64_t size = x.shape()[d];
  const std::int64_t first = start < 0 && start >= -size ? start + size : start;
  if (first < 0 || length < 0 || first > size || length > size - first)
    throw IndexError("narrow: start " + std::to_string(start) + " and length " +
                     std::to_string(length) + " are out of range for dim " + std::to_string(d) +
                     " of size " + std::to_string(size) + " in input " + detail::describe(x));
  Tensor out = copy_slice(x, d, first, 1, length);
  if (should_record(out, {x})) {
    autograd::record("narrow", {x}, {&out}, {},
                     [in = x.shape(), d, first](const Grads& g, const BackwardContext&) -> Grads {
                       return {scatter_slice(g[0], in, d, first, 1)};
                     });
  }
  return out;
}

// x (a, n, b) -> y (a, m, b) = x[:, start:end:step]; dx = zeros with dy at the picked rows
Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step) {
  check_input("slice", x);
  if (x.dim() == 0)
    throw ShapeError("slice: cannot slice a zero-dimensional tensor " + detail::describe(x));
  if (step <= 0)
    throw ValueError("slice: step must be positive, got " + std::to_string(step) + " for input " +
                     detail::describe(x));
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim(), "slice"));
  const std::int64_t size = x.shape()[d];
  auto clamp = [size](std::int64_t i) {
    if (i < 0) i += size;
    return std::min(std::max(i, std::int64_t{0}), size);
  };
  const std::int64_t first = clamp(start);
  const std::int64_t last = clamp(end);
  const std::int64_t length = last > first ? (last - first - 1) / step + 1 : 0;  // no overflow
  // With one row or none the step is never taken; 1 keeps the kernels' offsets in range.
  const std::int64_t stride = length > 1 ? step : 1;
  Tensor out = copy_slice(x, d, first, stride, length);
  if (should_record(out, {x})) {
    autograd::record(
        "slice", {x}, {&out}, {},
        [in = x.shape(), d, first, stride](const Grads& g, const BackwardContext&) -> Grads {
          return {scatter_slice(g[0], in, d, first, stride)};
        });
  }
  return out;
}

// x (a, n, b) -> y (a, b) = x[:, index]; = squeeze(narrow(x, dim, index, 1), dim)
Tensor select(const Tensor& x, std::int64_t dim, std::int64_t index) {
  check_input("select", x);
  if (x.dim() == 0)
    throw ShapeError("select: cannot select from a zero-dimensional tensor " + detail::describe(x));
  const std::int64_t d = normalize_dim(dim, x.dim(), "select");
  const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
  if (index < -size || index >= size)
    throw IndexError("select: index " + std::to_string(index) + " is out of range for dim " +
                     std::to_string(d) + " of size " + std::to_string(size) + " in input " +
                     detail::describe(x));
  const std::int64_t i = index < 0 ? index + size : index;
  return squeeze(narrow(x, d, i, 1), d);
}

// unbind: x (a, n, b) -> n tensors (a, b), piece i = x[:, i] (torch.unbind). One node for
// all pieces, so a gradient reaching several of them is assembled once:
//   dx = stack(dpiece_0, ..., dpiece_{n-1}) along dim, zeros for pieces without a gradient
std::vector<Tensor> unbind(const Tensor& x, std::int64_t dim) {
  check_input("unbind", x);
  if (x.dim() == 0)
    throw ShapeError("unbind: cannot unbind a zero-dimensional tensor " + detail::describe(x));
  const auto d = static_cast<std::size_t>(normalize_dim(dim, x.dim(), "unbind"));
  const std::int64_t n = x.shape()[d];
  Shape piece_shape = x.shape();
  piece_shape.erase(piece_shape.begin() + static_cast<std::ptrdiff_t>(d));
  std::vector<Tensor> pieces;
  pieces.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    pieces.push_back(detail::alias(copy_slice(x, d, i, 1, 1), piece_shape));
  if (n > 0 && should_record(pieces[0], {x})) {
    std::vector<Tensor*> outputs;
    for (Tensor& p : pieces) outputs.push_back(&p);
    autograd::record(
        "unbind", {x}, outputs, {},
        [d, piece_shape, options = x.options()](const Grads& g, const BackwardContext&) -> Grads {
          std::vector<Tensor> parts;
          for (const Tensor& gi : g)
            parts.push_back(gi.defined() ? gi : zeros(piece_shape, options));
          return {stack(parts, static_cast<std::int64_t>(d))};
        });
  }
  return pieces;
}

std::vector<Tensor> split_with_sizes(const Tensor& x, const Shape& sizes, std::int64_t dim) {
  check_input("split_with_sizes", x);
  if (x.dim() == 0)
    throw ShapeError("split_with_sizes: cannot split a zero-dimensional tensor " +
                     detail::describe(x));
  const std::int64_t d = normalize_dim(dim, x.dim(), "split_with_sizes");
  const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0)
      throw ValueError("split_with_sizes: negative size in " + shape_str(sizes) + " for input " +
                       detail::describe(x));
    total += s;
  }
  if (total != size)
    throw ShapeError("split_with_sizes: sizes " + shape_str(sizes) + " add up to " +
                     std::to_string(total) + " but dim " + std::to_string(d) + " of input " +
                     detail::describe(x) + " has size " + std::to_string(size));
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  std::int64_t start = 0;
  for (auto s : sizes) {
    pieces.push_back(narrow(x, d, start, s));
    start += s;
  }
  return pieces;
}

// Pieces of split_size along dim; the last holds the remainder (torch.split).
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim) {
  check_input("split", x);
  if (x.dim() == 0)
    throw ShapeError("split: cannot split a zero-dimensional tensor " + detail::describe(x));
  const std::int64_t d = normalize_dim(dim, x.dim(), "split");
  const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
  if (split_size < 0 || (split_size == 0 && size > 0))
    throw ValueError("split: split_size must be positive, got " + std::to_string(split_size) +
                     " for dim " + std::to_string(d) + " of input " + detail::describe(x));
  Shape sizes;
  if (split_size == 0) {
    sizes.push_back(0);
  } else {
    for (std::int64_t start = 0; start < size; start += split_size)
      sizes.push_back(std::min(split_size, size - start));
    if (sizes.empty()) sizes.push_back(0);  // a size-0 dim gives one empty piece
  }
  return split_with_sizes(x, sizes, d);
}

// At most `chunks` pieces of ceil(size / chunks) (torch.chunk); `chunks` empty pieces for
// a size-0 dim.
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  check_input("chunk", x);
  if (chunks <= 0)
    throw ValueError("chunk: chunks must be positive, got " + std::to_string(chunks) +
                     " for input " + detail::describe(x));
  if (x.dim() == 0)
    throw ShapeError("chunk: cannot chunk a zero-dimensional tensor " + detail::describe(x));
  const std::int64_t d = normalize_dim(dim, x.dim(), "chunk");
  const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
  if (size == 0) return split_with_sizes(x, Shape(static_cast<std::size_t>(chunks), 0), d);
  return split(x, (size + chunks - 1) / chunks, d);
}

}  // namespace headgrad
