// Tests of the regression tasks (include/headgrad/train/tasks.hpp): nearest_neighbour's
// targets re-derived by brute force from the inputs, points on the unit sphere;
// d_retrieval's layout, targets against closed-form moments of the maximum of 1, 2 and 3
// normals, and standardization measured on many examples; determinism and option errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

using namespace headgrad;
using namespace headgrad::train;

TEST_CASE("nearest_neighbour targets are the unit input farthest from each point") {
  for (const auto& [n, d] : {std::pair<std::int64_t, std::int64_t>{8, 16}, {16, 3}, {2, 2}}) {
    CAPTURE(n);
    CAPTURE(d);
    auto task = make_task("nearest_neighbour", TaskOptions{}.with_length(n).with_dim(d));
    REQUIRE(task->kind() == TaskKind::regression);
    REQUIRE(task->input_dim() == d);
    REQUIRE(task->vocab_size() == d);
    REQUIRE(task->max_len() == n);
    double coordinate_sum = 0, first_squares = 0;
    std::int64_t coordinates = 0;
    for (Split split : {Split::train, Split::validation}) {
      for (std::int64_t index = 0; index < 5; ++index) {
        const Batch batch = task->batch(split, index, 16);
        CHECK_FALSE(batch.target_mask.defined());
        const auto x = batch.inputs.to_vector<float>();
        const auto y = batch.targets.to_vector<float>();
        for (std::int64_t b = 0; b < 16; ++b) {
          const float* points = x.data() + b * n * d;
          for (std::int64_t i = 0; i < n; ++i) {
            const float* target = y.data() + (b * n + i) * d;
            double norm2 = 0, point_norm2 = 0;
            for (std::int64_t f = 0; f < d; ++f) {
              norm2 += double(target[f]) * target[f];
              point_norm2 += double(points[i * d + f]) * points[i * d + f];
              coordinate_sum += points[i * d + f];
              ++coordinates;
            }
            first_squares += double(points[i * d]) * points[i * d];
            CHECK(std::abs(norm2 - 1) < 1e-5);
            CHECK(std::abs(point_norm2 - 1) < 1e-5);
            // Brute force: the j with the smallest inner product with point i.
            std::int64_t best = -1;
            double lowest = 2;
            for (std::int64_t j = 0; j < n; ++j) {
              double dot = 0;
              for (std::int64_t f = 0; f < d; ++f)
                dot += double(points[i * d + f]) * points[j * d + f];
              if (dot < lowest) lowest = dot, best = j;
            }
            CHECK(best != i);
            for (std::int64_t f = 0; f < d; ++f) CHECK(target[f] == points[best * d + f]);
          }
        }
      }
    }
    // Uniform on the sphere: coordinates have mean 0 (the sum of a point's coordinates has
    // variance 1) and the first coordinate's square has mean 1/d, variance
    // E[x^4] - 1/d^2 = 3 / (d (d + 2)) - 1/d^2. Five standard errors each.
    const double point_count = static_cast<double>(coordinates) / d;
    CHECK(std::abs(coordinate_sum / coordinates) < 5 * std::sqrt(point_count) / coordinates);
    const double first_var = 3.0 / (d * (d + 2.0)) - 1.0 / (d * d);
    CHECK(std::abs(first_squares / point_count - 1.0 / d) < 5 * std::sqrt(first_var / point_count));
  }
}

