// Vectorized maps over contiguous arrays with xsimd (exp, log, tanh, erf, ...), falling
// back to scalar code for the tail. Used by elementwise ops and softmax.
#pragma once

#include <cmath>
#include <cstdint>

#include <xsimd/xsimd.hpp>

namespace headgrad::cpu {

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
    batch e = xsimd::exp(batch::load_unaligned(x + i) - s);
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
