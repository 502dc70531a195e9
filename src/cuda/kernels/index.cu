// Indexing kernels on the GPU: index_select (gather), index_add (its deterministic
// scatter-add backward, also embedding's), one_hot and the index range check (spec:
// src/ops/index.cpp).
//
// x is viewed as (outer, dim, inner) and the index holds n int64 entries; a "row" is the
// contiguous run of `inner` elements at one (outer, position).
//   index_select: a 2-D block (bx, by): by rows per block, bx threads copying a row in the
//                 widest unit (16, 8, 4, 2 or 1 bytes) its size and alignment allow.
//   index_add:    no atomics. dx is zero-filled, then
//                 n <= 32: each block ranks the indices stably in shared memory; one thread
//                   per (outer, column) loads its n gradients in that order and stores the
//                   sum of each run of equal indices once (exactly the CPU's order, 0 + ...);
//                 n > 32: the indices are sorted stably (CUB radix sort of (index, i) pairs,
//                   deterministic), the sorted positions cut into chunks of 32, and a group
//                   of threads per (outer, chunk) sums each run of equal indices inside the
//                   chunk in order of i. Runs inside one chunk are stored to dx directly;
//                   a run crossing chunks leaves per-chunk partial rows ("tail" in the chunk
//                   where it starts, "head" in each later one) that a second kernel adds in
//                   chunk order. Sequential work per thread is at most 32 rows plus
//                   run_length/32 partials, so a very frequent index (padding) stays cheap.
//                   (Embedding backward: outer 1, n = tokens, inner = embedding width.)
//   one_hot:      zero-fill, then one thread per index writes its 1.
//   check_index_range: the shared two-pass min reduction (kernel_util.cuh).
#include <cub/device/device_radix_sort.cuh>

#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

constexpr int kRowBlock = 256;  // threads per block of the row kernels (bx * by)

// (bx, by) for rows of `units` units: bx the smallest power of two >= units (at most 256),
// by = 256 / bx rows per block.
dim3 row_block(std::int64_t units) {
  int bx = 1;
  while (bx < kRowBlock && bx < units) bx *= 2;
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(kRowBlock / bx));
}

// ---------------------------------------------------------------------------------------
// index_select: out[o, i, :] = x[o, idx[i], :], rows of `units` units of type U.
// ---------------------------------------------------------------------------------------
template <typename U>
__global__ void gather_rows_kernel(const U* __restrict__ x, U* __restrict__ out,
                                   const std::int64_t* __restrict__ idx, std::int64_t outer,
                                   std::int64_t dim, std::int64_t n, std::int64_t units) {
  const std::int64_t rows = outer * n;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += stride) {
    const std::int64_t o = r / n;
    const U* src = x + (o * dim + idx[r - o * n]) * units;
    U* dst = out + r * units;
    for (std::int64_t u = threadIdx.x; u < units; u += blockDim.x) dst[u] = src[u];
  }
}

template <typename U>
void launch_gather(const void* x, void* out, const std::int64_t* idx, std::int64_t outer,
                   std::int64_t dim, std::int64_t n, std::int64_t units, cudaStream_t s) {
  const dim3 block = row_block(units);
  gather_rows_kernel<U><<<row_grid(outer * n, static_cast<int>(block.y)), block, 0, s>>>(
      static_cast<const U*>(x), static_cast<U*>(out), idx, outer, dim, n, units);
}

// ---------------------------------------------------------------------------------------
// index_add, n <= kChunk: dx[o, v, k] = sum over i with idx[i] == v of g[o, i, k], in order
// of i. Each block ranks the n indices stably in shared memory (rank = #smaller keys +
// #equal keys before it); one thread per column (o, k) loads its n gradients in rank order,
// then sums each run of equal keys and stores it once.
// ---------------------------------------------------------------------------------------
constexpr int kChunk = 32;

