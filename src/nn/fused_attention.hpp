// The fused core of nn::MultiheadAttention: every head's attention read straight from the
// projections' token-major layout and written straight into the merged output, as one
// autograd op with a hand-written backward. Equivalent to splitting heads, calling
// functional::scaled_dot_product_attention and merging heads (the composed path, which
// stays the reference and handles what this op does not: dropout, taps, head gates,
// add_bias_kv, add_zero_attn, masks that require grad).
//
//   q (N, L, Fq), k (N, S, Fk), v (N, S, Fv); head h reads the column blocks
//     q_h = q[:, :, oq + h*d  : oq + (h+1)*d ]   (L, d)
//     k_h = k[:, :, ok + h*d  : ok + (h+1)*d ]   (S, d)
//     v_h = v[:, :, ov + h*dv : ov + (h+1)*dv]   (S, dv)
//   scores  = scale * q_h k_h^T, then every mask      (L, S)   one GEMM, alpha = scale
//   P       = softmax(scores) row by row, an all -inf row -> zeros (SoftmaxMode::safe)
//   out[:, :, h*dv : (h+1)*dv] = P v_h               (L, dv)  written with ldc = H*dv
//
// q, k and v may be one tensor (self-attention on the packed in-projection: columns
// [0, E), [E, 2E), [2E, 3E) of (N, L, 3E)), so no head split, merge or narrow is copied.
#pragma once

#include <cstdint>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_mask.hpp"

namespace headgrad::nn::detail {

// A (N, len, features) tensor whose head h occupies columns
// [offset + h * width, offset + (h + 1) * width), width being the head dim.
struct HeadColumns {
  Tensor tensor;
  std::int64_t offset = 0;
};

struct FusedAttentionArgs {
  HeadColumns q, k, v;
  std::int64_t heads = 1;
  std::int64_t head_dim = 0;        // d: per-head width of q and k
  std::int64_t value_head_dim = 0;  // dv: per-head width of v
  double scale = 1.0;
  // Each broadcasts to (N, H, L, S) and has at most 4 dims; none may require grad.
  std::vector<AttentionMask> masks;
  // Return P (N, H, L, S) as a differentiable output too.
  bool need_weights = false;
};

struct FusedAttentionResult {
  Tensor output;   // (N, L, H * dv), heads merged
  Tensor weights;  // (N, H, L, S) when need_weights, undefined otherwise
};

// Errors name the op and the shapes.
FusedAttentionResult fused_multihead_attention(const FusedAttentionArgs& args);

}  // namespace headgrad::nn::detail
