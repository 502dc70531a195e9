// libtorch-style indexing (headgrad/core/indexing.hpp): Tensor::index, composed of select,
// slice, unsqueeze and index_select so that it is differentiable through them, and
// Tensor::index_put_, which writes a value into the indexed region in place.
#include <algorithm>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "ops/inplace.hpp"

namespace headgrad {

using indexing::TensorIndex;

namespace {

// How many dims of the input an index list names (None and Ellipsis name none); throws
// for a second Ellipsis, a boolean tensor, or more dims than the input has.
std::int64_t named_dims(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  std::int64_t named = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_ellipsis()) {
      ++ellipses;
    } else if (i.is_tensor()) {
      const Tensor& t = i.tensor();
      t.check_defined(op);
      if (t.dtype() != kInt64 || t.dim() > 1)
        throw IndexError(std::string(op) +
                         ": a tensor index must be a 0-d or 1-d int64 tensor, got " + t.describe() +
                         " (boolean masks: use masked_fill or where)");
      ++named;
    } else if (!i.is_none()) {
      ++named;
    }
  }
  if (ellipses > 1) throw IndexError(std::string(op) + ": an index can hold one Ellipsis only");
  if (named > x.dim())
    throw IndexError(std::string(op) + ": too many indices (" + std::to_string(named) +
                     ") for a tensor of " + std::to_string(x.dim()) + " dims " + x.describe());
  return named;
}

// Python's slice bounds for a dim of `size`: the rows start, start + step, ... < stop.
struct Rows {
  std::int64_t start = 0, count = 0, step = 1;
};
Rows slice_rows(const indexing::Slice& s, std::int64_t size, const char* op) {
  if (s.step <= 0)
    throw ValueError(std::string(op) + ": a Slice step must be positive, got " +
                     std::to_string(s.step));
  auto clamp = [size](std::int64_t i) {
    if (i < 0) i += size;
    return std::min(std::max(i, std::int64_t{0}), size);
  };
  const std::int64_t first = clamp(s.start.value_or(0)), last = clamp(s.stop.value_or(size));
  return {first, last > first ? (last - first - 1) / s.step + 1 : 0, s.step};
}

std::int64_t checked_row(std::int64_t i, std::int64_t size, std::int64_t dim, const char* op) {
  if (i < -size || i >= size)
    throw IndexError(std::string(op) + ": index " + std::to_string(i) +
                     " is out of range for dim " + std::to_string(dim) + " of size " +
                     std::to_string(size));
  return i < 0 ? i + size : i;
}

// A 1-d index tensor with negative entries counted from the end of a dim of `size`, as
// PyTorch's x[ids] does (index_select itself takes entries in [0, size) only); the tensor
// itself when no entry is negative. IndexError for an entry outside [-size, size).
Tensor wrapped_ids(const Tensor& ids, std::int64_t size, std::int64_t dim, const char* op) {
  const Tensor cpu = ids.to(Device::cpu());
  const std::int64_t* first = cpu.data<std::int64_t>();
  const std::int64_t* last = first + cpu.numel();
  if (std::none_of(first, last, [](std::int64_t i) { return i < 0; })) return ids;
  std::vector<std::int64_t> v(first, last);
  for (std::int64_t& i : v) i = checked_row(i, size, dim, op);
  return from_vector<std::int64_t>(v, {static_cast<std::int64_t>(v.size())}).to(ids.device());
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  check_defined("index");
  const std::int64_t ellipsis_dims = dim() - named_dims(*this, indices, "index");
  Tensor out = *this;
  std::int64_t dim = 0;     // the next dim of `out` an index applies to
  std::int64_t source = 0;  // the same dim of the input, for messages
  for (const TensorIndex& i : indices) {
    if (i.is_ellipsis()) {
      dim += ellipsis_dims;
      source += ellipsis_dims;
      continue;
    }
    if (i.is_none()) {
      out = headgrad::unsqueeze(out, dim++);
      continue;
    }
    if (i.is_integer()) {
      out = headgrad::select(out, dim, checked_row(i.integer(), out.size(dim), source, "index"));
    } else if (i.is_slice()) {
      const Rows r = slice_rows(i.slice(), out.size(dim), "index");
      // One past the last row read: (count - 1) * step < size, so no overflow, whatever
      // the step (start + count * step would overflow for a step near INT64_MAX).
      const std::int64_t end = r.count == 0 ? r.start : r.start + (r.count - 1) * r.step + 1;
      out = headgrad::slice(out, dim, r.start, end, r.step);
      ++dim;
    } else if (i.tensor().dim() == 0) {
      const auto row = i.tensor().item<std::int64_t>();
      out = headgrad::select(out, dim, checked_row(row, out.size(dim), source, "index"));
    } else {
      out =
          headgrad::index_select(out, dim, wrapped_ids(i.tensor(), out.size(dim), source, "index"));
      ++dim;
    }
    ++source;
  }
  return out;
}

