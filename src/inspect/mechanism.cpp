// Previous-token and induction scores of attention heads (see inspect/mechanism.hpp).
#include "headgrad/inspect/mechanism.hpp"

#include <limits>
#include <string>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/train/batch.hpp"
#include "nn/training_mode_guard.hpp"

namespace headgrad::inspect {

namespace {

// Which (example, query) pairs count and which keys they read, from tokens and padding
// alone; shared by every layer and head of a batch.
struct Queries {
  std::int64_t n = 0, l = 0;
  std::vector<std::int64_t> previous;   // n * L + i of each previous-token query
  std::vector<std::int64_t> induction;  // n * L + i of each induction query
  std::vector<unsigned char> scored;    // per induction query: 1 when its prediction is scored
  std::vector<std::int64_t> key_begin;  // induction query q reads keys[key_begin[q] ..
  std::vector<std::int64_t> keys;       //   key_begin[q + 1]): the positions j + 1
};

// (N, L) bool mask on the CPU as bytes, or `fill` everywhere when undefined.
std::vector<unsigned char> mask_bytes(const Tensor& mask, const Tensor& tokens, const char* name,
                                      unsigned char fill, const char* op) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(tokens.numel()), fill);
  if (!mask.defined()) return bytes;
  if (mask.shape() != tokens.shape())
    throw ShapeError(std::string(op) + ": " + name + " " + shape_str(mask.shape()) +
                     " must match tokens " + shape_str(tokens.shape()));
  if (mask.dtype() != kBool)
    throw DTypeError(std::string(op) + ": " + name + " must be bool, got " +
                     to_string(mask.dtype()));
  const auto values = mask.to(Device::cpu()).to_vector<bool>();
  for (std::size_t i = 0; i < values.size(); ++i) bytes[i] = values[i] ? 1 : 0;
  return bytes;
}

// (N, L) bool: true where a sequence task's next-token target is scored (not kIgnoreIndex).
Tensor scored_positions(const Tensor& targets) {
  const auto ids = targets.to(Device::cpu()).to_vector<std::int64_t>();
  std::vector<bool> scored(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) scored[i] = ids[i] != train::kIgnoreIndex;
  return from_vector(scored, targets.shape());
}

Queries find_queries(const Tensor& tokens, const Tensor& key_padding_mask, const Tensor& scored,
                     const char* op) {
  if (tokens.dim() != 2)
    throw ShapeError(std::string(op) + ": tokens must be (N, L), got " + shape_str(tokens.shape()));
  if (tokens.dtype() != kInt64)
    throw DTypeError(std::string(op) + ": tokens must be int64, got " + to_string(tokens.dtype()));
  Queries q;
  q.n = tokens.size(0);
  q.l = tokens.size(1);
  const std::vector<unsigned char> padding =
      mask_bytes(key_padding_mask, tokens, "key_padding_mask (true = padding)", 0, op);
  const std::vector<unsigned char> scored_at = mask_bytes(scored, tokens, "scored", 1, op);
  const Tensor cpu_tokens = tokens.to(Device::cpu());
  const std::int64_t* t = cpu_tokens.data<std::int64_t>();
  const unsigned char* pad = padding.data();
  q.key_begin.push_back(0);
  for (std::int64_t e = 0; e < q.n; ++e) {
    const std::int64_t row = e * q.l;
    for (std::int64_t i = 1; i < q.l; ++i) {
      if (pad[row + i]) continue;
      if (!pad[row + i - 1]) q.previous.push_back(row + i);
      const std::size_t before = q.keys.size();
      for (std::int64_t j = 0; j + 1 < i; ++j)
        if (!pad[row + j] && t[row + j] == t[row + i]) q.keys.push_back(j + 1);
      if (q.keys.size() > before) {
        q.induction.push_back(row + i);
        q.scored.push_back(scored_at[static_cast<std::size_t>(row + i)]);
        q.key_begin.push_back(static_cast<std::int64_t>(q.keys.size()));
      }
    }
  }
  return q;
}

