// libtorch-style indexing (headgrad/core/indexing.hpp): Tensor::index, composed of select,
// slice, unsqueeze, permute, reshape and index_select so that it is differentiable through
// them; Tensor::index_put_, which writes (or adds) a value into the indexed region in
// place; and index_put, its differentiable out-of-place form.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "ops/inplace.hpp"

namespace headgrad {

using indexing::TensorIndex;

namespace {

// A boolean mask index (PyTorch's x[mask]): it names as many dims as it has.
bool is_mask(const TensorIndex& i) { return i.is_tensor() && i.tensor().dtype() == kBool; }

// `t` as messages describe it: with the name, dtype and device of `user`, the tensor the
// caller indexes, and t's own shape (index_put_ walks a tensor of int64 positions in
// user's place; its messages must describe the user's tensor, not the positions).
std::string described_as(const Tensor& t, const Tensor& user) {
  return (user.name().empty() ? "" : "'" + user.name() + "' ") + shape_str(t.shape()) + " " +
         to_string(user.dtype()) + detail::device_suffix(user.device());
}

// How many dims of the input an index list names (None and Ellipsis name none, a k-d
// boolean mask k); throws for a second Ellipsis, a tensor that is neither int64 nor bool, a
// 0-d mask, or more dims than the input has (messages describe x as `user`).
std::int64_t named_dims(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op,
                        const Tensor& user) {
  std::int64_t named = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_ellipsis()) {
      ++ellipses;
    } else if (i.is_tensor()) {
      const Tensor& t = i.tensor();
      t.check_defined(op);
      if (t.dtype() != kInt64 && t.dtype() != kBool)
        throw IndexError(std::string(op) + ": a tensor index must be int64 (positions) or bool " +
                         "(a mask), got " + t.describe() + " (convert it with .to(kInt64))");
      if (t.dtype() == kBool && t.dim() == 0)
        throw IndexError(std::string(op) + ": a 0-d boolean index is not supported, got " +
                         t.describe() + " (use a 1-d mask, or None to add a dim)");
      named += t.dtype() == kBool ? t.dim() : 1;
    } else if (!i.is_none()) {
      ++named;
    }
  }
  if (ellipses > 1) throw IndexError(std::string(op) + ": an index can hold one Ellipsis only");
  if (named > x.dim())
    throw IndexError(std::string(op) + ": too many indices (" + std::to_string(named) +
                     ") for a tensor of " + std::to_string(x.dim()) + " dims " +
                     described_as(x, user));
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

// The advanced part of an index list: after the basic entries (integers, slices, None)
// are applied, index tensor j picks positions along dim dims[j] of the result, whose dim
// in the input is sources[j] (for messages).
struct Advanced {
  std::vector<std::int64_t> dims, sources;
  std::vector<Tensor> ids;  // int64, on the CPU
};

// An index tensor met while walking the list: it takes one slot of the walk (a k-d mask
// too, as in libtorch, whose later entries then apply to the mask's second dim onwards),
// and is expanded once the basic entries are applied.
struct Slot {
  std::int64_t dim, source;
  Tensor tensor;  // int64 positions or a bool mask, on the CPU
};

// Adds a boolean mask covering dims dim .. dim + k - 1 of `out` as k index tensors, its
// nonzero() positions (messages describe `out` as `user`).
void add_mask(Advanced& adv, const Tensor& mask, const Tensor& out, std::int64_t dim,
              std::int64_t source, const char* op, const Tensor& user) {
  const std::int64_t k = mask.dim();
  for (std::int64_t j = 0; j < k; ++j)
    if (dim + j >= out.dim() || mask.size(j) != out.size(dim + j))
      throw IndexError(std::string(op) + ": the boolean mask " + mask.describe() +
                       " does not match the shape of the indexed dims " + std::to_string(dim) +
                       " .. " + std::to_string(dim + k - 1) + " of " + described_as(out, user) +
                       " (a mask's later entries apply from its second dim, as in PyTorch)");
  const std::vector<bool> m = mask.to_vector<bool>();
  const Shape strides = contiguous_strides(mask.shape());
  std::vector<std::vector<std::int64_t>> pos(static_cast<std::size_t>(k));
  for (std::size_t e = 0; e < m.size(); ++e) {
    if (!m[e]) continue;
    for (std::int64_t j = 0; j < k; ++j)
      pos[j].push_back(static_cast<std::int64_t>(e) / strides[j] % mask.size(j));
  }
  for (std::int64_t j = 0; j < k; ++j) {
    const auto n = static_cast<std::int64_t>(pos[j].size());
    adv.dims.push_back(dim + j);
    adv.sources.push_back(source + j);
    adv.ids.push_back(from_vector<std::int64_t>(pos[j], {n}));
  }
}

// The slots as index tensors on the dims of `out`: a k-d mask becomes k of them and
// moves the slots after it k - 1 dims on.
Advanced expand_slots(const std::vector<Slot>& slots, const Tensor& out, const char* op,
                      const Tensor& user) {
  Advanced adv;
  std::int64_t shift = 0;
  for (const Slot& s : slots) {
    if (s.tensor.dtype() == kBool) {
      add_mask(adv, s.tensor, out, s.dim + shift, s.source, op, user);
      shift += s.tensor.dim() - 1;
    } else {
      adv.dims.push_back(s.dim + shift);
      adv.sources.push_back(s.source);
      adv.ids.push_back(s.tensor);
    }
  }
  return adv;
}

// The element offsets, within the indexed dims taken row-major, that the index tensors
// pick together: they broadcast to one shape, and element e of it reads, along each
// indexed dim, that tensor's (broadcast) entry e. Negative entries count from the end.
Tensor linear_offsets(const Advanced& adv, const Tensor& out, const char* op) {
  Shape shape = adv.ids[0].shape();
  for (std::size_t j = 1; j < adv.ids.size(); ++j) {
    try {
      shape = broadcast_shapes(shape, adv.ids[j].shape(), op);
    } catch (const ShapeError&) {
      throw IndexError(std::string(op) + ": the index tensors' shapes do not broadcast " +
                       "together: " + shape_str(shape) + " and " + shape_str(adv.ids[j].shape()) +
                       " (several index tensors pick elements pairwise, as in PyTorch)");
    }
  }
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(numel_of(shape)), 0);
  std::int64_t stride = 1;
  for (std::size_t j = adv.ids.size(); j-- > 0;) {
    const std::int64_t size = out.size(adv.dims[j]);
    const std::vector<std::int64_t> ids = expand(adv.ids[j], shape).to_vector<std::int64_t>();
    for (std::size_t e = 0; e < offsets.size(); ++e)
      offsets[e] += checked_row(ids[e], size, adv.sources[j], op) * stride;
    stride *= size;
  }
  return from_vector<std::int64_t>(offsets, shape);
}