template <typename T>
__global__ void index_add_small_kernel(const T* __restrict__ g,
                                       const std::int64_t* __restrict__ idx, std::int64_t outer,
                                       std::int64_t dim, int n, std::int64_t inner,
                                       T* __restrict__ dx) {
  __shared__ std::int64_t sidx[kChunk];  // indices in order of i
  __shared__ std::int64_t skey[kChunk];  // indices sorted (stable)
  __shared__ int perm[kChunk];           // perm[rank] = i
  const int t = static_cast<int>(threadIdx.x);
  if (t < n) sidx[t] = idx[t];
  __syncthreads();
  if (t < n) {
    const std::int64_t key = sidx[t];
    int rank = 0;
    for (int e = 0; e < n; ++e) rank += sidx[e] < key || (sidx[e] == key && e < t);
    skey[rank] = key;
    perm[rank] = t;
  }
  __syncthreads();
  const std::int64_t columns = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       col < columns; col += stride) {
    const std::int64_t o = col / inner;
    const std::int64_t k = col - o * inner;
    const T* go = g + o * n * inner + k;
    T v[kChunk];  // all loads issued before the dependent sums
#pragma unroll
    for (int r = 0; r < kChunk; ++r) v[r] = r < n ? go[perm[r] * inner] : T(0);
    T acc = T(0);
#pragma unroll
    for (int r = 0; r < kChunk; ++r) {
      if (r >= n) break;
      acc += v[r];
      if (r + 1 < n && skey[r + 1] == skey[r]) continue;  // the run goes on
      dx[(o * dim + skey[r]) * inner + k] = acc;
      acc = T(0);
    }
  }
}

// ---------------------------------------------------------------------------------------
// index_add, n > kChunk, on the sorted (key, i) pairs sk, sv (stable: equal keys keep the
// order of i). Chunk c = sorted positions [c*32, min(n, c*32+32)); task = (o, c).
// ---------------------------------------------------------------------------------------

// Pass 1. For each run piece (maximal equal-key stretch inside the chunk), its sum over
// columns k:  whole run in this chunk -> dx[o, key, k];
//             first piece of a run that began in an earlier chunk -> head[task, k];
//             last piece of a run that begins here and continues -> tail[task, k].
template <typename T>
__global__ void index_add_chunk_kernel(const T* __restrict__ g,
                                       const unsigned long long* __restrict__ sk,
                                       const std::int64_t* __restrict__ sv, std::int64_t outer,
                                       std::int64_t dim, std::int64_t n, std::int64_t inner,
                                       std::int64_t chunks, T* __restrict__ dx,
                                       T* __restrict__ head, T* __restrict__ tail) {
  const std::int64_t tasks = outer * chunks;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
       task < tasks; task += stride) {
    const std::int64_t o = task / chunks;
    const std::int64_t j0 = (task - o * chunks) * kChunk;
    const std::int64_t j1 = j0 + kChunk < n ? j0 + kChunk : n;
    const bool from_before = j0 > 0 && sk[j0 - 1] == sk[j0];  // first piece continues a run
    const bool into_next = j1 < n && sk[j1] == sk[j1 - 1];    // last piece continues
    const T* go = g + o * n * inner;
    T* dxo = dx + o * dim * inner;
    for (std::int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
      T v[kChunk];  // all loads issued before the dependent sums
#pragma unroll
      for (int q = 0; q < kChunk; ++q) v[q] = j0 + q < j1 ? go[sv[j0 + q] * inner + k] : T(0);
      T acc = T(0);
      bool first_piece = true;
#pragma unroll
      for (int q = 0; q < kChunk; ++q) {
        const std::int64_t j = j0 + q;
        if (j >= j1) break;
        acc += v[q];
        const bool last_piece = j + 1 == j1;
        if (!last_piece && sk[j + 1] == sk[j]) continue;  // the piece goes on
        if (first_piece && from_before)
          head[task * inner + k] = acc;
        else if (last_piece && into_next)
          tail[task * inner + k] = acc;
        else
          dxo[static_cast<std::int64_t>(sk[j]) * inner + k] = acc;
        acc = T(0);
        first_piece = false;
      }
    }
  }
}

