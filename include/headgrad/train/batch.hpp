// train::Batch: one batch of a task, the tensors a model and its loss consume.
//
// Shapes (B = batch size, T = the task's max_len, F = its num_features, F_in its input_dim,
// F_out its vocab_size for regression tasks):
//   tokens            (B, T) int64   input ids (0 = padding where lengths vary); undefined
//                     for regression tasks, whose inputs are continuous
//   inputs            (B, T, F_in) float32: continuous tokens (regression tasks); undefined
//                     otherwise
//   targets           sequence tasks: (B, T) int64, the id expected at the next position
//                     where it is scored, -100 elsewhere (cross_entropy's ignore_index);
//                     classification tasks: (B) int64 class labels; regression tasks:
//                     (B, T, F_out) float32, the vector expected at each position
//   target_mask       (B, T) bool, true = scored (regression tasks); undefined = every
//                     position scored
//   key_padding_mask  (B, T) bool, true = padding; undefined when every example has
//                     length T
//   features          (B, F) float32 tabular features; undefined unless the task has them
//
// Tasks build batches on the CPU (their data is a pure function of the seed, whatever the
// device); to(device) gives the copy a model on a GPU consumes. The Trainer does that for
// every batch it draws.
#pragma once

#include <cstdint>
#include <string>

#include "headgrad/core/tensor.hpp"

namespace headgrad::train {

// The target id of a position that is not scored: cross_entropy(..., ignore_index = -100).
inline constexpr std::int64_t kIgnoreIndex = -100;

struct Batch {
  Tensor tokens;
  Tensor targets;
  Tensor key_padding_mask;
  Tensor features;
  Tensor inputs;       // (B, T, F_in) float32: continuous tokens (regression tasks)
  Tensor target_mask;  // (B, T) bool, true = scored (regression; undefined = every position)

  // The tensor that carries the batch's examples: tokens, or inputs when tokens is
  // undefined (regression batches).
  const Tensor& leading() const { return tokens.defined() ? tokens : inputs; }

  std::int64_t size() const { return leading().defined() ? leading().shape()[0] : 0; }

  // The batch with every defined tensor on `device` (the same tensors when they are there
  // already, so on the CPU this copies nothing); undefined ones stay undefined.
  Batch to(Device device) const {
    auto move = [&](const Tensor& t) { return t.defined() ? t.to(device) : t; };
    return Batch{move(tokens),   move(targets), move(key_padding_mask),
                 move(features), move(inputs),  move(target_mask)};
  }
  Device device() const { return leading().defined() ? leading().device() : Device::cpu(); }
  // Part `rank` of `count` equal parts along the examples: rows [rank * B / count,
  // (rank + 1) * B / count) of every defined tensor (what one data-parallel rank trains
  // on). B must be a multiple of count (ValueError otherwise).
  Batch shard(int rank, int count) const {
    const std::int64_t b = size();
    if (count < 1 || rank < 0 || rank >= count || b % count != 0)
      throw ValueError("Batch::shard: a batch of " + std::to_string(b) +
                       " examples cannot be cut into " + std::to_string(count) +
                       " equal parts (part " + std::to_string(rank) + ")");
    const std::int64_t rows = b / count;
    auto part = [&](const Tensor& t) { return t.defined() ? t.narrow(0, rank * rows, rows) : t; };
    return Batch{part(tokens),   part(targets), part(key_padding_mask),
                 part(features), part(inputs),  part(target_mask)};
  }
};

}  // namespace headgrad::train
