// Memory-level and selection kernels: fill, convert, copy_strided, where, logical_not,
// masked_fill. The arithmetic ones live in unary.cu and binary.cu; all but copy_strided go
// through the launcher of elementwise.cuh.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "core/dispatch.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/elementwise.cuh"

namespace headgrad::cuda {

namespace {

// --- functors (one value per input) ---------------------------------------------------

template <typename T>
struct FillOp {  // out = v
  T v;
  __device__ T operator()() const { return v; }
};

template <typename S, typename D>
struct ConvertOp {  // out = static_cast<D>(x): float->int64 truncates, anything->bool is != 0
  __device__ D operator()(S x) const { return static_cast<D>(x); }
};

template <typename T>
struct WhereOp {  // out = c ? a : b
  __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

struct NotOp {  // out = !x
  __device__ bool operator()(bool x) const { return !x; }
};

template <typename T>
struct MaskedFillOp {  // out = m ? value : x
  T value;
  __device__ T operator()(T x, bool m) const { return m ? value : x; }
};

// --- copy_strided ----------------------------------------------------------------------

// dst[offset_1(i)] = src[offset_0(i)] for i < n (layout.strides[0]: src, [1]: dst). E is an
// element type of the right size (the copy moves bits), or a 4-element vector of it.
template <typename Index, typename E>
__global__ void copy_strided_kernel(Index n, const E* src, E* dst, ew::Layout<Index, 2> layout) {
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Index off[2];
    layout.offsets(i, off);
    dst[off[1]] = src[off[0]];
  }
}

// The largest element offset reached through `strides`; "infinite" for a negative stride,
// so that such copies take the 64-bit path.
std::int64_t max_offset(const Shape& sizes, const Shape& strides) {
  std::int64_t m = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) return std::numeric_limits<std::int64_t>::max();
    m += (sizes[d] - 1) * strides[d];
  }
  return m;
}

template <typename E>
void launch_copy(const E* src, E* dst, const Shape& sizes, const std::array<Shape, 2>& strides,
                 cudaStream_t s) {
  const std::int64_t n = numel_of(sizes);
  constexpr std::int64_t kMax32 = std::numeric_limits<std::int32_t>::max();
  if (n <= kMax32 && max_offset(sizes, strides[0]) <= kMax32 &&
      max_offset(sizes, strides[1]) <= kMax32) {
    copy_strided_kernel<std::uint32_t, E><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<std::uint32_t>(n), src, dst, ew::make_layout<std::uint32_t, 2>(sizes, strides));
  } else {
    copy_strided_kernel<std::int64_t, E><<<blocks_for(n), kThreads, 0, s>>>(
        n, src, dst, ew::make_layout<std::int64_t, 2>(sizes, strides));
  }
  check_launch("copy_strided");
}

// Copies elements of type E, as 4-element vectors when the innermost merged dim is
// contiguous on both sides and everything (sizes, strides, pointers) divides evenly.
template <typename E>
void copy_elements(const void* src, void* dst, Shape sizes, std::array<Shape, 2> strides,
                   cudaStream_t s) {
  const E* ps = static_cast<const E*>(src);
  E* pd = static_cast<E*>(dst);
  const std::size_t r = sizes.size();
  bool vec = r > 0 && sizes[r - 1] % ew::kVec == 0 && strides[0][r - 1] == 1 &&
             strides[1][r - 1] == 1 && ew::vec_aligned(ps) && ew::vec_aligned(pd);
  for (std::size_t d = 0; vec && d + 1 < r; ++d)
    vec = strides[0][d] % ew::kVec == 0 && strides[1][d] % ew::kVec == 0;
  if (!vec) return launch_copy<E>(ps, pd, sizes, strides, s);
  using V = ew::Vec<E, ew::kVec>;
  sizes[r - 1] /= ew::kVec;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    strides[0][d] /= ew::kVec;
    strides[1][d] /= ew::kVec;
  }
  launch_copy<V>(reinterpret_cast<const V*>(ps), reinterpret_cast<V*>(pd), sizes, strides, s);
}

}  // namespace

// --- fill: out (any shape, any dtype) = value -------------------------------------------
// A memset when every byte of the converted value is the same (0, false, true); otherwise
// the contiguous kernel with no inputs.
void CudaBackend::fill(Tensor& out, double value) {
  if (out.numel() == 0) return;
  detail::dispatch_all(out.dtype(), [&]<typename T>() {
    const T v = static_cast<T>(value);
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    bool uniform = true;
    for (std::size_t i = 1; i < sizeof(T); ++i) uniform = uniform && bytes[i] == bytes[0];
    if (uniform) {
      check(cudaMemsetAsync(dptr<T>(out), bytes[0],
                            static_cast<std::size_t>(out.numel()) * sizeof(T), stream_of(out)),
            "fill");
      return;
    }
    ew::launch<T>("fill", FillOp<T>{v}, out);
  });
}

