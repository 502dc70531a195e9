// The CPU's copies behind the shape ops (Kernels::copy_blocks, permute, expand): whole
// contiguous blocks by memcpy, the permuted copy of permute.hpp, and the broadcast loop.
#include <array>
#include <cstring>

#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/permute.hpp"

namespace headgrad::cpu {

void CpuKernels::copy_blocks(const Tensor& src, Tensor& dst, const BlockCopy& c) {
  with_element_type(element_size(src.dtype()), [&]<typename U>() {
    cpu::copy_blocks(static_cast<const U*>(src.raw_data()) + c.src_offset,
                     static_cast<U*>(dst.raw_data()) + c.dst_offset, c.outer, c.count, c.inner,
                     c.src_outer, c.src_step, c.dst_outer, c.dst_step);
  });
}

void CpuKernels::permute(const Tensor& x, const Shape& perm, Tensor& out) {
  with_element_type(element_size(x.dtype()), [&]<typename U>() {
    permute_copy(static_cast<const U*>(x.raw_data()), static_cast<U*>(out.raw_data()), x.shape(),
                 perm);
  });
}

void CpuKernels::expand(const Tensor& x, Tensor& out) {
  if (out.numel() == 0) return;
  with_element_type(element_size(x.dtype()), [&]<typename U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out.raw_data());
    broadcast_loop<1>(out.shape(), {x.shape()},
                      [&](std::int64_t o, const std::array<std::int64_t, 1>& off, std::int64_t n,
                          const std::array<std::int64_t, 1>& stride) {
                        const U* s = src + off[0];
                        U* d = dst + o;
                        if (stride[0] == 1) {
                          std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(U));
                        } else {
                          for (std::int64_t i = 0; i < n; ++i) d[i] = s[i * stride[0]];
                        }
                      });
  });
}

}  // namespace headgrad::cpu