// Pass 2. A chunk whose last piece starts a run that continues owns the run: it adds its
// tail and the heads of the following chunks up to the run's last chunk, in order.
template <typename T>
__global__ void index_add_merge_kernel(const unsigned long long* __restrict__ sk,
                                       std::int64_t outer, std::int64_t dim, std::int64_t n,
                                       std::int64_t inner, std::int64_t chunks,
                                       const T* __restrict__ head, const T* __restrict__ tail,
                                       T* __restrict__ dx) {
  const std::int64_t tasks = outer * chunks;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
       task < tasks; task += stride) {
    const std::int64_t o = task / chunks;
    const std::int64_t c = task - o * chunks;
    const std::int64_t j0 = c * kChunk;
    const std::int64_t j1 = j0 + kChunk < n ? j0 + kChunk : n;
    const unsigned long long key = sk[j1 - 1];
    if (j1 >= n || sk[j1] != key) continue;     // the last piece ends in this chunk
    if (j0 > 0 && sk[j0 - 1] == key) continue;  // the run began earlier: not the owner
    std::int64_t lo = j1, hi = n;               // first sorted position with a larger key
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (sk[mid] <= key)
        lo = mid + 1;
      else
        hi = mid;
    }
    const std::int64_t last_chunk = (lo - 1) / kChunk;
    const std::int64_t base = o * chunks;
    T* row = dx + (o * dim + static_cast<std::int64_t>(key)) * inner;
    for (std::int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
      T acc = tail[task * inner + k];
#pragma unroll 4
      for (std::int64_t cc = c + 1; cc <= last_chunk; ++cc) acc += head[(base + cc) * inner + k];
      row[k] = acc;
    }
  }
}

__global__ void iota_kernel(std::int64_t* out, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = i;
}

template <typename T>
void index_add_sorted(const T* g, const std::int64_t* idx, std::int64_t outer, std::int64_t dim,
                      std::int64_t n, std::int64_t inner, T* dx, const Tensor& like,
                      cudaStream_t s) {
  constexpr const char* op = "index_add";
  const TensorOptions i64 = TensorOptions().dtype(DType::int64).device(like.device());
  Tensor keys_out = empty({n}, i64);
  Tensor vals = empty({2, n}, i64);  // (i in order, i sorted by key)
  std::int64_t* vals_in = dptr<std::int64_t>(vals);
  std::int64_t* vals_out = vals_in + n;
  const auto* keys_in = reinterpret_cast<const unsigned long long*>(idx);  // all >= 0
  auto* sk = reinterpret_cast<unsigned long long*>(dptr<std::int64_t>(keys_out));
  int end_bit = 1;  // keys are < dim: sort only the bits that can be set
  while (end_bit < 63 && (std::int64_t{1} << end_bit) < dim) ++end_bit;

  iota_kernel<<<blocks_for(n), kThreads, 0, s>>>(vals_in, n);
  check_launch(op);
  std::size_t temp_bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, sk, vals_in, vals_out, n, 0,
                                        end_bit, s),
        op);
  // (never empty: a null d_temp_storage would make CUB answer a size query instead)
  Tensor temp = empty({static_cast<std::int64_t>(temp_bytes / 8 + 1)}, i64);
  check(cub::DeviceRadixSort::SortPairs(dptr<std::int64_t>(temp), temp_bytes, keys_in, sk, vals_in,
                                        vals_out, n, 0, end_bit, s),
        op);

  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  Tensor partial =
      empty({2, outer * chunks, inner}, TensorOptions().dtype(dtype_of<T>()).device(like.device()));
  T* head = dptr<T>(partial);
  T* tail = head + outer * chunks * inner;
  const dim3 block = row_block(inner);
  const unsigned grid = row_grid(outer * chunks, static_cast<int>(block.y));
  index_add_chunk_kernel<T>
      <<<grid, block, 0, s>>>(g, sk, vals_out, outer, dim, n, inner, chunks, dx, head, tail);
  check_launch(op);
  index_add_merge_kernel<T>
      <<<grid, block, 0, s>>>(sk, outer, dim, n, inner, chunks, head, tail, dx);
  check_launch(op);
}

// ---------------------------------------------------------------------------------------
// one_hot: out (n, classes) zero-filled by the caller of the kernel; out[i, idx[i]] = 1.
// ---------------------------------------------------------------------------------------
template <typename T>
__global__ void one_hot_kernel(const std::int64_t* __restrict__ idx, std::int64_t n,
                               std::int64_t classes, T* __restrict__ out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int64_t v = idx[i];
    if (v >= 0 && v < classes) out[i * classes + v] = static_cast<T>(1);
  }
}

}  // namespace