// Sums of the scores over counted queries, and the counts, across calls.
struct Accumulator {
  std::vector<std::vector<double>> previous, induction, induction_scored;  // [layer][head] sums
  std::int64_t previous_count = 0, induction_count = 0, induction_scored_count = 0;

  void add(const std::vector<Tensor>& patterns, const Queries& q, const char* op) {
    if (previous.empty()) {
      for (const Tensor& p : patterns) {
        const std::size_t heads = p.dim() == 4 ? static_cast<std::size_t>(p.size(1)) : 0;
        previous.emplace_back(heads, 0.0);
        induction.emplace_back(heads, 0.0);
        induction_scored.emplace_back(heads, 0.0);
      }
    }
    for (std::size_t layer = 0; layer < patterns.size(); ++layer) {
      const Tensor& p = patterns[layer];
      if (p.dim() != 4 || p.size(0) != q.n || p.size(2) != q.l || p.size(3) < q.l ||
          p.size(1) != static_cast<std::int64_t>(previous[layer].size()))
        throw ShapeError(
            std::string(op) + ": pattern of layer " + std::to_string(layer) + " is " +
            shape_str(p.shape()) + ", expected (N, H, L, S) with N = " + std::to_string(q.n) +
            ", L = " + std::to_string(q.l) + ", S >= L (and the same H in every batch)");
      if (p.dtype() != kFloat32 && p.dtype() != kFloat64)
        throw DTypeError(std::string(op) + ": pattern of layer " + std::to_string(layer) +
                         " must be floating point, got " + to_string(p.dtype()));
      // A: (N, H, L, S) float64; query (e, i) of head h is row (e * H + h) * L + i.
      const Tensor a64 = p.to(Device::cpu()).to(kFloat64);
      const double* a = a64.data<double>();
      const std::int64_t heads = p.size(1), s = p.size(3);
      for (std::int64_t h = 0; h < heads; ++h) {
        double prev_sum = 0, ind_sum = 0, ind_scored_sum = 0;
        for (const std::int64_t query : q.previous) {
          const std::int64_t e = query / q.l, i = query % q.l;
          prev_sum += a[((e * heads + h) * q.l + i) * s + i - 1];
        }
        for (std::size_t k = 0; k < q.induction.size(); ++k) {
          const std::int64_t e = q.induction[k] / q.l, i = q.induction[k] % q.l;
          const double* row = a + ((e * heads + h) * q.l + i) * s;
          double query_sum = 0;
          for (std::int64_t key = q.key_begin[k]; key < q.key_begin[k + 1]; ++key)
            query_sum += row[q.keys[static_cast<std::size_t>(key)]];
          ind_sum += query_sum;
          if (q.scored[k]) ind_scored_sum += query_sum;
        }
        previous[layer][static_cast<std::size_t>(h)] += prev_sum;
        induction[layer][static_cast<std::size_t>(h)] += ind_sum;
        induction_scored[layer][static_cast<std::size_t>(h)] += ind_scored_sum;
      }
    }
    previous_count += static_cast<std::int64_t>(q.previous.size());
    induction_count += static_cast<std::int64_t>(q.induction.size());
    for (unsigned char is_scored : q.scored) induction_scored_count += is_scored;
  }

  MechanismScores finish(std::vector<std::string> names) const {
    MechanismScores out;
    out.layers = std::move(names);
    out.positions_previous = previous_count;
    out.positions_induction = induction_count;
    out.positions_induction_scored = induction_scored_count;
    auto mean = [](std::vector<std::vector<double>> sums, std::int64_t count) {
      for (auto& row : sums)
        for (double& v : row)
          v = count > 0 ? v / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
      return sums;
    };
    out.previous_token = mean(previous, previous_count);
    out.induction = mean(induction, induction_count);
    out.induction_scored = mean(induction_scored, induction_scored_count);
    return out;
  }
};

}  // namespace

