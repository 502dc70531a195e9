// The CPU's fused attention kernels (Kernels::fused_attention_forward / backward, for
// fused_multihead_attention in ops/attention_fused.hpp): forward and backward side by side.
//
// Per (n, h), with P (L, S) the softmax probabilities saved from the forward:
//   forward   S  = scale * q_h k_h^T (+ masks)      GEMM (L,d) x (d,S), then scaled
//             P  = safe softmax of each row          in place (ops/cpu/softmax_rows.hpp)
//             o_h = P v_h                            GEMM (L,S) x (S,dv) into the merged output
//   backward  dP = do_h v_h^T (+ dweights)           GEMM (L,dv) x (dv,S)
//             dS = scale * P * (dP - rowsum(dP * P)) softmax backward, in place on dP;
//                                                    a blocked entry or fully blocked row has
//                                                    P = 0, hence dS = 0 (no NaN)
//             dq_h = dS k_h                          GEMM (L,S) x (S,d)
//             dk_h = dS^T q_h                        GEMM (S,L) x (L,d)
//             dv_h = P^T do_h                        GEMM (S,L) x (L,dv)
// Every GEMM reads and writes the token-major tensors through leading dimensions (the
// row stride of a (len, features) matrix is `features`), so q, k, v and the gradients are
// never copied; only k_h and v_h are transposed into a small (d, S) scratch for the two
// products that multiply by their transpose. The products are small (a 64-token context
// gives 32 x 64 x 32) and run on cpu::small_gemm's JIT kernels, which take alpha = 1: the
// scale is applied in the row passes instead. Gradients of q, k and v land in one buffer
// per distinct input tensor; heads write disjoint column blocks, so the buffer needs no zero
// fill unless column blocks of different operands overlap or leave columns unread.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/small_gemm.hpp"
#include "ops/cpu/softmax_rows.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::parallel_for;
using headgrad::detail::ptr;

