// matmul's plan (see matmul_plan.hpp).
#include "core/matmul_plan.hpp"

#include <algorithm>
#include <string>

#include "core/broadcast.hpp"
#include "headgrad/core/error.hpp"

namespace headgrad::detail {

namespace {

std::string pair_str(const Shape& a, const Shape& b) {
  return "matmul: " + shape_str(a) + " @ " + shape_str(b) + ": ";
}

// The batch dims of A and B broadcast right-aligned (ShapeError when they do not).
Shape broadcast_batch(const Shape& a_shape, const Shape& b_shape, const Shape& a_batch,
                      const Shape& b_batch) {
  Shape batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::int64_t da = i < a_batch.size() ? a_batch[a_batch.size() - 1 - i] : 1;
    const std::int64_t db = i < b_batch.size() ? b_batch[b_batch.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(pair_str(a_shape, b_shape) + "batch dimensions " + shape_str(a_batch) +
                       " and " + shape_str(b_batch) + " do not broadcast");
    batch[batch.size() - 1 - i] = da == 1 ? db : da;
  }
  return batch;
}

// Walks the broadcast batch in row-major order, tracking which stored matrix of A and B each
// batch entry reads (stride 0 along broadcast dims): p's offsets and first-touch flags.
void walk_batch(const Shape& a_batch, const Shape& b_batch, const Shape& batch, MatmulPlan& p) {
  const Shape a_strides = broadcast_strides(a_batch, batch);
  const Shape b_strides = broadcast_strides(b_batch, batch);
  p.a_offsets.resize(p.batch);
  p.b_offsets.resize(p.batch);
  p.c_offsets.resize(p.batch);
  p.a_first.assign(p.batch, 0);
  p.b_first.assign(p.batch, 0);
  std::vector<std::uint8_t> a_seen(p.a_matrices, 0), b_seen(p.b_matrices, 0);
  Shape counter(batch.size(), 0);
  std::int64_t a_index = 0, b_index = 0;
  for (std::int64_t i = 0; i < p.batch; ++i) {
    p.a_offsets[i] = a_index * p.m * p.k;
    p.b_offsets[i] = b_index * p.k * p.n;
    p.c_offsets[i] = i * p.m * p.n;
    p.a_first[i] = a_seen[a_index] == 0;
    p.b_first[i] = b_seen[b_index] == 0;
    a_seen[a_index] = b_seen[b_index] = 1;
    for (std::size_t d = batch.size(); d-- > 0;) {
      ++counter[d];
      a_index += a_strides[d];
      b_index += b_strides[d];
      if (counter[d] < batch[d]) break;
      a_index -= a_strides[d] * batch[d];
      b_index -= b_strides[d] * batch[d];
      counter[d] = 0;
    }
  }
}

}  // namespace

MatmulPlan plan_matmul(const Shape& a_shape, const Shape& b_shape) {
  if (a_shape.empty() || b_shape.empty())
    throw ShapeError(pair_str(a_shape, b_shape) +
                     "both operands need at least 1 dimension (got a 0-d tensor)");
  const bool a_vector = a_shape.size() == 1;
  const bool b_vector = b_shape.size() == 1;
  MatmulPlan p;
  p.m = a_vector ? 1 : a_shape[a_shape.size() - 2];
  p.k = a_shape.back();
  const std::int64_t b_k = b_vector ? b_shape[0] : b_shape[b_shape.size() - 2];
  p.n = b_vector ? 1 : b_shape.back();
  if (p.k != b_k)
    throw ShapeError(pair_str(a_shape, b_shape) + "inner dimensions " + std::to_string(p.k) +
                     " and " + std::to_string(b_k) + " differ");

  // Batch dims: everything but the matrix dims, broadcast right-aligned.
  const Shape a_batch(a_shape.begin(), a_shape.end() - std::min<std::ptrdiff_t>(2, a_shape.size()));
  const Shape b_batch(b_shape.begin(), b_shape.end() - std::min<std::ptrdiff_t>(2, b_shape.size()));
  const Shape batch = broadcast_batch(a_shape, b_shape, a_batch, b_batch);
  p.batch = numel_of(batch);
  p.a_matrices = numel_of(a_batch);
  p.b_matrices = numel_of(b_batch);

  p.a_promoted = a_vector ? Shape{1, p.k} : a_shape;
  p.b_promoted = b_vector ? Shape{p.k, 1} : b_shape;
  p.batch_shape = batch;
  p.out_shape = batch;
  if (!a_vector) p.out_shape.push_back(p.m);
  if (!b_vector) p.out_shape.push_back(p.n);

  p.fold_batch_into_rows = p.b_matrices == 1 && p.a_matrices == p.batch;
  if (!p.fold_batch_into_rows) walk_batch(a_batch, b_batch, batch, p);
  return p;
}

}  // namespace headgrad::detail
