// dropout's kernels on the GPU: the keep-mask, and y = mask != 0 ? x * mask : 0 (the op is in
// src/ops/dropout.cpp).
//
// mask (any shape, n elements, float32 or float64):
//   r_i    = word 0 of Philox-4x32-10(counter = (lo32(i), hi32(i), 0, 0),
//                                     key = (lo32(seed), hi32(seed)))
//   u_i    = (r_i >> 8) * 2^-24, a float in [0, 1) with 24 random bits (the CPU
//            generator's next_float() resolution)
//   mask_i = u_i < p ? 0 : scale,  scale = 1/(1-p) (0 when p == 1), as the CPU's rule
// Element i depends only on (seed, i): one thread per element in a grid-stride loop, any
// launch configuration gives the same mask. (The GPU and CPU masks differ: the CPU draws
// from its sequential generator.)
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11;
// the constants of Random123): ten rounds of two 32x32->64 multiplies, the key bumped by
// the Weyl constants between rounds. In place on the 4-word counter c, key (k0, k1).
// (Host and device: the widening multiply compiles to one IMAD.WIDE on the GPU.)
__host__ __device__ __forceinline__ void philox4x32_10(unsigned (&c)[4], unsigned k0, unsigned k1) {
  constexpr unsigned long long kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr unsigned kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = kM0 * c[0];
    const unsigned long long p1 = kM1 * c[2];
    const unsigned hi0 = static_cast<unsigned>(p0 >> 32), lo0 = static_cast<unsigned>(p0);
    const unsigned hi1 = static_cast<unsigned>(p1 >> 32), lo1 = static_cast<unsigned>(p1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += kW0;
    k1 += kW1;
  }
}

// Word 0 of Philox-4x32-10 at counter (lo32(i), hi32(i), 0, 0), key (lo32(seed), hi32(seed)).
__host__ __device__ __forceinline__ unsigned philox_word(unsigned long long i,
                                                         unsigned long long seed) {
  unsigned c[4] = {static_cast<unsigned>(i), static_cast<unsigned>(i >> 32), 0u, 0u};
  philox4x32_10(c, static_cast<unsigned>(seed), static_cast<unsigned>(seed >> 32));
  return c[0];
}

template <typename T>
__global__ void dropout_mask_kernel(unsigned long long seed, double p, T scale,
                                    T* __restrict__ mask, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned r = philox_word(static_cast<unsigned long long>(i), seed);
    const float u = static_cast<float>(r >> 8) * 0x1.0p-24f;  // exact: 24 bits
    mask[i] = static_cast<double>(u) < p ? T(0) : scale;
  }
}

template <typename T>
struct DropoutApplyOp {  // exactly 0 where dropped, even for a non-finite x
  __device__ T operator()(T x, T m) const { return m != T(0) ? x * m : T(0); }
};

}  // namespace

// The key is one draw of the headgrad generator, so the same generator state gives the same
// mask.
void CudaBackend::dropout_mask(Generator& generator, double p, Tensor& mask) {
  const std::uint64_t seed = generator.next_u64();
  dispatch_floating(mask.dtype(), "dropout", [&]<typename T>() {
    const std::int64_t n = mask.numel();
    if (n == 0) return;
    const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    dropout_mask_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(mask)>>>(
        static_cast<unsigned long long>(seed), p, scale, dptr<T>(mask), n);
    check_launch("dropout");
  });
}

void CudaBackend::dropout_apply(const Tensor& x, const Tensor& mask, Tensor& out) {
  dispatch_floating(out.dtype(), "dropout", [&]<typename T>() {
    ew::launch<T, T, T>("dropout", DropoutApplyOp<T>{}, out, x, mask);
  });
}

}  // namespace headgrad::cuda
