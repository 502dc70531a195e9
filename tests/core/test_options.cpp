// HEADGRAD_WITH and HEADGRAD_WITH_SELF (headgrad/core/options.hpp): each setter sets its
// field and returns the options it was called on, as the derived type for a CRTP base.
#include <doctest/doctest.h>

#include <type_traits>

#include "headgrad/headgrad.hpp"

using namespace headgrad;

TEST_CASE("option setters set their field and chain, returning the derived options") {
  const auto mha =
      nn::MultiheadAttentionOptions(8, 2).with_dropout(0.25).with_batch_first(true).with_kdim(4);
  CHECK(mha.dropout == 0.25);
  CHECK(mha.batch_first);
  CHECK(mha.kdim == 4);
  CHECK(mha.vdim == 0);  // untouched
  static_assert(
      std::is_same_v<decltype(optim::AdamWOptions().with_lr(1e-3)), optim::AdamWOptions&>);
  static_assert(std::is_same_v<decltype(optim::AdamOptions().with_eps(1e-6)), optim::AdamOptions&>);
  const optim::AdamWOptions adamw = optim::AdamWOptions().with_lr(2e-3).with_weight_decay(0.5);
  CHECK(adamw.lr == 2e-3);
  CHECK(adamw.weight_decay == 0.5);
  train::TaskOptions task;
  task.with_length(5).with_seed(9);
  CHECK(task.length == 5);
  CHECK(task.seed == 9);
}
