// The fused kernel of the attention op (ops/attention.hpp, multihead_attention): every
// head's attention read straight from the projections' token-major layout and written
// straight into the merged output, as one autograd op with a hand-written backward.
// Equivalent to splitting heads, calling scaled_dot_product_attention and merging heads
// (the composed path, which stays the reference and handles what this kernel does not: a
// GPU tensor, dropout, masks that require grad).
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

#include "headgrad/ops/attention.hpp"

namespace headgrad::detail {

// Validates q, k, v and the head geometry of `args` (errors name `op` and the shapes).
void check_head_attention(const HeadAttentionArgs& args, const char* op);

// Whether the fused kernel covers `args`: CPU tensors, no dropout, no mask that requires grad.
bool fused_attention_applies(const HeadAttentionArgs& args);

// The kernel (dropout_p must be 0, masks must not require grad, tensors on the CPU).
HeadAttentionResult fused_multihead_attention(const HeadAttentionArgs& args);

}  // namespace headgrad::detail
