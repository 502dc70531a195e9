// masked_fill's CPU kernel (Kernels::masked_fill).
#include <algorithm>

#include "core/dispatch.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"

namespace headgrad::cpu {

namespace {

// dst = fill where mask else src, for src and dst of the same (contiguous) shape. Runs
// come from broadcast_loop over src's shape; inside a run the mask entries are
// m[i * s], with s = 0 along broadcast dims (then one entry covers the whole run).
template <typename T>
void masked_fill_kernel(const Tensor& src, const Tensor& mask, T fill, Tensor& dst) {
  if (src.numel() == 0) return;
  const T* sp = headgrad::detail::ptr<T>(src);
  T* dp = headgrad::detail::ptr<T>(dst);
  const bool* mp = headgrad::detail::ptr<bool>(mask);
  broadcast_loop<1>(src.shape(), {mask.shape()},
                    [&](std::int64_t o, const std::array<std::int64_t, 1>& mask_offsets,
                        std::int64_t n, const std::array<std::int64_t, 1>& mask_strides) {
                      const bool* m = mp + mask_offsets[0];
                      const std::int64_t s = mask_strides[0];
                      if (s == 0) {
                        if (*m)
                          std::fill(dp + o, dp + o + n, fill);
                        else
                          std::copy(sp + o, sp + o + n, dp + o);
                        return;
                      }
                      for (std::int64_t i = 0; i < n; ++i) dp[o + i] = m[i * s] ? fill : sp[o + i];
                    });
}

}  // namespace

void CpuKernels::masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  headgrad::detail::dispatch_floating(x.dtype(), "masked_fill", [&]<typename T>() {
    masked_fill_kernel<T>(x, mask, static_cast<T>(value), out);
  });
}

}  // namespace headgrad::cpu
