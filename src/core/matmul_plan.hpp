// matmul's plan: the problem torch.matmul's broadcasting rules make of two operand shapes,
// shared by the op (src/ops/matmul.cpp) and every device's matmul kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "headgrad/core/shape.hpp"

namespace headgrad::detail {

// A matmul problem after promoting 1-d operands to matrices: C[i] (m,n) = A[a_index[i]]
// (m,k) @ B[b_index[i]] (k,n) for each i of the broadcast batch.
struct MatmulPlan {
  Shape out_shape;  // with the promoted dims of 1-d operands removed again
  std::int64_t m = 1, k = 1, n = 1;
  std::int64_t batch = 1;       // matrices in C
  std::int64_t a_matrices = 1;  // matrices stored in A (fewer than batch if broadcast)
  std::int64_t b_matrices = 1;
  // B is one matrix shared by the whole batch and A is not broadcast: the batch folds
  // into the rows, and C (batch*m, n) = A (batch*m, k) @ B (k, n) is one GEMM.
  bool fold_batch_into_rows = false;
  // Element offsets of each batch's matrices (empty when folded).
  std::vector<std::int64_t> a_offsets, b_offsets, c_offsets;
  // Nonzero where batch i is the first to touch its A / B matrix: the backward GEMMs
  // that accumulate a broadcast operand's gradient start there with beta = 0.
  std::vector<std::uint8_t> a_first, b_first;
  // The operands' shapes with 1-d ones promoted to matrices ((1, k) and (k, 1)), and the
  // broadcast batch dims of the output.
  Shape a_promoted, b_promoted, batch_shape;
};

// The plan of a @ b; ShapeError (naming matmul and both shapes) when they do not multiply.
MatmulPlan plan_matmul(const Shape& a_shape, const Shape& b_shape);

}  // namespace headgrad::detail
