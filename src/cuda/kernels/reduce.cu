// Reductions (sum, amax, argmax) of a contiguous float32/float64 tensor over any set of
// dims, without atomics. The host first drops x's size-1 dims and merges adjacent dims of
// the same kind (reduced or kept), which leaves alternating groups, e.g. (K, R) for a
// softmax-like row sum or (R, K) for a bias gradient. The last reduced group R is then
// reduced as (outer, R, inner), outer and inner the products of the groups around it:
//   - inner == 1 (rows): a group of g <= 32 lanes per row for R <= 1024 (shuffles only),
//     else a block per row; when there are few rows, each row is split into a fixed number
//     of chunks (one block each) and the chunks reduced in a second pass.
//   - inner > 1 (columns): a thread per output walking R with stride inner, so a warp reads
//     consecutive columns (coalesced); when there are few outputs, R is split into chunks
//     reduced into (outer, chunks, inner) partials, then reduced again the same way.
// More than one reduced group (e.g. dims 0 and 2 of a 3-d tensor) repeats this on the
// partial result. Every split and every reduction order depends only on the shapes, so the
// results are bitwise reproducible run to run. Sums accumulate in the tensor's dtype, as
// the CPU's (ops/reduce.cpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"

namespace headgrad::cuda {

namespace {

// --- the three reductions as (identity, combine, from element) ------------------------------
// combine is associative and commutative (up to the sign of zero for amax), so any
// fixed tree gives the CPU's amax / argmax; only the sum depends on the (fixed) order.

template <typename T>
struct SumOp {
  using Elem = T;
  using State = T;
  __device__ static State identity() { return T(0); }
  __device__ static State combine(State a, State b) { return a + b; }
  __device__ static State from(T v, std::int64_t) { return v; }
};

// The maximum; NaN propagates; -inf for no elements.
template <typename T>
struct MaxOp {
  using Elem = T;
  using State = T;
  __device__ static State identity() { return -std::numeric_limits<T>::infinity(); }
  __device__ static State combine(State a, State b) { return a > b || a != a ? a : b; }
  __device__ static State from(T v, std::int64_t) { return v; }
};

// (value, index along the reduced group). Plain aggregate: it lives in __shared__ memory.
template <typename T>
struct ArgState {
  T v;
  std::int64_t i;
};

// The first maximal element, NaN counting as maximal (so: the first NaN if any, else the
// first maximum), as the CPU's max/argmax.
template <typename T>
struct ArgMaxOp {
  using Elem = T;
  using State = ArgState<T>;
  __device__ static State identity() {
    return {-std::numeric_limits<T>::infinity(), std::numeric_limits<std::int64_t>::max()};
  }
  __device__ static State combine(State a, State b) {
    const bool a_nan = a.v != a.v, b_nan = b.v != b.v;
    bool take_a;
    if (a_nan || b_nan)
      take_a = a_nan && (!b_nan || a.i < b.i);
    else
      take_a = a.v > b.v || (a.v == b.v && a.i < b.i);
    return take_a ? a : b;
  }
  __device__ static State from(T v, std::int64_t i) { return {v, i}; }
};

// --- where states come from and go to ---------------------------------------------------------

// Elements of x (or value partials): state of p[off], r its index along the reduced group.
template <typename Op>
struct RawSrc {
  const typename Op::Elem* p;
  __device__ typename Op::State load(std::int64_t off, std::int64_t r) const {
    return Op::from(p[off], r);
  }
};

// argmax partials: (value, index) pairs.
template <typename T>
struct PairSrc {
  const T* v;
  const std::int64_t* i;
  __device__ ArgState<T> load(std::int64_t off, std::int64_t) const { return {v[off], i[off]}; }
};

template <typename T>
struct ValueDst {  // sum, amax (results and partials)
  T* p;
  __device__ void store(std::int64_t o, T s) const { p[o] = s; }
};

template <typename T>
struct IndexDst {  // argmax result
  std::int64_t* p;
  __device__ void store(std::int64_t o, ArgState<T> s) const { p[o] = s.i; }
};

template <typename T>
struct PairDst {  // argmax partials
  T* v;
  std::int64_t* i;
  __device__ void store(std::int64_t o, ArgState<T> s) const {
    v[o] = s.v;
    i[o] = s.i;
  }
};

// Device storage for n partial states, and its views as a destination and a source.
template <typename Op>
struct Partials {
  using T = typename Op::Elem;
  Tensor v;
  Partials(std::int64_t n, Device d) : v(detail::new_tensor({n}, dtype_of<T>(), d)) {}
  ValueDst<T> dst() { return {dptr<T>(v)}; }
  RawSrc<Op> src() const { return {dptr<T>(v)}; }
};

template <typename T>
struct Partials<ArgMaxOp<T>> {
  Tensor v, i;
  Partials(std::int64_t n, Device d)
      : v(detail::new_tensor({n}, dtype_of<T>(), d)), i(detail::new_tensor({n}, DType::int64, d)) {}
  PairDst<T> dst() { return {dptr<T>(v), dptr<std::int64_t>(i)}; }
  PairSrc<T> src() const { return {dptr<T>(v), dptr<std::int64_t>(i)}; }
};

// --- warp and block combines ----------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
template <typename T>
__device__ __forceinline__ ArgState<T> shfl_xor(ArgState<T> s, int mask) {
  return {__shfl_xor_sync(0xffffffffu, s.v, mask), __shfl_xor_sync(0xffffffffu, s.i, mask)};
}

// Butterfly over aligned groups of `width` lanes (a power of two <= 32); every lane of the
// warp must call it. Each lane ends with its group's combine.
template <typename Op>
__device__ __forceinline__ typename Op::State group_combine(typename Op::State v, int width) {
  for (int off = width / 2; off > 0; off >>= 1) v = Op::combine(v, shfl_xor(v, off));
  return v;
}

// The combine of v over the block (blockDim.x a multiple of 32, at most 1024), valid in
// thread 0. Every thread of the block must call it; `partial` holds 32 states.
template <typename Op>
__device__ typename Op::State block_combine(typename Op::State v, typename Op::State* partial) {
  v = group_combine<Op>(v, 32);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : Op::identity();
    v = group_combine<Op>(v, 32);
  }
  __syncthreads();  // partial is reused by the caller's next iteration
  return v;
}

// --- kernels ----------------------------------------------------------------------------------

// Rows (rows, n), n <= 1024: out[row] = combine of src[row*n + k], k < n, by a group of g
// lanes (g a power of two <= 32, 32/g rows per warp). Lane k0 of a group takes k = k0,
// k0+g, ...; then a butterfly within the group.
template <typename Op, typename Src, typename Dst>
__global__ void row_group_kernel(Src src, Dst dst, std::int64_t rows, std::int64_t n, int g) {
  const int lane = threadIdx.x & 31;
  const int rows_per_warp = 32 / g;
  const int sub = lane / g, k0 = lane % g;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (static_cast<std::int64_t>(gridDim.x) * blockDim.x) >> 5;
  // base is the same for the whole warp, so all 32 lanes reach the shuffles together
  for (std::int64_t base = warp * rows_per_warp; base < rows; base += warps * rows_per_warp) {
    const std::int64_t row = base + sub;
    typename Op::State acc = Op::identity();
    if (row < rows) {
#pragma unroll 4
      for (std::int64_t k = k0; k < n; k += g) acc = Op::combine(acc, src.load(row * n + k, k));
    }
    acc = group_combine<Op>(acc, g);
    if (row < rows && k0 == 0) dst.store(row, acc);
  }
}

// Rows (rows, n), each split into `splits` chunks of `chunk` elements: block b (row
// b / splits, chunk b % splits) writes out[b] = combine of its chunk (threads stride by
// blockDim.x, then block_combine). splits == 1: out[row] is the whole row.
template <typename Op, typename Src, typename Dst>
__global__ void row_block_kernel(Src src, Dst dst, std::int64_t rows, std::int64_t n,
                                 std::int64_t splits, std::int64_t chunk) {
  __shared__ typename Op::State partial[32];
  const std::int64_t blocks = rows * splits;
  for (std::int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {  // b is block-uniform
    const std::int64_t row = b / splits, c = b - row * splits;
    const std::int64_t begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
    typename Op::State acc = Op::identity();
#pragma unroll 4
    for (std::int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      acc = Op::combine(acc, src.load(row * n + k, k));
    acc = block_combine<Op>(acc, partial);
    if (threadIdx.x == 0) dst.store(b, acc);
  }
}

// Columns: src (outer, R, inner) with R split into `splits` chunks of `chunk`; one thread
// per output m = (o, c, j) of (outer, splits, inner) combines src[o, r, j] for r in chunk c,
// in order. Neighbouring threads read neighbouring j (coalesced).
template <typename Op, typename Src, typename Dst>
__global__ void middle_kernel(Src src, Dst dst, std::int64_t outer, std::int64_t R,
                              std::int64_t inner, std::int64_t splits, std::int64_t chunk) {
  const std::int64_t total = outer * splits * inner;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t m = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; m < total;
       m += stride) {
    const std::int64_t j = m % inner, t = m / inner;
    const std::int64_t c = t % splits, o = t / splits;
    const std::int64_t begin = c * chunk, end = begin + chunk < R ? begin + chunk : R;
    const std::int64_t base = o * R * inner + j;
    typename Op::State acc = Op::identity();
#pragma unroll 4
    for (std::int64_t r = begin; r < end; ++r)
      acc = Op::combine(acc, src.load(base + r * inner, r));
    dst.store(m, acc);
  }
}

// --- host: launch plans (functions of the shapes only) ---------------------------------------

constexpr std::int64_t kGroupRowMax = 1024;      // rows up to this long: lanes, not blocks
constexpr std::int64_t kRowBlocksTarget = 1024;  // split rows while rows < this many blocks
constexpr std::int64_t kMinRowChunk = 8192;      // elements per block when splitting rows
constexpr std::int64_t kColumnTarget = 65536;    // split columns while fewer outputs
constexpr std::int64_t kMinColumnChunk = 32;     // rows per thread when splitting columns

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// dst[row] = combine over k < n of src[row*n + k].
template <typename Op, typename Src, typename Dst>
void reduce_rows(const Src& src, const Dst& dst, std::int64_t rows, std::int64_t n, Device dev,
                 cudaStream_t s) {
  if (n <= kGroupRowMax) {
    int g = 1;
    while (g < n && g < 32) g *= 2;
    row_group_kernel<Op, Src, Dst><<<blocks_for(rows * g), kThreads, 0, s>>>(src, dst, rows, n, g);
    check_launch("reduce");
    return;
  }
  const int threads = n >= 4096 ? 512 : kThreads;
  std::int64_t splits = 1;
  if (rows < kRowBlocksTarget)
    splits = std::min(ceil_div(n, kMinRowChunk), ceil_div(kRowBlocksTarget, rows));
  if (splits <= 1) {
    row_block_kernel<Op, Src, Dst><<<blocks_for(rows, 1), threads, 0, s>>>(src, dst, rows, n, 1, n);
    check_launch("reduce");
    return;
  }
  const std::int64_t chunk = ceil_div(n, splits);
  splits = ceil_div(n, chunk);  // <= kRowBlocksTarget, so the second pass uses lanes
  Partials<Op> part(rows * splits, dev);
  row_block_kernel<Op, Src>
      <<<blocks_for(rows * splits, 1), threads, 0, s>>>(src, part.dst(), rows, n, splits, chunk);
  check_launch("reduce");
  reduce_rows<Op>(part.src(), dst, rows, splits, dev, s);
}

// dst[o, j] = combine over r < R of src[o, r, j] (inner > 1).
template <typename Op, typename Src, typename Dst>
void reduce_columns(const Src& src, const Dst& dst, std::int64_t outer, std::int64_t R,
                    std::int64_t inner, Device dev, cudaStream_t s) {
  const std::int64_t outputs = outer * inner;
  std::int64_t splits = 1;
  if (outputs < kColumnTarget && R >= 4 * kMinColumnChunk)
    splits = std::min(ceil_div(R, kMinColumnChunk), ceil_div(kColumnTarget, outputs));
  if (splits <= 1) {
    middle_kernel<Op, Src, Dst>
        <<<blocks_for(outputs), kThreads, 0, s>>>(src, dst, outer, R, inner, 1, R);
    check_launch("reduce");
    return;
  }
  const std::int64_t chunk = ceil_div(R, splits);
  splits = ceil_div(R, chunk);
  Partials<Op> part(outer * splits * inner, dev);
  middle_kernel<Op, Src><<<blocks_for(outputs * splits), kThreads, 0, s>>>(src, part.dst(), outer,
                                                                           R, inner, splits, chunk);
  check_launch("reduce");
  reduce_columns<Op>(part.src(), dst, outer, splits, inner, dev, s);
}

struct Group {
  std::int64_t size;
  bool reduced;
};

// Reduces src (laid out as the groups) into dst: the last reduced group first; with more
// reduced groups left, into partials and again.
template <typename Op, typename Src, typename Dst>
void reduce_groups(const Src& src, std::vector<Group> groups, const Dst& dst, Device dev,
                   cudaStream_t s) {
  std::int64_t last = -1, reduced_groups = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (groups[g].reduced) {
      last = static_cast<std::int64_t>(g);
      ++reduced_groups;
    }
  std::int64_t outer = 1, inner = 1, R = 1;
  if (last >= 0) {
    for (std::int64_t g = 0; g < last; ++g) outer *= groups[static_cast<std::size_t>(g)].size;
    for (std::size_t g = static_cast<std::size_t>(last) + 1; g < groups.size(); ++g)
      inner *= groups[g].size;
    R = groups[static_cast<std::size_t>(last)].size;
  } else {  // nothing to reduce: each output is its one element (argmax: index 0)
    for (const Group& g : groups) inner *= g.size;
  }
  auto reduce_last = [&](const auto& to) {
    if (inner == 1)
      reduce_rows<Op>(src, to, outer, R, dev, s);
    else
      reduce_columns<Op>(src, to, outer, R, inner, dev, s);
  };
  if (reduced_groups <= 1) return reduce_last(dst);
  Partials<Op> part(outer * inner, dev);
  reduce_last(part.dst());
  // The groups after `last` (all kept) merge with the kept group before it.
  std::vector<Group> rest(groups.begin(), groups.begin() + last);
  if (inner > 1) rest.back().size *= inner;
  reduce_groups<Op>(part.src(), std::move(rest), dst, dev, s);
}

template <typename Op, typename Dst>
void run(const Tensor& x, const std::vector<Group>& groups, const Dst& dst) {
  reduce_groups<Op>(RawSrc<Op>{dptr<typename Op::Elem>(x)}, groups, dst, x.device(), stream_of(x));
}

}  // namespace

// --- reduce: out (keep_shape) = sum / amax / argmax of x over the dims where keep_shape is 1
// and x is not ------------------------------------------------------------------------------
void CudaBackend::reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out) {
  const char* name = op == Reduce::sum ? "sum" : (op == Reduce::amax ? "amax" : "argmax");
  const Shape& xs = x.shape();
  if (keep_shape.size() != xs.size())
    throw ShapeError(std::string(name) + ": keep shape " + shape_str(keep_shape) +
                     " does not have the rank of the input " + shape_str(xs));
  std::vector<Group> groups;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (keep_shape[d] != xs[d] && keep_shape[d] != 1)
      throw ShapeError(std::string(name) + ": keep shape " + shape_str(keep_shape) +
                       " does not fit the input " + shape_str(xs));
    if (xs[d] == 1) continue;
    const bool reduced = keep_shape[d] == 1;
    if (!groups.empty() && groups.back().reduced == reduced)
      groups.back().size *= xs[d];
    else
      groups.push_back({xs[d], reduced});
  }
  if (out.numel() != numel_of(keep_shape))
    throw ShapeError(std::string(name) + ": output " + shape_str(out.shape()) +
                     " does not have the keep shape " + shape_str(keep_shape) + "'s numel");
  const DType want = op == Reduce::argmax ? DType::int64 : x.dtype();
  if (out.dtype() != want)
    throw DTypeError(std::string(name) + ": output dtype " + to_string(out.dtype()) +
                     ", expected " + to_string(want));
  if (op == Reduce::argmax) {
    std::int64_t reduced_groups = 0;
    for (const Group& g : groups) reduced_groups += g.reduced ? 1 : 0;
    if (reduced_groups > 1)
      throw ValueError("argmax: reduces exactly one dim, got keep shape " + shape_str(keep_shape) +
                       " for input " + shape_str(xs));
  }
  detail::dispatch_floating(x.dtype(), name, [&]<typename T>() {
    if (out.numel() == 0) return;
    if (x.numel() == 0) {  // an empty reduced dim: the identity (the CPU's callers reject
                           // amax and argmax of nothing before getting here)
      fill(out, op == Reduce::amax ? -std::numeric_limits<double>::infinity() : 0.0);
      return;
    }
    switch (op) {
      case Reduce::sum:
        return run<SumOp<T>>(x, groups, ValueDst<T>{dptr<T>(out)});
      case Reduce::amax:
        return run<MaxOp<T>>(x, groups, ValueDst<T>{dptr<T>(out)});
      case Reduce::argmax:
        return run<ArgMaxOp<T>>(x, groups, IndexDst<T>{dptr<std::int64_t>(out)});
    }
  });
}

}  // namespace headgrad::cuda
