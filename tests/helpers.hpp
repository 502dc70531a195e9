// Shared test helpers: gradcheck assertions and float32-vs-float64 agreement.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

namespace headgrad::testing {

// A float64 tensor of `shape` with normal entries from a fixed-seed generator, marked
// requires_grad.
inline Tensor param(const Shape& shape, std::uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return mul(randn(shape, kFloat64, &gen), scale).detach().requires_grad_(true);
}

// Entries bounded away from zero (for log, sqrt, div, pow): |x| in [0.5, 1.5], sign kept
// positive when `positive`.
inline Tensor positive_param(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, 0.5, 1.5, kFloat64, &gen).requires_grad_(true);
}

// CHECKs that gradcheck passes, printing the worst element when it does not.
inline void check_gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                            GradcheckOptions options = {}) {
  GradcheckResult r = gradcheck(fn, inputs, options);
  INFO(r.report());
  CHECK(r.passed);
  CHECK(r.elements_checked > 0);
}

// CHECKs that `actual` has `expected_shape` and, element by element, the `expected` values
// (relative epsilon; 0 means exact equality).
inline void check_values(const Tensor& actual, const Shape& expected_shape,
                         const std::vector<double>& expected, double epsilon = 1e-12) {
  REQUIRE(actual.shape() == expected_shape);
  const auto v = actual.to_vector<double>();
  REQUIRE(v.size() == expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    if (epsilon == 0)
      CHECK(v[i] == expected[i]);  // Approx is strict: epsilon 0 never matches
    else
      CHECK(v[i] == doctest::Approx(expected[i]).epsilon(epsilon));
  }
}

// A small GPT's options (vocabulary 11, 8 positions, width 12, 3 heads, 2 layers), the
// model the hook, scope and module tests share.
inline nn::GPTOptions tiny_gpt_options(bool per_head = false) {
  nn::GPTOptions o;
  o.vocab_size = 11;
  o.max_len = 8;
  o.d_model = 12;
  o.nhead = 3;
  o.num_layers = 2;
  o.per_head = per_head;
  return o;
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  auto va = a.to_vector<double>();
  auto vb = b.to_vector<double>();
  double m = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) || std::isnan(vb[i])) {
      if (std::isnan(va[i]) != std::isnan(vb[i])) return INFINITY;
      continue;
    }
    if (std::isinf(va[i]) || std::isinf(vb[i])) {
      if (va[i] != vb[i]) return INFINITY;
      continue;
    }
    m = std::max(m, std::abs(va[i] - vb[i]));
  }
  return m;
}

// CHECKs that `fn` gives the same output and input gradients (for a random upstream
// gradient) in float32 as in float64, within `tol` (absolute, on values of order 1).
inline void check_float32_matches_float64(const GradcheckFn& fn,
                                          const std::vector<Tensor>& inputs64, double tol = 1e-4) {
  auto run = [&](DType dtype) {
    std::vector<Tensor> ins;
    for (const Tensor& t : inputs64) {
      Tensor c = t.detach();
      if (is_floating(t.dtype())) c = c.to(dtype).detach().clone();
      if (t.requires_grad()) c.requires_grad_(true);
      ins.push_back(c);
    }
    Tensor out = fn(ins);
    Generator gen(77);
    Tensor upstream = randn(out.shape(), kFloat64, &gen).to(dtype);
    std::vector<Tensor> grads(ins.size());
    if (out.requires_grad()) {
      out.backward(upstream);
      for (std::size_t i = 0; i < ins.size(); ++i)
        if (ins[i].requires_grad() && ins[i].grad().defined())
          grads[i] = ins[i].grad().to(kFloat64);
    }
    std::vector<Tensor> result{out.to(kFloat64)};
    result.insert(result.end(), grads.begin(), grads.end());
    return result;
  };
  auto r64 = run(kFloat64);
  auto r32 = run(kFloat32);
  REQUIRE(r64.size() == r32.size());
  for (std::size_t i = 0; i < r64.size(); ++i) {
    if (!r64[i].defined()) continue;
    INFO("result " << i << " (0 = output, k = gradient of input k-1)");
    CHECK(max_abs_diff(r64[i], r32[i]) <= tol);
  }
}

// The message of the exception `expr` throws (empty if none).
#define HG_ERROR_MESSAGE(expr)             \
  [&]() -> std::string {                   \
    try {                                  \
      (void)(expr);                        \
    } catch (const ::headgrad::Error& e) { \
      return e.what();                     \
    }                                      \
    return "";                             \
  }()

}  // namespace headgrad::testing