// out[advanced] (PyTorch's advanced indexing, differentiable through permute, reshape and
// index_select): the indexed dims become the index tensors' broadcast shape B. They are
// adjacent: B stands where they stood; not adjacent (a slice or None between): B comes
// first, then the other dims in order.
Tensor apply_advanced(const Tensor& out, const Advanced& adv, const char* op) {
  const std::size_t k = adv.ids.size();
  const Tensor offsets = linear_offsets(adv, out, op);
  if (k == 1 && adv.ids[0].dim() == 1)  // one list of rows: x[:, ids]
    return headgrad::index_select(out, adv.dims[0], offsets.to(out.device()));
  Shape order(adv.dims.begin(), adv.dims.end()), rest;
  std::int64_t picked = 1;
  for (std::int64_t d : adv.dims) picked *= out.size(d);
  for (std::int64_t d = 0; d < out.dim(); ++d) {
    if (std::find(adv.dims.begin(), adv.dims.end(), d) != adv.dims.end()) continue;
    order.push_back(d);
    rest.push_back(out.size(d));
  }
  Shape rows = {picked};
  rows.insert(rows.end(), rest.begin(), rest.end());
  const Tensor flat = headgrad::reshape(headgrad::permute(out, order), rows);
  const Tensor gathered = headgrad::index_select(flat, 0, flatten(offsets).to(out.device()));
  Shape result = offsets.shape();
  result.insert(result.end(), rest.begin(), rest.end());
  Tensor y = headgrad::reshape(gathered, result);
  bool adjacent = true;
  for (std::size_t j = 1; j < k; ++j) adjacent = adjacent && adv.dims[j] == adv.dims[j - 1] + 1;
  const std::int64_t before = adv.dims[0];
  if (!adjacent || before == 0) return y;
  // [B, before, after] -> [before, B, after]
  const auto b = static_cast<std::int64_t>(offsets.dim());
  Shape back;
  for (std::int64_t d = 0; d < before; ++d) back.push_back(b + d);
  for (std::int64_t d = 0; d < b; ++d) back.push_back(d);
  for (std::int64_t d = b + before; d < y.dim(); ++d) back.push_back(d);
  return headgrad::permute(y, back);
}

