// Regression tasks over continuous tokens: nearest_neighbour (Amsel, Yehudai, Bruna) and
// d_retrieval (Yu et al.), documented in include/headgrad/train/tasks.hpp.
//
// Every batch: inputs (B, T, F_in) float32, targets (B, T, F_out) float32, target_mask
// (B, T) bool where only some positions are scored; tokens stays undefined. Data are drawn
// fresh for every batch from the batch's own seed stream, so the splits are independent
// draws (disjoint with probability 1) and no hash split is needed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

// Shared option checks and seeds of the regression tasks.
class RegressionTask : public Task {
 public:
  RegressionTask(std::string name, const TaskOptions& options)
      : name_(std::move(name)), seed_(options.seed), test_fraction_(options.test_fraction) {
    require_validation_fraction(name_, options);
  }
  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::regression; }

 protected:
  // The generator of a batch, after the argument checks.
  Generator generator(Split split, std::int64_t index, std::int64_t batch_size) const {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    return Generator(batch_seed(seed_, name_, split, index, batch_size));
  }

  std::string name_;
  std::uint64_t seed_;
  double test_fraction_;
};

// N points uniform on the unit sphere S^{d-1}; token i's target is its farthest point,
// argmin_j <x_i, x_j>.
class NearestNeighbourTask : public RegressionTask {
 public:
  NearestNeighbourTask(std::string name, const TaskOptions& options)
      : RegressionTask(std::move(name), options) {
    points_ = options.length;
    require_option(points_ >= 2, name_, "length", std::to_string(points_),
                   "(points) must be at least 2");
    dim_ = options.dim == 0 ? 16 : options.dim;
    require_option(dim_ >= 2, name_, "dim", std::to_string(options.dim),
                   "must be at least 2 (or 0 for 16)");
  }

  std::int64_t vocab_size() const override { return dim_; }
  std::int64_t max_len() const override { return points_; }
  std::int64_t input_dim() const override { return dim_; }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    Generator gen = generator(split, index, batch_size);
    const std::int64_t n = points_, d = dim_;
    std::vector<float> inputs(batch_size * n * d), targets(batch_size * n * d);
    std::vector<double> point(d);
    for (std::int64_t b = 0; b < batch_size; ++b) {
      float* x = inputs.data() + b * n * d;
      for (std::int64_t i = 0; i < n; ++i) {
        // A normalized Gaussian is uniform on the sphere.
        double norm2 = 0;
        do {
          norm2 = 0;
          for (std::int64_t f = 0; f < d; ++f) {
            point[f] = gen.next_normal();
            norm2 += point[f] * point[f];
          }
        } while (norm2 == 0);
        const double scale = 1 / std::sqrt(norm2);
        for (std::int64_t f = 0; f < d; ++f) x[i * d + f] = static_cast<float>(point[f] * scale);
      }
      // Inner products of the stored (float) points, in double; the first minimum wins.
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t best = i;
        double lowest = std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (std::int64_t f = 0; f < d; ++f)
            dot += static_cast<double>(x[i * d + f]) * static_cast<double>(x[j * d + f]);
          if (dot < lowest) {
            lowest = dot;
            best = j;
          }
        }
        std::copy(x + best * d, x + (best + 1) * d, targets.data() + (b * n + i) * d);
      }
    }
    Batch batch;
    batch.inputs = from_vector(inputs, {batch_size, n, d});
    batch.targets = from_vector(targets, {batch_size, n, d});
    return batch;
  }

 private:
  std::int64_t points_ = 0;
  std::int64_t dim_ = 0;
};