TEST_CASE("d_retrieval has a CLS token scored with the standardized sum of maxima") {
  // Closed forms for the maximum M of T standard normals: T = 1: mean 0, variance 1;
  // T = 2: mean 1/sqrt(pi), variance 1 - 1/pi; T = 3: mean 3 / (2 sqrt(pi)),
  // E[M^2] = 1 + sqrt(3) / (2 pi).
  const double pi = std::acos(-1.0);
  struct Moments {
    std::int64_t t;
    double mean, var;
  };
  const double mean3 = 3 / (2 * std::sqrt(pi));
  for (const Moments& m : {Moments{1, 0.0, 1.0}, Moments{2, 1 / std::sqrt(pi), 1 - 1 / pi},
                           Moments{3, mean3, 1 + std::sqrt(3.0) / (2 * pi) - mean3 * mean3}}) {
    for (std::int64_t d : {1, 4}) {
      CAPTURE(m.t);
      CAPTURE(d);
      auto task = make_task("d_retrieval", TaskOptions{}.with_length(m.t).with_dim(d));
      REQUIRE(task->max_len() == m.t + 1);
      REQUIRE(task->input_dim() == d + 1);
      REQUIRE(task->vocab_size() == 1);
      const std::int64_t width = d + 1, t_max = m.t + 1;
      const Batch batch = task->batch(Split::train, 2, 8);
      const auto x = batch.inputs.to_vector<float>();
      const auto y = batch.targets.to_vector<float>();
      const auto mask = batch.target_mask.to_vector<bool>();
      for (std::int64_t b = 0; b < 8; ++b) {
        const float* row = x.data() + b * t_max * width;
        for (std::int64_t t = 0; t < m.t; ++t) CHECK(row[t * width + d] == 0.0f);
        for (std::int64_t f = 0; f < d; ++f) CHECK(row[m.t * width + f] == 0.0f);
        CHECK(row[m.t * width + d] == 1.0f);
        double total = 0;
        for (std::int64_t f = 0; f < d; ++f) {
          double top = row[f];
          for (std::int64_t t = 1; t < m.t; ++t) top = std::max(top, double(row[t * width + f]));
          total += top;
        }
        const double want = (total - d * m.mean) / std::sqrt(d * m.var);
        for (std::int64_t t = 0; t < t_max; ++t) {
          CAPTURE(t);
          CHECK(mask[b * t_max + t] == (t == m.t));
          if (t == m.t)
            CHECK(y[b * t_max + t] == doctest::Approx(want).epsilon(1e-5));
          else
            CHECK(y[b * t_max + t] == 0.0f);
        }
      }
    }
  }
}

TEST_CASE("d_retrieval targets have mean 0 and variance 1 over many examples") {
  for (std::int64_t t : {8, 32}) {
    CAPTURE(t);
    auto task = make_task("d_retrieval", TaskOptions{}.with_length(t));  // D = 4
    std::vector<double> targets;
    for (std::int64_t index = 0; index < 100; ++index) {
      const Batch batch = task->batch(Split::train, index, 200);
      const auto y = batch.targets.to_vector<float>();
      for (std::int64_t b = 0; b < 200; ++b) targets.push_back(y[b * (t + 1) + t]);
    }
    const double n = static_cast<double>(targets.size());
    double mean = 0;
    for (double v : targets) mean += v;
    mean /= n;
    double m2 = 0, m4 = 0;
    for (double v : targets) {
      m2 += (v - mean) * (v - mean);
      m4 += std::pow(v - mean, 4);
    }
    m2 /= n;
    m4 /= n;
    // Five standard errors: of the mean sqrt(var / n), of the variance sqrt((m4 - var^2) / n).
    MESSAGE("d_retrieval T=" << t << ": mean " << mean << ", variance " << m2 << " over " << n);
    CHECK(std::abs(mean) < 5 * std::sqrt(m2 / n));
    CHECK(std::abs(m2 - 1) < 5 * std::sqrt((m4 - m2 * m2) / n));
  }
}

TEST_CASE("regression batches are deterministic and differ across splits") {
  for (const std::string name : {"nearest_neighbour", "d_retrieval"}) {
    CAPTURE(name);
    const auto options = TaskOptions{}.with_seed(9).with_test_fraction(0.1);
    auto a = make_task(name, options);
    auto b = make_task(name, options);
    const auto values = [](const Batch& batch) { return batch.inputs.to_vector<float>(); };
    for (Split split : {Split::train, Split::validation, Split::test})
      CHECK(values(a->batch(split, 3, 4)) == values(b->batch(split, 3, 4)));
    CHECK(values(a->batch(Split::train, 3, 4)) != values(a->batch(Split::validation, 3, 4)));
    CHECK(values(a->batch(Split::test, 3, 4)) != values(a->batch(Split::validation, 3, 4)));
    CHECK(values(a->batch(Split::train, 3, 4)) != values(a->batch(Split::train, 4, 4)));
    CHECK_THROWS_WITH_AS(make_task(name, TaskOptions{})->batch(Split::test, 0, 4),
                         doctest::Contains("off by default"), ValueError);
    CHECK_THROWS_WITH_AS(make_task(name, TaskOptions{})->batch(Split::test, 0, 4),
                         doctest::Contains("TaskOptions().with_test_fraction(0.15)"), ValueError);
  }
  CHECK_THROWS_WITH_AS(make_task("nearest_neighbour", TaskOptions{}.with_length(1)),
                       doctest::Contains("length"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("nearest_neighbour", TaskOptions{}.with_dim(1)),
                       doctest::Contains("dim"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("d_retrieval", TaskOptions{}.with_length(0)),
                       doctest::Contains("length"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("d_retrieval", TaskOptions{}.with_dim(-1)),
                       doctest::Contains("dim"), ValueError);
}