// The region x[indices] as, per dim of the region, the rows of x it reads (or, for a None,
// no dim of x); the value is broadcast to the region's shape, and every element of the
// region is written at its offset in x.
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) {
  detail::check_inplace(*this, "index_put_");
  value.check_defined("index_put_");
  const std::int64_t ellipsis_dims = this->dim() - named_dims(*this, indices, "index_put_");
  const Shape strides = contiguous_strides(shape());
  // Each region dim reads rows[k] of x's dim x_dim[k] (-1: a None, size 1).
  std::vector<std::vector<std::int64_t>> rows;
  std::vector<std::int64_t> x_dim;
  std::int64_t base = 0, dim = 0;
  auto whole = [&](std::int64_t d) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(shape()[d]));
    for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<std::int64_t>(k);
    rows.push_back(std::move(all));
    x_dim.push_back(d);
  };
  for (const TensorIndex& i : indices) {
    if (i.is_ellipsis()) {
      for (std::int64_t k = 0; k < ellipsis_dims; ++k) whole(dim++);
    } else if (i.is_none()) {
      rows.push_back({0});
      x_dim.push_back(-1);
    } else if (i.is_integer() || (i.is_tensor() && i.tensor().dim() == 0)) {
      const std::int64_t raw = i.is_integer() ? i.integer() : i.tensor().item<std::int64_t>();
      base += checked_row(raw, shape()[dim], dim, "index_put_") * strides[dim];
      ++dim;
    } else if (i.is_slice()) {
      const Rows r = slice_rows(i.slice(), shape()[dim], "index_put_");
      std::vector<std::int64_t> picked;
      for (std::int64_t k = 0; k < r.count; ++k) picked.push_back(r.start + k * r.step);
      rows.push_back(std::move(picked));
      x_dim.push_back(dim++);
    } else {
      std::vector<std::int64_t> picked = i.tensor().to(Device::cpu()).to_vector<std::int64_t>();
      for (auto& p : picked) p = checked_row(p, shape()[dim], dim, "index_put_");
      rows.push_back(std::move(picked));
      x_dim.push_back(dim++);
    }
  }
  while (dim < this->dim()) whole(dim++);

  Shape region;
  for (const auto& r : rows) region.push_back(static_cast<std::int64_t>(r.size()));
  NoGradGuard no_grad;
  Tensor source = value.to(dtype()).to(Device::cpu());
  try {
    source = headgrad::expand(source, region);
  } catch (const ShapeError&) {
    throw ShapeError("index_put_: a value of shape " + shape_str(value.shape()) +
                     " does not broadcast to the indexed region " + shape_str(region) + " of " +
                     describe());
  }
  Tensor host = device().is_cpu() ? *this : to(Device::cpu());
  const std::int64_t n = numel_of(region);
  const std::size_t bytes = element_size(dtype());
  const char* src = static_cast<const char*>(source.raw_data());
  char* dst = static_cast<char*>(host.raw_data());
  std::vector<std::int64_t> at(region.size(), 0);  // the region's multi-index
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t offset = base;
    for (std::size_t k = 0; k < region.size(); ++k)
      if (x_dim[k] >= 0) offset += rows[k][static_cast<std::size_t>(at[k])] * strides[x_dim[k]];
    std::copy(src + e * bytes, src + (e + 1) * bytes, dst + offset * bytes);
    for (std::size_t k = region.size(); k-- > 0;) {
      if (++at[k] < region[k]) break;
      at[k] = 0;
    }
  }
  if (!device().is_cpu()) copy_(host);
  impl()->storage->bump_version();
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value) {
  return index_put_(indices, scalar_tensor(value, TensorOptions(dtype())));
}

}  // namespace headgrad