void CudaBackend::index_select(const Tensor& x, std::int64_t outer, std::int64_t dim,
                               std::int64_t inner, const Tensor& index, Tensor& out) {
  const std::int64_t n = index.numel();
  if (outer == 0 || n == 0 || inner == 0) return;
  cudaStream_t s = stream_of(out);
  const void* xp = x.impl()->data();
  void* op = out.impl()->data();
  const std::int64_t* idx = dptr<std::int64_t>(index);
  // The widest unit dividing the row's bytes, with both base pointers aligned to it (then
  // every row start is aligned too, rows being whole units).
  const std::int64_t bytes = inner * static_cast<std::int64_t>(element_size(x.dtype()));
  const auto addr = reinterpret_cast<std::uintptr_t>(xp) | reinterpret_cast<std::uintptr_t>(op);
  std::int64_t unit = 16;
  while (unit > 1 && (bytes % unit != 0 || addr % static_cast<std::uintptr_t>(unit) != 0))
    unit /= 2;
  const std::int64_t units = bytes / unit;
  switch (unit) {
    case 16:
      launch_gather<uint4>(xp, op, idx, outer, dim, n, units, s);
      break;
    case 8:
      launch_gather<unsigned long long>(xp, op, idx, outer, dim, n, units, s);
      break;
    case 4:
      launch_gather<unsigned>(xp, op, idx, outer, dim, n, units, s);
      break;
    case 2:
      launch_gather<unsigned short>(xp, op, idx, outer, dim, n, units, s);
      break;
    default:
      launch_gather<unsigned char>(xp, op, idx, outer, dim, n, units, s);
      break;
  }
  check_launch("index_select");
}

void CudaBackend::index_add(const Tensor& g, std::int64_t outer, std::int64_t dim,
                            std::int64_t inner, const Tensor& index, Tensor& dx) {
  dispatch_floating(dx.dtype(), "index_add", [&]<typename T>() {
    const std::int64_t total = outer * dim * inner;
    if (total == 0) return;
    cudaStream_t s = stream_of(dx);
    T* dp = dptr<T>(dx);
    check(cudaMemsetAsync(dp, 0, sizeof(T) * static_cast<std::size_t>(total), s), "index_add");
    const std::int64_t n = index.numel();
    if (n == 0) return;
    const T* gp = dptr<T>(g);
    const std::int64_t* idx = dptr<std::int64_t>(index);
    if (n <= kChunk) {
      index_add_small_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(
          gp, idx, outer, dim, static_cast<int>(n), inner, dp);
      check_launch("index_add");
    } else {
      index_add_sorted<T>(gp, idx, outer, dim, n, inner, dp, dx, s);
    }
  });
}

void CudaBackend::one_hot(const Tensor& indices, std::int64_t classes, Tensor& out) {
  const std::int64_t n = indices.numel();
  if (n == 0 || classes == 0) return;
  cudaStream_t s = stream_of(out);
  const std::size_t bytes = static_cast<std::size_t>(n * classes) * element_size(out.dtype());
  check(cudaMemsetAsync(out.impl()->data(), 0, bytes, s), "one_hot");
  const std::int64_t* idx = dptr<std::int64_t>(indices);
  const unsigned grid = blocks_for(n);
  switch (out.dtype()) {
    case DType::float32:
      one_hot_kernel<float><<<grid, kThreads, 0, s>>>(idx, n, classes, dptr<float>(out));
      break;
    case DType::float64:
      one_hot_kernel<double><<<grid, kThreads, 0, s>>>(idx, n, classes, dptr<double>(out));
      break;
    case DType::int64:
      one_hot_kernel<std::int64_t>
          <<<grid, kThreads, 0, s>>>(idx, n, classes, dptr<std::int64_t>(out));
      break;
    case DType::boolean:
      one_hot_kernel<bool><<<grid, kThreads, 0, s>>>(idx, n, classes, dptr<bool>(out));
      break;
  }
  check_launch("one_hot");
}

void CudaBackend::check_index_range(const Tensor& index, std::int64_t limit, Tensor& bad) {
  first_bad_index(dptr<std::int64_t>(index), index.numel(), limit, /*has_ignore=*/false, 0,
                  dptr<std::int64_t>(bad), bad, "check_index_range");
}

}  // namespace headgrad::cuda
