// Pruning orders and references: greedy ablation, random-order bands and per-head
// parameter counts (see inspect/heads.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "headgrad/core/error.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/attention_head.hpp"

namespace headgrad::inspect {

namespace {

// Every head of `model` in model order (layer-major).
std::vector<HeadId> all_heads(nn::Module& model) {
  std::vector<HeadId> heads;
  const auto layers = attention_layers(model);
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::int64_t h = 0; h < layers[l].layer->options().num_heads; ++h)
      heads.push_back({static_cast<std::int64_t>(l), h});
  return heads;
}

void check_evaluation_args(const char* op, std::int64_t batches, std::int64_t batch_size) {
  if (batches <= 0 || batch_size <= 0)
    throw ValueError(std::string(op) + ": batches and batch_size must be positive, got " +
                     std::to_string(batches) + " and " + std::to_string(batch_size));
}

train::Metrics evaluate_ablated(nn::Module& model, const train::ForwardFn& forward,
                                const train::Task& task, train::Split split, std::int64_t batches,
                                std::int64_t batch_size, const std::vector<HeadId>& removed) {
  HeadAblation ablation(model, removed);
  return train::evaluate(model, forward, task, split, batches, batch_size);
}

// The q quantile of sorted values by linear interpolation at position q (m - 1).
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

// Mean, low and high quantile of `values` appended to the three columns.
void summarize(std::vector<double> values, double coverage, std::vector<double>& mean,
               std::vector<double>& low, std::vector<double>& high) {
  double sum = 0;
  for (double v : values) sum += v;
  mean.push_back(sum / static_cast<double>(values.size()));
  std::sort(values.begin(), values.end());
  low.push_back(quantile(values, (1 - coverage) / 2));
  high.push_back(quantile(values, (1 + coverage) / 2));
}

// Head h's parameters in a fused layer: 1/H of every per-head-sliced tensor (each holds
// d rows, entries or columns per head), i.e. everything but out_proj.bias.
}  // namespace

std::vector<HeadId> greedy_order(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Task& task, train::Split split, std::int64_t batches,
                                 std::int64_t batch_size) {
  check_evaluation_args("greedy_order", batches, batch_size);
  std::vector<HeadId> remaining = all_heads(model), removed;
  while (!remaining.empty()) {
    std::size_t best = 0;
    double best_loss = 0;
    for (std::size_t c = 0; c < remaining.size(); ++c) {
      std::vector<HeadId> trial = removed;
      trial.push_back(remaining[c]);
      const double loss =
          evaluate_ablated(model, forward, task, split, batches, batch_size, trial).loss;
      if (c == 0 || loss < best_loss) {  // strict: ties keep the earlier head in model order
        best = c;
        best_loss = loss;
      }
    }
    removed.push_back(remaining[best]);
    remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return removed;
}

PruningBand random_pruning_band(nn::Module& model, const train::ForwardFn& forward,
                                const train::Task& task, train::Split split, std::int64_t batches,
                                std::int64_t batch_size, std::int64_t orders, std::uint64_t seed,
                                double coverage) {
  const char* op = "random_pruning_band";
  check_evaluation_args(op, batches, batch_size);
  if (orders < 1)
    throw ValueError(std::string(op) + ": orders must be at least 1, got " +
                     std::to_string(orders));
  if (!(coverage > 0 && coverage <= 1))
    throw ValueError(std::string(op) + ": coverage must be in (0, 1], got " +
                     std::to_string(coverage));
  // Index of each head in model order, for the set keys.
  const auto heads = all_heads(model);
  const auto layers = attention_layers(model);
  std::vector<std::int64_t> first_index;  // per layer: index of its head 0
  std::int64_t count = 0;
  for (const auto& l : layers) {
    first_index.push_back(count);
    count += l.layer->options().num_heads;
  }
  const std::size_t n = heads.size();

  // memo: removed set ('1' per removed head, in model order) -> metrics.
  std::map<std::string, train::Metrics> memo;
  // values[k][i]: order i's metrics with its first k heads removed.
  std::vector<std::vector<train::Metrics>> values(n + 1);
  for (std::int64_t i = 0; i < orders; ++i) {
    const auto order = random_order(model, seed + static_cast<std::uint64_t>(i));
    std::string key(n, '0');
    for (std::size_t k = 0; k <= n; ++k) {
      if (k > 0) {
        const HeadId& id = order[k - 1];
        key[static_cast<std::size_t>(first_index[id.layer] + id.head)] = '1';
      }
      auto it = memo.find(key);
      if (it == memo.end()) {
        const std::vector<HeadId> removed(order.begin(),
                                          order.begin() + static_cast<std::ptrdiff_t>(k));
        it = memo.emplace(key, evaluate_ablated(model, forward, task, split, batches, batch_size,
                                                removed))
                 .first;
      }
      values[k].push_back(it->second);
    }
  }

  PruningBand band;
  band.orders = orders;
  band.evaluations = static_cast<std::int64_t>(memo.size());
  for (std::size_t k = 0; k <= n; ++k) {
    band.removed.push_back(static_cast<std::int64_t>(k));
    std::vector<double> accuracy, loss;
    for (const auto& m : values[k]) {
      accuracy.push_back(m.accuracy);
      loss.push_back(m.loss);
    }
    summarize(accuracy, coverage, band.mean_accuracy, band.low_accuracy, band.high_accuracy);
    summarize(loss, coverage, band.mean_loss, band.low_loss, band.high_loss);
  }
  return band;
}

std::vector<std::int64_t> head_parameter_counts(nn::Module& model) {
  std::vector<std::int64_t> counts;
  for (const auto& named : attention_layers(model)) {
    const nn::AttentionLayer& layer = *named.layer;
    for (std::int64_t h = 0; h < layer.head_count(); ++h)
      counts.push_back(layer.head_weights(h).numel());
  }
  return counts;
}

std::int64_t attention_parameter_count(nn::Module& model) {
  std::int64_t total = 0;
  for (const auto& named : attention_layers(model)) total += named.layer->num_parameters();
  return total;
}

}  // namespace headgrad::inspect