// --- convert: dst (n) = static_cast<D>(src (n)), any dtype pair ------------------------------
void CudaBackend::convert(const Tensor& src, Tensor& dst) {
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  if (src.dtype() == dst.dtype()) {
    check(cudaMemcpyAsync(dptr<unsigned char>(dst), dptr<unsigned char>(src),
                          static_cast<std::size_t>(n) * element_size(dst.dtype()),
                          cudaMemcpyDeviceToDevice, stream_of(dst)),
          "convert");
    return;
  }
  detail::dispatch_all(src.dtype(), [&]<typename S>() {
    detail::dispatch_all(dst.dtype(), [&]<typename D>() {
      ew::launch<D, S>("convert", ConvertOp<S, D>{}, dst, src);
    });
  });
}

// --- copy_strided: dst[dst_offset + i.dst_strides] = src[src_offset + i.src_strides] -------
// for every index i of `sizes` (rank <= 8, any dtype; the copy moves bits). Dims are merged
// first; a copy that is contiguous on both sides is one cudaMemcpyAsync, the rest one
// thread per element (vectors of 4 when the inner dim allows).
void CudaBackend::copy_strided(const Tensor& src, std::int64_t src_offset, const Shape& src_strides,
                               Tensor& dst, std::int64_t dst_offset, const Shape& dst_strides,
                               const Shape& sizes) {
  if (sizes.size() > static_cast<std::size_t>(kMaxDims))
    throw ShapeError("copy_strided: tensors of rank " + std::to_string(sizes.size()) +
                     " are not supported on cuda (at most " + std::to_string(kMaxDims) + ")");
  if (src_strides.size() != sizes.size() || dst_strides.size() != sizes.size())
    throw ShapeError("copy_strided: strides " + shape_str(src_strides) + " and " +
                     shape_str(dst_strides) + " do not match sizes " + shape_str(sizes));
  const std::int64_t n = numel_of(sizes);
  if (n == 0) return;
  const std::size_t esize = element_size(dst.dtype());
  const unsigned char* ps =
      dptr<unsigned char>(src) + src_offset * static_cast<std::int64_t>(esize);
  unsigned char* pd = dptr<unsigned char>(dst) + dst_offset * static_cast<std::int64_t>(esize);
  cudaStream_t s = stream_of(dst);

  Shape merged = sizes;
  std::array<Shape, 2> strides{src_strides, dst_strides};
  detail::merge_dims(merged, strides);
  if (merged.empty() || (merged.size() == 1 && strides[0][0] == 1 && strides[1][0] == 1)) {
    check(cudaMemcpyAsync(pd, ps, static_cast<std::size_t>(n) * esize, cudaMemcpyDeviceToDevice, s),
          "copy_strided");
    return;
  }
  switch (esize) {
    case 1:
      return copy_elements<std::uint8_t>(ps, pd, merged, strides, s);
    case 4:
      return copy_elements<std::uint32_t>(ps, pd, merged, strides, s);
    case 8:
      return copy_elements<std::uint64_t>(ps, pd, merged, strides, s);
    default:
      throw DTypeError("copy_strided: unsupported element size " + std::to_string(esize));
  }
}

// --- where: out = cond ? x : y, all broadcast to out's shape; cond bool, x/y/out any dtype --
void CudaBackend::where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  if (cond.dtype() != DType::boolean)
    throw DTypeError("where: the condition must be bool, got " + to_string(cond.dtype()));
  detail::dispatch_all(out.dtype(), [&]<typename T>() {
    ew::launch<T, bool, T, T>("where", WhereOp<T>{}, out, cond, x, y);
  });
}

// --- logical_not: out = !x, bool, same shape ------------------------------------------------
void CudaBackend::logical_not(const Tensor& x, Tensor& out) {
  if (x.dtype() != DType::boolean)
    throw DTypeError("logical_not: expected a bool mask, got " + to_string(x.dtype()));
  ew::launch<bool, bool>("logical_not", NotOp{}, out, x);
}

// --- masked_fill: out (x's shape) = mask ? value : x, mask bool broadcast to x's shape ------
void CudaBackend::masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  if (mask.dtype() != DType::boolean)
    throw DTypeError("masked_fill: the mask must be bool, got " + to_string(mask.dtype()));
  detail::dispatch_floating(x.dtype(), "masked_fill", [&]<typename T>() {
    ew::launch<T, T, bool>("masked_fill", MaskedFillOp<T>{static_cast<T>(value)}, out, x, mask);
  });
}

}  // namespace headgrad::cuda