// x[indices]: the basic entries applied in order, then the advanced ones together.
// Messages describe x as `user` (x itself, or the tensor x stands in for).
Tensor index_of(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op,
                const Tensor& user) {
  const std::int64_t ellipsis_dims = x.dim() - named_dims(x, indices, op, user);
  Tensor out = x;
  std::vector<Slot> slots;
  std::int64_t dim = 0;     // the next dim of `out` an index applies to
  std::int64_t source = 0;  // the same dim of the input, for messages
  for (const TensorIndex& i : indices) {
    if (i.is_ellipsis()) {
      dim += ellipsis_dims;
      source += ellipsis_dims;
    } else if (i.is_none()) {
      out = headgrad::unsqueeze(out, dim++);
    } else if (i.is_integer()) {
      out = headgrad::select(out, dim, checked_row(i.integer(), out.size(dim), source++, op));
    } else if (i.is_slice()) {
      const Rows r = slice_rows(i.slice(), out.size(dim), op);
      // One past the last row read: (count - 1) * step < size, so no overflow, whatever
      // the step (start + count * step would overflow for a step near INT64_MAX).
      const std::int64_t end = r.count == 0 ? r.start : r.start + (r.count - 1) * r.step + 1;
      out = headgrad::slice(out, dim++, r.start, end, r.step);
      ++source;
    } else if (i.tensor().dim() == 0 && !is_mask(i)) {  // selects, as in libtorch
      const auto row = i.tensor().to(Device::cpu()).item<std::int64_t>();
      out = headgrad::select(out, dim, checked_row(row, out.size(dim), source++, op));
    } else {
      slots.push_back({dim++, source, i.tensor().to(Device::cpu())});
      source += is_mask(i) ? i.tensor().dim() : 1;
    }
  }
  return slots.empty() ? out : apply_advanced(out, expand_slots(slots, out, op, user), op);
}

// The flat offsets in x of the elements x[indices] reads, in the shape of x[indices].
Tensor region_offsets(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  const Tensor positions =
      arange(static_cast<double>(x.numel()), TensorOptions(kInt64)).reshape(x.shape());
  std::vector<TensorIndex> on_cpu;
  for (const TensorIndex& i : indices)
    on_cpu.push_back(i.is_tensor() ? TensorIndex(i.tensor().to(Device::cpu())) : i);
  return index_of(positions, on_cpu, op, x);
}

// `value` converted to x's dtype on the CPU and broadcast to the region `offsets` spans.
Tensor region_values(const Tensor& x, const Tensor& offsets, const Tensor& value, const char* op) {
  value.check_defined(op);
  const Tensor source = value.detach().to(x.dtype()).to(Device::cpu());
  try {
    return headgrad::expand(source, offsets.shape());
  } catch (const ShapeError&) {
    throw ShapeError(std::string(op) + ": a value of shape " + shape_str(value.shape()) +
                     " does not broadcast to the indexed region " + shape_str(offsets.shape()) +
                     " of " + x.describe());
  }
}