MechanismScores mechanism_scores(const std::vector<Tensor>& patterns, const Tensor& tokens,
                                 const Tensor& key_padding_mask, const Tensor& scored) {
  const char* op = "mechanism_scores";
  for (std::size_t layer = 0; layer < patterns.size(); ++layer)
    if (!patterns[layer].defined())
      throw ValueError(std::string(op) + ": pattern of layer " + std::to_string(layer) +
                       " is undefined");
  tokens.check_defined(op);
  Accumulator acc;
  acc.add(patterns, find_queries(tokens, key_padding_mask, scored, op), op);
  std::vector<std::string> names;
  for (std::size_t layer = 0; layer < patterns.size(); ++layer)
    names.push_back(std::to_string(layer));
  return acc.finish(std::move(names));
}

namespace {

// The scores of `forward` on batches 0 .. count-1 given by get_batch(b): patterns captured
// per batch, summed over all of them.
template <typename GetBatch>
MechanismScores score_batches(nn::Module& model, const train::ForwardFn& forward,
                              std::int64_t count, GetBatch&& get_batch) {
  const char* op = "mechanism_scores";
  const auto layers = attention_layers(model);
  std::vector<std::string> names, pattern_names;
  for (const auto& l : layers) {
    names.push_back(l.name);
    pattern_names.push_back(l.name.empty() ? "pattern" : l.name + ".pattern");
  }
  Accumulator acc;
  for (const auto& l : layers) {
    acc.previous.emplace_back(static_cast<std::size_t>(l.layer->options().num_heads), 0.0);
    acc.induction.emplace_back(static_cast<std::size_t>(l.layer->options().num_heads), 0.0);
    acc.induction_scored.emplace_back(static_cast<std::size_t>(l.layer->options().num_heads), 0.0);
  }
  nn::detail::TrainingModeGuard mode(model);  // restored however the loop ends
  model.eval();
  NoGradGuard no_grad;
  const Device device = model.device();
  Capture capture(model, {"pattern"}, /*retain_grads=*/false);
  for (std::int64_t b = 0; b < count; ++b) {
    const train::Batch batch = get_batch(b).to(device);
    if (!batch.tokens.defined())
      return Accumulator{acc.previous, acc.induction, acc.induction_scored, 0, 0, 0}.finish(names);
    capture.clear();
    {
      auto scope = capture.activate();
      forward(batch);
    }
    std::vector<Tensor> patterns;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (!capture.contains(pattern_names[l]))
        throw ValueError(std::string(op) + ": attention layer '" + names[l] +
                         "' did not run in forward, so it has no pattern to score");
      patterns.push_back(capture.get(pattern_names[l]));
    }
    // Sequence tasks: a position is scored when its next-token target is not ignored.
    const bool per_position = batch.targets.defined() && batch.targets.dtype() == kInt64 &&
                              batch.targets.shape() == batch.tokens.shape();
    const Tensor scored = per_position ? scored_positions(batch.targets) : Tensor{};
    acc.add(patterns, find_queries(batch.tokens, batch.key_padding_mask, scored, op), op);
  }
  return acc.finish(names);
}

}  // namespace

MechanismScores mechanism_scores(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Task& task, train::Split split, std::int64_t batches,
                                 std::int64_t batch_size) {
  if (batches <= 0 || batch_size <= 0)
    throw ValueError("mechanism_scores: batches and batch_size must be positive, got " +
                     std::to_string(batches) + " and " + std::to_string(batch_size));
  return score_batches(model, forward, batches,
                       [&](std::int64_t b) { return task.batch(split, b, batch_size); });
}

MechanismScores mechanism_scores(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Batch& batch) {
  return score_batches(model, forward, 1, [&](std::int64_t) { return batch; });
}

}  // namespace headgrad::inspect