namespace {

// Applies the masks to the score row (n, h, i) of length s; shared masks are skipped when
// `skip_shared` (they are known to block nothing there).
template <typename T>
void mask_row(T* row, const std::vector<FusedAttentionProblem::Mask>& masks, std::int64_t n,
              std::int64_t h, std::int64_t i, std::int64_t s, bool skip_shared) {
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  for (const FusedAttentionProblem::Mask& m : masks) {
    if (skip_shared && m.shared()) continue;
    const std::int64_t base = n * m.sn + h * m.sh + i * m.sl;
    if (m.additive) {
      const T* a = ptr<T>(m.tensor) + base;
      if (m.ss == 0) {
        for (std::int64_t j = 0; j < s; ++j) row[j] += a[0];
      } else {
        for (std::int64_t j = 0; j < s; ++j) row[j] += a[j];
      }
    } else {
      const bool* b = ptr<bool>(m.tensor) + base;
      if (m.ss == 0) {
        if (b[0]) std::fill(row, row + s, neg_inf);
      } else {
        for (std::int64_t j = 0; j < s; ++j) row[j] = b[j] ? neg_inf : row[j];
      }
    }
  }
}

// Query rows [begin, end) and the keys [0, keys) the GEMMs compute for them.
struct RowBlock {
  std::int64_t begin = 0, end = 0, keys = 0;
};

// What the shared masks (a causal mask above all) say about each query row i: every key
// from limit[i] on is blocked, so its score, probability and gradient are 0 and nothing
// computes them; when clear[i], no shared mask blocks a key below limit[i] either, so the
// row pass skips them (a causal row i: limit i + 1, clear). The GEMMs run per block of
// kRowBlock rows over the block's largest limit.
struct KeyPlan {
  std::vector<std::int64_t> limit;
  std::vector<std::uint8_t> clear;
  std::vector<RowBlock> blocks;
};

constexpr std::int64_t kRowBlock = 32;

KeyPlan plan_keys(const FusedAttentionProblem& g) {
  const auto& masks = g.masks;
  KeyPlan plan;
  plan.limit.assign(static_cast<std::size_t>(g.l), g.s);
  plan.clear.assign(static_cast<std::size_t>(g.l), 1);
  std::vector<const FusedAttentionProblem::Mask*> shared;
  for (const FusedAttentionProblem::Mask& m : masks)
    if (m.shared()) shared.push_back(&m);
  auto allowed = [&](std::int64_t i, std::int64_t j) {
    for (const FusedAttentionProblem::Mask* m : shared)
      if (ptr<bool>(m->tensor)[i * m->sl + j * m->ss]) return false;
    return true;
  };
  if (!shared.empty()) {
    for (std::int64_t i = 0; i < g.l; ++i) {
      std::int64_t limit = g.s;
      while (limit > 0 && !allowed(i, limit - 1)) --limit;
      bool clear = true;
      for (std::int64_t j = 0; clear && j < limit; ++j) clear = allowed(i, j);
      plan.limit[static_cast<std::size_t>(i)] = limit;
      plan.clear[static_cast<std::size_t>(i)] = clear;
    }
  }
  const std::int64_t rows_per_block = shared.empty() ? std::max<std::int64_t>(g.l, 1) : kRowBlock;
  for (std::int64_t begin = 0; begin < g.l; begin += rows_per_block) {
    RowBlock b{begin, std::min(g.l, begin + rows_per_block), 0};
    for (std::int64_t i = b.begin; i < b.end; ++i)
      b.keys = std::max(b.keys, plan.limit[static_cast<std::size_t>(i)]);
    plan.blocks.push_back(b);
  }
  // Splitting the GEMMs only pays when some block skips keys.
  bool skips = false;
  for (const RowBlock& b : plan.blocks) skips = skips || b.keys < g.s;
  if (!skips) plan.blocks = {{0, g.l, g.s}};
  return plan;
}

template <typename T>
void forward_kernel(const FusedAttentionProblem& g, const T* q, const T* k, const T* v,
                    const KeyPlan& plan, T scale, T* p, T* out) {
  const std::int64_t fo = g.out_features();
  // Batch elements write disjoint rows of p and out: one contiguous range per thread.
  parallel_for(g.n, 1, [&](std::int64_t n_begin, std::int64_t n_end) {
    std::vector<T> key_columns(static_cast<std::size_t>(g.d * g.s));  // k_h^T (d, S)
    T* kt = key_columns.data();
    for (std::int64_t n = n_begin; n < n_end; ++n) {
      const T* qn = q + n * g.l * g.fq + g.oq;
      const T* kn = k + n * g.s * g.fk + g.ok;
      const T* vn = v + n * g.s * g.fv + g.ov;
      T* on = out + n * g.l * fo;
      for (std::int64_t h = 0; h < g.h; ++h) {
        T* ph = p + (n * g.h + h) * g.l * g.s;
        cpu::transpose_into(kn + h * g.d, g.s, g.d, g.fk, kt);
        for (const RowBlock& b : plan.blocks) {
          const std::int64_t rows = b.end - b.begin;
          T* pb = ph + b.begin * g.s;
          // S_b (rows,keys) = q_b (rows,d) @ k_h^T (d,keys); scaled below
          cpu::small_gemm(false, rows, b.keys, g.d, qn + b.begin * g.fq + h * g.d, g.fq, kt, g.s,
                          T(0), pb, g.s);
          for (std::int64_t i = b.begin; i < b.end; ++i) {
            T* row = ph + i * g.s;
            const std::int64_t limit = plan.limit[static_cast<std::size_t>(i)];
            cpu::simd_map(row, row, limit, [scale](auto x) { return x * scale; });
            mask_row(row, g.masks, n, h, i, limit, plan.clear[static_cast<std::size_t>(i)] != 0);
            cpu::softmax_row(row, row, limit, /*log=*/false, /*safe=*/true);
            std::fill(row + limit, row + g.s, T(0));
          }
          // o_b (rows,dv) = P_b (rows,keys) @ v_h (keys,dv), into the merged output
          cpu::small_gemm(false, rows, g.dv, b.keys, pb, g.s, vn + h * g.dv, g.fv, T(0),
                          on + b.begin * fo + h * g.dv, fo);
        }
      }
    }
  });
}

// Where the backward writes: a gradient buffer per operand (possibly shared) and the
// beta its GEMMs use (0 overwrites a block nobody else writes, 1 accumulates).
template <typename T>
struct GradTargets {
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  T beta = T(0);
};

// Zeros a (rows, width) block with row stride ld.
template <typename T>
void zero_block(T* x, std::int64_t rows, std::int64_t width, std::int64_t ld) {
  for (std::int64_t r = 0; r < rows; ++r) std::fill(x + r * ld, x + r * ld + width, T(0));
}

template <typename T>
void backward_kernel(const FusedAttentionProblem& g, const T* q, const T* k, const T* v, const T* p,
                     const T* dout, const T* dweights, const KeyPlan& plan, T scale,
                     const GradTargets<T>& t) {
  const std::int64_t fo = g.out_features();
  // With several row blocks dk_h and dv_h sum over the blocks, and keys that no block
  // reaches get no write at all: then start them from zero.
  const bool split =
      plan.blocks.size() > 1 || (!plan.blocks.empty() && plan.blocks.front().keys < g.s);
  const T key_beta = split ? T(1) : t.beta;
  // Batch element n writes only its own rows of dq, dk and dv (even when they share one
  // buffer): one contiguous range of batch elements per thread, each with its own scratch.
  parallel_for(g.n, 1, [&](std::int64_t n_begin, std::int64_t n_end) {
    std::vector<T> scratch_rows(static_cast<std::size_t>(g.l * g.s));
    std::vector<T> value_columns(static_cast<std::size_t>(g.dv * g.s));  // v_h^T (dv, S)
    T* scratch = scratch_rows.data();
    T* vt = value_columns.data();
    for (std::int64_t n = n_begin; n < n_end; ++n) {
      const std::int64_t q_row0 = n * g.l * g.fq + g.oq;
      const std::int64_t k_row0 = n * g.s * g.fk + g.ok;
      const std::int64_t v_row0 = n * g.s * g.fv + g.ov;
      const T* don = dout + n * g.l * fo;
      for (std::int64_t h = 0; h < g.h; ++h) {
        const std::int64_t block = (n * g.h + h) * g.l * g.s;
        T* dk_h = t.dk ? t.dk + k_row0 + h * g.d : nullptr;
        T* dv_h = t.dv ? t.dv + v_row0 + h * g.dv : nullptr;
        if (split && t.beta == T(0)) {
          if (dk_h) zero_block(dk_h, g.s, g.d, g.fk);
          if (dv_h) zero_block(dv_h, g.s, g.dv, g.fv);
        }
        if (t.dq || dk_h) cpu::transpose_into(v + v_row0 + h * g.dv, g.s, g.dv, g.fv, vt);
        for (const RowBlock& b : plan.blocks) {
          const std::int64_t rows = b.end - b.begin, keys = b.keys;
          const T* pb = p + block + b.begin * g.s;
          const T* do_b = don + b.begin * fo + h * g.dv;
          const T* q_b = q + q_row0 + b.begin * g.fq + h * g.d;
          if (dv_h)  // dv_h (keys,dv) += P^T (keys,rows) @ do_b (rows,dv)
            cpu::small_gemm(true, keys, g.dv, rows, pb, g.s, do_b, fo, key_beta, dv_h, g.fv);
          if (!t.dq && !dk_h) continue;
          // dP (rows,keys) = do_b (rows,dv) @ v_h^T (dv,keys) [+ dweights]
          cpu::small_gemm(false, rows, keys, g.dv, do_b, fo, vt, g.s, T(0), scratch, keys);
          for (std::int64_t i = 0; i < rows; ++i) {
            // P is 0 from limit on, so dS is too.
            const std::int64_t limit = plan.limit[static_cast<std::size_t>(b.begin + i)];
            T* dp = scratch + i * keys;
            if (dweights) {
              const T* dw = dweights + block + (b.begin + i) * g.s;
              cpu::simd_map2(dp, dw, dp, limit, [](auto a, auto c) { return a + c; });
            }
            cpu::softmax_backward_row(pb + i * g.s, dp, dp, limit, scale);
            std::fill(dp + limit, dp + keys, T(0));
          }
          if (t.dq)  // dq_b (rows,d) = dS (rows,keys) @ k_h (keys,d)
            cpu::small_gemm(false, rows, g.d, keys, scratch, keys, k + k_row0 + h * g.d, g.fk,
                            t.beta, t.dq + q_row0 + b.begin * g.fq + h * g.d, g.fq);
          if (dk_h)  // dk_h (keys,d) += dS^T (keys,rows) @ q_b (rows,d)
            cpu::small_gemm(true, keys, g.d, rows, scratch, keys, q_b, g.fq, key_beta, dk_h, g.fk);
        }
      }
    }
  });
}

}  // namespace