// The mean and standard deviation of the maximum of `count` independent standard normals,
// by Simpson's rule on the order-statistic density f(x) = count phi(x) Phi(x)^(count-1)
// over [-12, 12] (the density beyond is below 1e-30 for any count up to 10^9).
std::pair<double, double> max_of_normals_moments(std::int64_t count) {
  constexpr double lo = -12, hi = 12;
  constexpr std::int64_t intervals = 48000;  // even, h = 5e-4
  const double h = (hi - lo) / intervals;
  const auto density = [count](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return static_cast<double>(count) * phi * std::pow(cdf, static_cast<double>(count - 1));
  };
  const auto integrate = [&](auto&& g) {
    double total = g(lo) + g(hi);
    for (std::int64_t k = 1; k < intervals; ++k) total += (k % 2 ? 4 : 2) * g(lo + k * h);
    return total * h / 3;
  };
  const double mass = integrate([&](double x) { return density(x); });
  const double mean = integrate([&](double x) { return x * density(x); }) / mass;
  const double var =
      integrate([&](double x) { return (x - mean) * (x - mean) * density(x); }) / mass;
  return {mean, std::sqrt(var)};
}

// T tokens x_t ~ N(0, I_D) (last coordinate 0) and a CLS token (zeros, last coordinate 1);
// the target at CLS is the standardized sum over features of the maximum over tokens.
class DRetrievalTask : public RegressionTask {
 public:
  DRetrievalTask(std::string name, const TaskOptions& options)
      : RegressionTask(std::move(name), options) {
    tokens_ = options.length;
    require_option(tokens_ >= 1, name_, "length", std::to_string(tokens_),
                   "(input tokens) must be at least 1");
    features_ = options.dim == 0 ? 4 : options.dim;
    require_option(features_ >= 1, name_, "dim", std::to_string(options.dim),
                   "must be at least 1 (or 0 for 4)");
    const auto [mean, sd] = max_of_normals_moments(tokens_);
    // The sum of D independent maxima: mean D mu, variance D sigma^2.
    offset_ = static_cast<double>(features_) * mean;
    scale_ = 1 / (std::sqrt(static_cast<double>(features_)) * sd);
  }

  std::int64_t vocab_size() const override { return 1; }
  std::int64_t max_len() const override { return tokens_ + 1; }
  std::int64_t input_dim() const override { return features_ + 1; }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    Generator gen = generator(split, index, batch_size);
    const std::int64_t t_max = tokens_ + 1, width = features_ + 1;
    std::vector<float> inputs(batch_size * t_max * width, 0.0f), targets(batch_size * t_max, 0.0f);
    std::vector<bool> mask(batch_size * t_max, false);
    for (std::int64_t b = 0; b < batch_size; ++b) {
      float* x = inputs.data() + b * t_max * width;
      for (std::int64_t t = 0; t < tokens_; ++t)
        for (std::int64_t f = 0; f < features_; ++f)
          x[t * width + f] = static_cast<float>(gen.next_normal());
      x[tokens_ * width + features_] = 1.0f;  // CLS
      double total = 0;
      for (std::int64_t f = 0; f < features_; ++f) {
        double top = -std::numeric_limits<double>::infinity();
        for (std::int64_t t = 0; t < tokens_; ++t)
          top = std::max(top, static_cast<double>(x[t * width + f]));
        total += top;
      }
      targets[b * t_max + tokens_] = static_cast<float>((total - offset_) * scale_);
      mask[b * t_max + tokens_] = true;
    }
    Batch batch;
    batch.inputs = from_vector(inputs, {batch_size, t_max, width});
    batch.targets = from_vector(targets, {batch_size, t_max, 1});
    batch.target_mask = from_vector(mask, {batch_size, t_max});
    return batch;
  }

 private:
  std::int64_t tokens_ = 0;
  std::int64_t features_ = 0;
  double offset_ = 0;  // D mu
  double scale_ = 1;   // 1 / (sqrt(D) sigma)
};

}  // namespace

std::unique_ptr<Task> make_nearest_neighbour_task(const std::string& name,
                                                  const TaskOptions& options) {
  return std::make_unique<NearestNeighbourTask>(name, options);
}

std::unique_ptr<Task> make_d_retrieval_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<DRetrievalTask>(name, options);
}

}  // namespace headgrad::train::detail
