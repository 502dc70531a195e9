// The copies behind the shape ops on the GPU (Kernels::copy_blocks, permute, expand): each is
// one copy_strided (elementwise.cu) with the strides of its layout.
#include "core/broadcast.hpp"
#include "cuda/backend.hpp"

namespace headgrad::cuda {

// (outer, count, inner) blocks: the innermost run is contiguous on both sides.
void CudaBackend::copy_blocks(const Tensor& src, Tensor& dst, const BlockCopy& c) {
  copy_strided(src, c.src_offset, {c.src_outer, c.src_step, 1}, dst, c.dst_offset,
               {c.dst_outer, c.dst_step, 1}, {c.outer, c.count, c.inner});
}

// out[i] = x[i permuted back]: x's strides, reordered by perm.
void CudaBackend::permute(const Tensor& x, const Shape& perm, Tensor& out) {
  const Shape in_strides = contiguous_strides(x.shape());
  Shape src_strides(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d)
    src_strides[d] = in_strides[static_cast<std::size_t>(perm[d])];
  copy_strided(x, 0, src_strides, out, 0, contiguous_strides(out.shape()), out.shape());
}

// Stride 0 along the broadcast dims.
void CudaBackend::expand(const Tensor& x, Tensor& out) {
  copy_strided(x, 0, headgrad::detail::broadcast_strides(x.shape(), out.shape()), out, 0,
               contiguous_strides(out.shape()), out.shape());
}

}  // namespace headgrad::cuda