// Writes (or, when accumulating, adds) `values` at `offsets` of the CPU tensor `host`, in
// order: a repeated offset keeps the last value written, or the sum of all.
void write_region(Tensor& host, const Tensor& offsets, const Tensor& values, bool accumulate,
                  const char* op) {
  const std::vector<std::int64_t> at = offsets.to_vector<std::int64_t>();
  const Tensor v = values.contiguous().clone();
  if (accumulate) {
    detail::dispatch_floating(host.dtype(), op, [&]<typename T>() {
      T* dst = detail::ptr<T>(host);
      const T* src = detail::ptr<T>(std::as_const(v));
      for (std::size_t e = 0; e < at.size(); ++e) dst[at[e]] += src[e];
    });
    return;
  }
  const std::size_t bytes = element_size(host.dtype());
  const char* src = static_cast<const char*>(v.raw_data());
  char* dst = static_cast<char*>(host.raw_data());
  for (std::size_t e = 0; e < at.size(); ++e)
    std::copy(src + e * bytes, src + (e + 1) * bytes, dst + at[e] * bytes);
}

// x with `values` written (or added) at `offsets`, as a new tensor on x's device.
Tensor put_copy(const Tensor& x, const Tensor& offsets, const Tensor& values, bool accumulate,
                const char* op) {
  Tensor host = x.detach().to(Device::cpu()).clone();
  write_region(host, offsets, values, accumulate, op);
  return host.to(x.device());
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  check_defined("index");
  return index_of(*this, indices, "index", *this);
}

// Every element of x[indices] as its flat offset in x (the same rules as index), then the
// value broadcast to that region and written element by element.
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value,
                           bool accumulate) {
  detail::check_inplace(*this, "index_put_");
  const Tensor offsets = region_offsets(*this, indices, "index_put_");
  const Tensor values = region_values(*this, offsets, value, "index_put_");
  if (accumulate) detail::check_floating("index_put_ (accumulate)", *this);
  NoGradGuard no_grad;
  Tensor host = to(Device::cpu());  // *this on the CPU, else a copy written back below
  write_region(host, offsets, values, accumulate, "index_put_");
  if (host.impl() != impl()) copy_(host);
  impl()->storage->bump_version();
  return *this;
}

// out = x with value written at x[indices] (added when accumulate), a new tensor.
// Backward, with g = dL/dout of x's shape and R the region's offsets:
//   dx     = g, with zeros at R unless accumulate (those elements were overwritten)
//   dvalue = g read at R (g.flatten()[R], the region's shape), summed to value's shape
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value,
                 bool accumulate) {
  x.check_defined("index_put");
  const Tensor offsets = region_offsets(x, indices, "index_put");
  const Tensor values = region_values(x, offsets, value, "index_put");
  if (accumulate) detail::check_floating("index_put (accumulate)", x);
  if (value.dim() > 0) detail::check_same_device("index_put", x, value);  // 0-d: a scalar
  Tensor out = put_copy(x, offsets, values, accumulate, "index_put");
  if (is_floating(x.dtype()) && autograd::any_requires_grad({x, value})) {
    const Shape value_shape = value.shape();
    autograd::record(
        "index_put", {x, value}, {&out}, {offsets},
        [accumulate, value_shape](const std::vector<Tensor>& g,
                                  const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
          const Tensor& at = ctx.saved(0);
          const Tensor cleared = zeros(at.shape(), TensorOptions(g[0].dtype()));
          Tensor dx = accumulate ? g[0] : put_copy(g[0], at, cleared, false, "index_put backward");
          const Tensor read =
              headgrad::index_select(flatten(g[0]), 0, flatten(at).to(g[0].device()));
          return {dx, sum_to(headgrad::reshape(read, at.shape()), value_shape)};
        });
  }
  return out;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value, bool accumulate) {
  return index_put_(indices, scalar_tensor(value, TensorOptions(dtype())), accumulate);
}

}  // namespace headgrad
