// The argument checks shared by the fused and the per-head attention layers
// (src/nn/attention_inputs.cpp): batch-first inputs given to a sequence-first layer get a
// hint naming with_batch_first(true), and a mask of the wrong dtype is reported with the
// shape the caller passed, not an internal one.
#include <doctest/doctest.h>

#include <string>

#include "headgrad/headgrad.hpp"

using namespace headgrad;
using namespace headgrad::nn;

namespace {

const char* kBatchFirstHint = "with_batch_first(true)";

// The message of the ShapeError or DTypeError `f` throws; "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

template <typename Layer>
void check_layer(Layer& layer) {
  // Batch-first cross-attention, (N, L, E) and (N, S, E), given to a layer that reads
  // (L, N, E): the batch sizes it sees (L = 5, S = 7) differ.
  const Tensor q = randn({3, 5, 8}), kv = randn({3, 7, 8});
  std::string m = error_of([&] { layer(q, kv, kv); });
  CHECK(m.find("batch sizes differ") != std::string::npos);
  CHECK(m.find(kBatchFirstHint) != std::string::npos);
  // Batch-first self-attention with a (N, S) padding mask: the layer expects (N, S) =
  // (5, 3) of its reading.
  const Tensor x = randn({3, 5, 8});
  m = error_of([&] {
    layer(x, x, x, MultiheadAttentionArgs().with_key_padding_mask(zeros({3, 5}, kBool)));
  });
  CHECK(m.find("key_padding_mask (3,5) bool must be (N, S) = (5,3)") != std::string::npos);
  CHECK(m.find(kBatchFirstHint) != std::string::npos);
  // Sequence-first inputs whose batch sizes really differ get no such hint.
  m = error_of([&] { layer(randn({5, 3, 8}), randn({7, 2, 8}), randn({7, 2, 8})); });
  CHECK(m.find("batch sizes differ") != std::string::npos);
  CHECK(m.find(kBatchFirstHint) == std::string::npos);
  // An int64 padding mask: named with the caller's shape (3,5), and the fix.
  const Tensor y = randn({5, 3, 8});
  m = error_of([&] {
    layer(y, y, y, MultiheadAttentionArgs().with_key_padding_mask(zeros({3, 5}, kInt64)));
  });
  CHECK(m.find("key_padding_mask (3,5) int64 must be bool") != std::string::npos);
  CHECK(m.find("(3,1,1,5)") == std::string::npos);
  CHECK(m.find("to(kBool)") != std::string::npos);
  m = error_of([&] {
    layer(y, y, y, MultiheadAttentionArgs().with_attn_mask(zeros({5, 5}, kInt64)));
  });
  CHECK(m.find("attn_mask (5,5) int64 must be bool") != std::string::npos);
}

}  // namespace

TEST_CASE("attention argument errors name the batch_first fix and the caller's mask shape") {
  MultiheadAttention fused(8, 2);
  check_layer(fused);
  HeadwiseMultiheadAttention headwise(8, 2);
  check_layer(headwise);
  // A batch-first layer needs no hint.
  MultiheadAttention batch_first(MultiheadAttentionOptions(8, 2).with_batch_first(true));
  const std::string m = error_of([&] {
    batch_first(randn({3, 5, 8}), randn({2, 7, 8}), randn({2, 7, 8}));
  });
  CHECK(m.find("batch sizes differ") != std::string::npos);
  CHECK(m.find(kBatchFirstHint) == std::string::npos);
}
