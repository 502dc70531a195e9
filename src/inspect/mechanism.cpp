// Previous-token and induction scores of attention heads (see inspect/mechanism.hpp).
#include "headgrad/inspect/mechanism.hpp"

#include <limits>
#include <string>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"

namespace headgrad::inspect {

namespace {

// Which (example, query) pairs count and which keys they read, from tokens and padding
// alone; shared by every layer and head of a batch.
struct Queries {
  std::int64_t n = 0, l = 0;
  std::vector<std::int64_t> previous;   // n * L + i of each previous-token query
  std::vector<std::int64_t> induction;  // n * L + i of each induction query
  std::vector<std::int64_t> key_begin;  // induction query q reads keys[key_begin[q] ..
  std::vector<std::int64_t> keys;       //   key_begin[q + 1]): the positions j + 1
};

Queries find_queries(const Tensor& tokens, const Tensor& key_padding_mask, const char* op) {
  if (tokens.dim() != 2)
    throw ShapeError(std::string(op) + ": tokens must be (N, L), got " + shape_str(tokens.shape()));
  if (tokens.dtype() != kInt64)
    throw DTypeError(std::string(op) + ": tokens must be int64, got " + to_string(tokens.dtype()));
  Queries q;
  q.n = tokens.size(0);
  q.l = tokens.size(1);
  std::vector<unsigned char> padding(static_cast<std::size_t>(q.n * q.l), 0);
  if (key_padding_mask.defined()) {
    if (key_padding_mask.shape() != tokens.shape())
      throw ShapeError(std::string(op) + ": key_padding_mask " +
                       shape_str(key_padding_mask.shape()) + " must match tokens " +
                       shape_str(tokens.shape()));
    if (key_padding_mask.dtype() != kBool)
      throw DTypeError(std::string(op) + ": key_padding_mask must be bool (true = padding), got " +
                       to_string(key_padding_mask.dtype()));
    const auto mask = key_padding_mask.to(Device::cpu()).to_vector<bool>();
    for (std::size_t i = 0; i < mask.size(); ++i) padding[i] = mask[i] ? 1 : 0;
  }
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
        q.key_begin.push_back(static_cast<std::int64_t>(q.keys.size()));
      }
    }
  }
  return q;
}

// Sums of the scores over counted queries, and the counts, across calls.
struct Accumulator {
  std::vector<std::vector<double>> previous, induction;  // [layer][head] sums
  std::int64_t previous_count = 0, induction_count = 0;

  void add(const std::vector<Tensor>& patterns, const Queries& q, const char* op) {
    if (previous.empty()) {
      for (const Tensor& p : patterns) {
        const std::size_t heads = p.dim() == 4 ? static_cast<std::size_t>(p.size(1)) : 0;
        previous.emplace_back(heads, 0.0);
        induction.emplace_back(heads, 0.0);
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
        double prev_sum = 0, ind_sum = 0;
        for (const std::int64_t query : q.previous) {
          const std::int64_t e = query / q.l, i = query % q.l;
          prev_sum += a[((e * heads + h) * q.l + i) * s + i - 1];
        }
        for (std::size_t k = 0; k < q.induction.size(); ++k) {
          const std::int64_t e = q.induction[k] / q.l, i = q.induction[k] % q.l;
          const double* row = a + ((e * heads + h) * q.l + i) * s;
          for (std::int64_t key = q.key_begin[k]; key < q.key_begin[k + 1]; ++key)
            ind_sum += row[q.keys[static_cast<std::size_t>(key)]];
        }
        previous[layer][static_cast<std::size_t>(h)] += prev_sum;
        induction[layer][static_cast<std::size_t>(h)] += ind_sum;
      }
    }
    previous_count += static_cast<std::int64_t>(q.previous.size());
    induction_count += static_cast<std::int64_t>(q.induction.size());
  }

  MechanismScores finish(std::vector<std::string> names) const {
    MechanismScores out;
    out.layers = std::move(names);
    out.positions_previous = previous_count;
    out.positions_induction = induction_count;
    auto mean = [](std::vector<std::vector<double>> sums, std::int64_t count) {
      for (auto& row : sums)
        for (double& v : row)
          v = count > 0 ? v / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
      return sums;
    };
    out.previous_token = mean(previous, previous_count);
    out.induction = mean(induction, induction_count);
    return out;
  }
};

}  // namespace

MechanismScores mechanism_scores(const std::vector<Tensor>& patterns, const Tensor& tokens,
                                 const Tensor& key_padding_mask) {
  const char* op = "mechanism_scores";
  for (std::size_t layer = 0; layer < patterns.size(); ++layer)
    if (!patterns[layer].defined())
      throw ValueError(std::string(op) + ": pattern of layer " + std::to_string(layer) +
                       " is undefined");
  tokens.check_defined(op);
  Accumulator acc;
  acc.add(patterns, find_queries(tokens, key_padding_mask, op), op);
  std::vector<std::string> names;
  for (std::size_t layer = 0; layer < patterns.size(); ++layer)
    names.push_back(std::to_string(layer));
  return acc.finish(std::move(names));
}

MechanismScores mechanism_scores(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Task& task, train::Split split, std::int64_t batches,
                                 std::int64_t batch_size) {
  const char* op = "mechanism_scores";
  if (batches <= 0 || batch_size <= 0)
    throw ValueError(std::string(op) + ": batches and batch_size must be positive, got " +
                     std::to_string(batches) + " and " + std::to_string(batch_size));
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
  }
  struct ModeGuard {
    nn::Module& model;
    bool was_training;
    ~ModeGuard() { model.train(was_training); }
  } mode{model, model.is_training()};
  model.eval();
  NoGradGuard no_grad;
  const Device device = model.device();
  Capture capture(model, {Tap::pattern}, /*retain_grads=*/false);
  for (std::int64_t b = 0; b < batches; ++b) {
    const train::Batch batch = task.batch(split, b, batch_size).to(device);
    if (!batch.tokens.defined())
      return Accumulator{acc.previous, acc.induction, 0, 0}.finish(names);
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
    acc.add(patterns, find_queries(batch.tokens, batch.key_padding_mask, op), op);
  }
  return acc.finish(names);
}

}  // namespace headgrad::inspect