void CpuKernels::fused_attention_forward(const FusedAttentionProblem& problem, const Tensor& q,
                                         const Tensor& k, const Tensor& v, Tensor& weights,
                                         Tensor& out) {
  const KeyPlan plan = plan_keys(problem);
  dispatch_floating(q.dtype(), "fused_multihead_attention", [&]<typename T>() {
    forward_kernel<T>(problem, ptr<T>(q), ptr<T>(k), ptr<T>(v), plan, static_cast<T>(problem.scale),
                      ptr<T>(weights), ptr<T>(out));
  });
}

void CpuKernels::fused_attention_backward(const FusedAttentionProblem& problem, const Tensor& q,
                                          const Tensor& k, const Tensor& v, const Tensor& weights,
                                          const Tensor& dout, const Tensor& dweights,
                                          bool accumulate, Tensor& dq, Tensor& dk, Tensor& dv) {
  const KeyPlan plan = plan_keys(problem);
  dispatch_floating(weights.dtype(), "fused_multihead_attention backward", [&]<typename T>() {
    auto target = [](Tensor& r) -> T* { return r.defined() ? ptr<T>(r) : nullptr; };
    GradTargets<T> t;
    t.beta = accumulate ? T(1) : T(0);
    t.dq = target(dq);
    t.dk = target(dk);
    t.dv = target(dv);
    backward_kernel<T>(problem, ptr<T>(q), ptr<T>(k), ptr<T>(v), ptr<T>(weights), ptr<T>(dout),
                       dweights.defined() ? ptr<T>(dweights) : nullptr, plan,
                       static_cast<T>(problem.scale), t);
  });
}

}  // namespace headgrad::cpu
