// fused_multihead_attention (see attention_fused.hpp): forward and backward side by side.
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
#include "ops/attention_fused.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/small_gemm.hpp"
#include "ops/cpu/softmax_rows.hpp"

namespace headgrad::detail {

namespace {

constexpr const char* kOp = "fused_multihead_attention";

// The (N, H, L, S) geometry and the column blocks of the three operands.
struct Geometry {
  std::int64_t n = 0, h = 0, l = 0, s = 0, d = 0, dv = 0;
  std::int64_t fq = 0, fk = 0, fv = 0;  // features (row strides) of q, k, v
  std::int64_t oq = 0, ok = 0, ov = 0;  // column offsets of head 0
  std::int64_t out_features() const { return h * dv; }
};

// A mask as the kernel reads it: blocked (bool) or additive (T) entries at
// n*sn + h*sh + i*sl + j*ss.
struct MaskView {
  Tensor tensor;  // bool (true = blocked) or the scores' dtype (added)
  bool additive = false;
  std::int64_t sn = 0, sh = 0, sl = 0, ss = 0;
  // A bool mask the same for every example and head (sn = sh = 0), e.g. causal.
  bool shared() const { return !additive && sn == 0 && sh == 0; }
};

std::string describe_inputs(const HeadAttentionArgs& a, const char* op) {
  std::string s = std::string(op) + ": q " + a.q.tensor.describe() + " at column " +
                  std::to_string(a.q.offset) + ", k " + a.k.tensor.describe() + " at column " +
                  std::to_string(a.k.offset) + ", v " + a.v.tensor.describe() + " at column " +
                  std::to_string(a.v.offset) + ", heads " + std::to_string(a.heads) +
                  ", head dims " + std::to_string(a.head_dim) + "/" +
                  std::to_string(a.value_head_dim);
  return s + ": ";
}

Geometry check_inputs(const HeadAttentionArgs& a, const char* op) {
  for (const HeadColumns* c : {&a.q, &a.k, &a.v}) c->tensor.check_defined(op);
  const Tensor& q = a.q.tensor;
  const Tensor& k = a.k.tensor;
  const Tensor& v = a.v.tensor;
  if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3)
    throw ShapeError(describe_inputs(a, op) + "q, k and v must be 3-d (N, len, features)");
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    throw DTypeError(describe_inputs(a, op) + "q, k and v must share one floating dtype");
  if (q.device() != k.device() || q.device() != v.device())
    throw DeviceError(describe_inputs(a, op) + "q, k and v must be on one device");
  Geometry g;
  g.n = q.size(0);
  g.l = q.size(1);
  g.s = k.size(1);
  g.h = a.heads;
  g.d = a.head_dim;
  g.dv = a.value_head_dim;
  g.fq = q.size(2);
  g.fk = k.size(2);
  g.fv = v.size(2);
  g.oq = a.q.offset;
  g.ok = a.k.offset;
  g.ov = a.v.offset;
  if (k.size(0) != g.n || v.size(0) != g.n)
    throw ShapeError(describe_inputs(a, op) + "batch sizes differ");
  if (v.size(1) != g.s) throw ShapeError(describe_inputs(a, op) + "k and v lengths differ");
  if (g.h <= 0 || g.d < 0 || g.dv < 0)
    throw ValueError(describe_inputs(a, op) + "heads must be positive and head dims non-negative");
  auto fits = [](std::int64_t offset, std::int64_t width, std::int64_t features) {
    return offset >= 0 && offset + width <= features;
  };
  if (!fits(g.oq, g.h * g.d, g.fq) || !fits(g.ok, g.h * g.d, g.fk) || !fits(g.ov, g.h * g.dv, g.fv))
    throw ShapeError(describe_inputs(a, op) + "the head columns run past the features");
  return g;
}

MaskView view_mask(const AttentionMask& mask, const Geometry& g, DType dtype) {
  const Tensor& t = mask.tensor();
  const Shape target{g.n, g.h, g.l, g.s};
  bool fits = t.dim() >= 1 && t.dim() <= 4;
  for (std::int64_t i = 0; fits && i < t.dim(); ++i) {
    const std::int64_t md = t.size(-1 - i), td = target[3 - i];
    fits = md == td || md == 1;
  }
  if (!fits)
    throw ShapeError(std::string(kOp) + ": mask " + t.describe() +
                     " does not broadcast to the scores (N, H, L, S) = " + shape_str(target));
  if (t.requires_grad())
    throw ValueError(std::string(kOp) + ": mask " + t.describe() +
                     " requires grad; call multihead_attention, which takes the composed path");
  MaskView view;
  switch (mask.meaning()) {
    case MaskMeaning::blocked_where_true:
      view.tensor = t;
      break;
    case MaskMeaning::attend_where_true:
      view.tensor = t.dtype() == kBool ? logical_not(t) : eq(t, zeros({}, t.options()));
      break;
    case MaskMeaning::additive:
      view.tensor = t.dtype() == dtype ? t : t.to(dtype);
      view.additive = true;
      break;
  }
  Shape padded = view.tensor.shape();
  padded.insert(padded.begin(), 4 - padded.size(), 1);
  const Shape strides = contiguous_strides(padded);
  view.sn = padded[0] == 1 ? 0 : strides[0];
  view.sh = padded[1] == 1 ? 0 : strides[1];
  view.sl = padded[2] == 1 ? 0 : strides[2];
  view.ss = padded[3] == 1 ? 0 : strides[3];
  return view;
}

// Applies the masks to the score row (n, h, i) of length s; shared masks are skipped when
// `skip_shared` (they are known to block nothing there).
template <typename T>
void mask_row(T* row, const std::vector<MaskView>& masks, std::int64_t n, std::int64_t h,
              std::int64_t i, std::int64_t s, bool skip_shared) {
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  for (const MaskView& m : masks) {
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

KeyPlan plan_keys(const Geometry& g, const std::vector<MaskView>& masks) {
  KeyPlan plan;
  plan.limit.assign(static_cast<std::size_t>(g.l), g.s);
  plan.clear.assign(static_cast<std::size_t>(g.l), 1);
  std::vector<const MaskView*> shared;
  for (const MaskView& m : masks)
    if (m.shared()) shared.push_back(&m);
  auto allowed = [&](std::int64_t i, std::int64_t j) {
    for (const MaskView* m : shared)
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
void forward_kernel(const Geometry& g, const T* q, const T* k, const T* v,
                    const std::vector<MaskView>& masks, const KeyPlan& plan, T scale, T* p,
                    T* out) {
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
            mask_row(row, masks, n, h, i, limit, plan.clear[static_cast<std::size_t>(i)] != 0);
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
void backward_kernel(const Geometry& g, const T* q, const T* k, const T* v, const T* p,
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

// The distinct input tensors among q, k, v and which of them each operand is.
struct Operands {
  std::vector<Tensor> inputs;
  int q = 0, k = 0, v = 0;
};

Operands distinct_operands(const HeadAttentionArgs& a) {
  Operands o;
  auto index_of = [&o](const Tensor& t) {
    for (std::size_t i = 0; i < o.inputs.size(); ++i)
      if (o.inputs[i].impl() == t.impl()) return static_cast<int>(i);
    o.inputs.push_back(t);
    return static_cast<int>(o.inputs.size() - 1);
  };
  o.q = index_of(a.q.tensor);
  o.k = index_of(a.k.tensor);
  o.v = index_of(a.v.tensor);
  return o;
}

// Whether the column blocks [begin, end) that write into one buffer are disjoint and
// together cover all `features` columns.
bool disjoint_and_covering(std::vector<std::pair<std::int64_t, std::int64_t>> blocks,
                           std::int64_t features) {
  std::sort(blocks.begin(), blocks.end());
  std::int64_t next = 0;
  for (const auto& [begin, end] : blocks) {
    if (begin != next) return false;  // a gap or an overlap
    next = end;
  }
  return next == features;
}

// The backward of fused_multihead_attention: gradients of its distinct inputs from the
// output's (and the weights' when returned) gradient and the saved P. One buffer per
// distinct input that needs a gradient; the column blocks written into each decide whether
// it must start from zeros and be accumulated into.
std::vector<Tensor> fused_backward(const Geometry& g, const Operands& ops, const KeyPlan& plan,
                                   double scale, const std::vector<Tensor>& grads,
                                   const autograd::BackwardContext& ctx) {
  const std::size_t count = ops.inputs.size();
  std::vector<Tensor> result(count);
  const Tensor& p = ctx.saved(count);
  Tensor dout = grads[0];
  const Tensor dweights = grads.size() > 1 ? grads[1] : Tensor();
  if (!dout.defined() && !dweights.defined()) return result;
  if (!dout.defined()) dout = zeros({g.n, g.l, g.out_features()}, p.options());
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> columns(count);
  columns[ops.q].push_back({g.oq, g.oq + g.h * g.d});
  columns[ops.k].push_back({g.ok, g.ok + g.h * g.d});
  columns[ops.v].push_back({g.ov, g.ov + g.h * g.dv});
  bool accumulate = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (!ctx.needs_grad(i)) continue;
    result[i] = new_tensor(ctx.saved(i).shape(), p.dtype());
    if (!disjoint_and_covering(columns[i], ctx.saved(i).size(2))) accumulate = true;
  }
  dispatch_floating(p.dtype(), "fused_multihead_attention backward", [&]<typename T>() {
    if (accumulate)
      for (Tensor& r : result)
        if (r.defined()) std::fill(ptr<T>(r), ptr<T>(r) + r.numel(), T(0));
    GradTargets<T> t;
    t.beta = accumulate ? T(1) : T(0);
    auto target = [&](int i) -> T* { return result[i].defined() ? ptr<T>(result[i]) : nullptr; };
    t.dq = target(ops.q);
    t.dk = target(ops.k);
    t.dv = target(ops.v);
    backward_kernel<T>(g, ptr<T>(ctx.saved(ops.q)), ptr<T>(ctx.saved(ops.k)),
                       ptr<T>(ctx.saved(ops.v)), ptr<T>(p), ptr<T>(dout),
                       dweights.defined() ? ptr<T>(dweights) : nullptr, plan, static_cast<T>(scale),
                       t);
  });
  return result;
}

}  // namespace

void check_head_attention(const HeadAttentionArgs& args, const char* op) {
  (void)check_inputs(args, op);
}

bool fused_attention_applies(const HeadAttentionArgs& args) {
  bool applies = args.q.tensor.device().is_cpu() && args.dropout_p == 0.0;
  for (const AttentionMask& mask : args.masks) applies = applies && !mask.tensor().requires_grad();
  return applies;
}

HeadAttentionResult fused_multihead_attention(const HeadAttentionArgs& args) {
  const Geometry g = check_inputs(args, kOp);
  if (!args.q.tensor.device().is_cpu())
    throw DeviceError(describe_inputs(args, kOp) +
                      "the fused kernel runs on the CPU; call multihead_attention, which takes "
                      "the composed path on a GPU");
  if (args.dropout_p != 0.0)
    throw ValueError(describe_inputs(args, kOp) + "the fused kernel has no dropout (dropout_p " +
                     std::to_string(args.dropout_p) + "); call multihead_attention");
  const DType dtype = args.q.tensor.dtype();
  std::vector<MaskView> masks;
  masks.reserve(args.masks.size());
  for (const AttentionMask& m : args.masks) masks.push_back(view_mask(m, g, dtype));

  const KeyPlan plan = plan_keys(g, masks);
  Tensor output = new_tensor({g.n, g.l, g.out_features()}, dtype);
  Tensor weights = new_tensor({g.n, g.h, g.l, g.s}, dtype);  // P
  dispatch_floating(dtype, kOp, [&]<typename T>() {
    forward_kernel<T>(g, ptr<T>(args.q.tensor), ptr<T>(args.k.tensor), ptr<T>(args.v.tensor), masks,
                      plan, static_cast<T>(args.scale), ptr<T>(weights), ptr<T>(output));
  });

  const Operands ops = distinct_operands(args);
  std::vector<Tensor> saved = ops.inputs;
  saved.push_back(weights);
  std::vector<Tensor*> outputs{&output};
  if (args.need_weights) outputs.push_back(&weights);
  autograd::record(kOp, ops.inputs, outputs, saved,
                   [g, ops, plan, scale = args.scale](const std::vector<Tensor>& grads,
                                                      const autograd::BackwardContext& ctx) {
                     return fused_backward(g, ops, plan, scale, grads, ctx);
                   });
  HeadAttentionResult result;
  result.output = output;
  if (args.need_weights) result.weights = weights;
  return result;
}

}  // namespace headgrad::detail
