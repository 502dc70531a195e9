// The gathers' CPU kernels (Kernels::index_select, index_add, one_hot, check_index_range):
// forward gathers copy whole contiguous rows; the backward scatter-adds rows into a zeroed
// gradient in index order, so repeated indices accumulate.
#include <algorithm>
#include <cstring>

#include "core/dispatch.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/permute.hpp"

namespace headgrad::cpu {

using headgrad::detail::ptr;

namespace {

// dst[(o, i, :)] += src[(o, k, :)] with i = idx[k], for o < outer, k < n: the scatter-add
// that is the backward of every gather here.
template <typename T>
void scatter_add_rows(const T* src, T* dst, const std::int64_t* idx, std::int64_t n,
                      std::int64_t outer, std::int64_t size, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t k = 0; k < n; ++k) {
      const T* s = src + (o * n + k) * inner;
      T* d = dst + (o * size + idx[k]) * inner;
      for (std::int64_t j = 0; j < inner; ++j) d[j] += s[j];
    }
  }
}

// dst[(o, k, :)] = src[(o, idx[k], :)], for o < outer, k < n (any dtype, by element size).
void gather_rows(const Tensor& src, Tensor& dst, const std::int64_t* idx, std::int64_t n,
                 std::int64_t outer, std::int64_t size, std::int64_t inner) {
  with_element_type(element_size(src.dtype()), [&]<typename U>() {
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

void CpuKernels::index_select(const Tensor& x, std::int64_t outer, std::int64_t dim,
                              std::int64_t inner, const Tensor& index, Tensor& out) {
  gather_rows(x, out, ptr<std::int64_t>(index), index.numel(), outer, dim, inner);
}

void CpuKernels::index_add(const Tensor& g, std::int64_t outer, std::int64_t dim,
                           std::int64_t inner, const Tensor& index, Tensor& dx) {
  headgrad::detail::dispatch_floating(g.dtype(), "index_add", [&]<typename T>() {
    std::fill(ptr<T>(dx), ptr<T>(dx) + dx.numel(), T(0));
    scatter_add_rows(ptr<T>(g), ptr<T>(dx), ptr<std::int64_t>(index), index.numel(), outer, dim,
                     inner);
  });
}

void CpuKernels::one_hot(const Tensor& indices, std::int64_t classes, Tensor& out) {
  const std::int64_t* idx = ptr<std::int64_t>(indices);
  headgrad::detail::dispatch_all(out.dtype(), [&]<typename T>() {
    T* y = ptr<T>(out);
    std::fill(y, y + out.numel(), T(0));
    const std::int64_t n = indices.numel();
    for (std::int64_t i = 0; i < n; ++i) y[i * classes + idx[i]] = static_cast<T>(1);
  });
}

void CpuKernels::check_index_range(const Tensor& index, std::int64_t limit, Tensor& bad) {
  const std::int64_t* idx = ptr<std::int64_t>(index);
  std::int64_t first = 0;
  const std::int64_t n = index.numel();
  for (std::int64_t i = 0; i < n && first == 0; ++i)
    if (idx[i] < 0 || idx[i] >= limit) first = i + 1;
  *ptr<std::int64_t>(bad) = first;
}

}  // namespace headgrad::cpu
