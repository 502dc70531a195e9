// Vectorized maps over contiguous arrays with xsimd (exp, log, tanh, erf, ...), falling
// back to scalar code for the tail. Used by elementwise ops and softmax.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "core/parallel.hpp"

namespace headgrad::cpu {

// exp of an xsimd batch or a scalar, defined on every input. For float64 batches on AVX2,
// xsimd's exp converts x * log2(e) to int64 lane by lane (there is no vector instruction
// for it), which is undefined behaviour for -inf, +inf and NaN, and attention's masked
// scores are -inf. The argument is clamped to [-1000, 1000] first (exp is exactly 0 below
// and inf above, as for the infinities) and NaN lanes pass through: the results are those
// of exp on the input itself. float32 converts with a vector instruction and needs none of this.
template <typename V>
inline V simd_exp(const V& v) {
  if constexpr (std::is_arithmetic_v<V>) {
    return std::exp(v);
  } else if constexpr (std::is_same_v<typename V::value_type, double>) {
    const auto nan = xsimd::isnan(v);
    const V clamped = xsimd::min(xsimd::max(v, V(-1000.0)), V(1000.0));
    return xsimd::select(nan, v, xsimd::exp(xsimd::select(nan, V(0.0), clamped)));
  } else {
    return xsimd::exp(v);
  }
}

// y[i] = f(x[i]) where f is callable on both xsimd batches and scalars.
template <typename T, typename F>
inline void simd_map(const T* x, T* y, std::int64_t n, F&& f) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  for (; i + w <= n; i += w) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = f(x[i]);
}

// Same with two inputs: z[i] = f(x[i], y[i]).
template <typename T, typename F>
inline void simd_map2(const T* x, const T* y, T* z, std::int64_t n, F&& f) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  for (; i + w <= n; i += w)
    f(batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(z + i);
  for (; i < n; ++i) z[i] = f(x[i], y[i]);
}

// simd_map and simd_map2 split across the thread pool (core/parallel.hpp) in pieces that
// start at multiples of 64 elements, so every element goes through the same instructions
// as in one call (the scalar tail stays at the very end): the same bits at every thread
// count. Arrays below 16384 elements stay on the calling thread.
template <typename T, typename F>
inline void parallel_simd_map(const T* x, T* y, std::int64_t n, F&& f) {
  detail::parallel_for_aligned(n, 64, 16384, [&](std::int64_t begin, std::int64_t end) {
    simd_map(x + begin, y + begin, end - begin, f);
  });
}

template <typename T, typename F>
inline void parallel_simd_map2(const T* x, const T* y, T* z, std::int64_t n, F&& f) {
  detail::parallel_for_aligned(n, 64, 16384, [&](std::int64_t begin, std::int64_t end) {
    simd_map2(x + begin, y + begin, z + begin, end - begin, f);
  });
}

// max of x[0..n) (-inf for n == 0); NaN if any entry is NaN, as torch.max. (A bare
// xsimd::max drops NaN in some lanes, so NaN entries are tracked separately.)
template <typename T>
inline T simd_max(const T* x, std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  T m = -INFINITY;
  bool saw_nan = false;
  if (n >= w) {
    batch acc = batch::load_unaligned(x);
    auto nan = xsimd::isnan(acc);  // not acc != acc: xsimd's != is ordered (false on NaN)
    for (i = w; i + w <= n; i += w) {
      const batch v = batch::load_unaligned(x + i);
      acc = xsimd::max(acc, v);
      nan = nan | xsimd::isnan(v);
    }
    saw_nan = xsimd::any(nan);
    alignas(64) T lanes[w];
    acc.store_aligned(lanes);
    for (std::int64_t j = 0; j < w; ++j) m = lanes[j] > m ? lanes[j] : m;
  }
  for (; i < n; ++i) {
    saw_nan = saw_nan || x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  return saw_nan ? static_cast<T>(NAN) : m;
}

// y[i] = exp(x[i] - shift); returns the sum of the y[i].
template <typename T>
inline T simd_exp_shift_sum(const T* x, T* y, std::int64_t n, T shift) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  batch acc(T(0));
  const batch s(shift);
  for (; i + w <= n; i += w) {
    batch e = simd_exp(batch::load_unaligned(x + i) - s);
    e.store_unaligned(y + i);
    acc += e;
  }
  T total = xsimd::hadd(acc);
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - shift);
    total += y[i];
  }
  return total;
}

// sum of x[i] * y[i].
template <typename T>
inline T simd_dot(const T* x, const T* y, std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  batch acc(T(0));
  for (; i + w <= n; i += w)
    acc = xsimd::fma(batch::load_unaligned(x + i), batch::load_unaligned(y + i), acc);
  T total = xsimd::hadd(acc);
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

// sum of x[i].
template <typename T>
inline T simd_sum(const T* x, std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  batch acc(T(0));
  for (; i + w <= n; i += w) acc += batch::load_unaligned(x + i);
  T total = xsimd::hadd(acc);
  for (; i < n; ++i) total += x[i];
  return total;
}

}  // namespace headgrad::cpu
