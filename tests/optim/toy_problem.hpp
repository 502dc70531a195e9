// The small problem the optimizer tests train (the same one tests/reference/
// generate_optim_cases.py gives PyTorch): data x (6,3), y (6,2), t (3); parameters
// W (3,4), b (4), V (4,2), u (2), s (3), in this order;
//   loss_k = mean((tanh(x @ W + b) @ V - y)^2) + (0.5 * sum((s - t)^2) when k is even).
// u never has a gradient; s has one on even steps only.
#pragma once

#include <cstdint>
#include <vector>

#include "headgrad/headgrad.hpp"

namespace headgrad::testing {

struct ToyProblem {
  Tensor x, y, t;              // data
  std::vector<Tensor> params;  // W, b, V, u, s (leaves, requires_grad)

  // Random data and parameters from `seed` in `dtype`.
  static ToyProblem random(std::uint64_t seed, DType dtype = kFloat64) {
    Generator gen(seed);
    ToyProblem p;
    p.x = randn({6, 3}, dtype, &gen);
    p.y = randn({6, 2}, dtype, &gen);
    p.t = randn({3}, dtype, &gen);
    for (const Shape& shape : {Shape{3, 4}, Shape{4}, Shape{4, 2}, Shape{2}, Shape{3}})
      p.params.push_back(mul(randn(shape, dtype, &gen), 0.5).detach().requires_grad_(true));
    return p;
  }

  // The loss of step k (0-based), recorded in the graph.
  Tensor loss(std::int64_t k) const {
    const Tensor& W = params[0];
    const Tensor& b = params[1];
    const Tensor& V = params[2];
    const Tensor& s = params[4];
    Tensor r = matmul(tanh(matmul(x, W) + b), V) - y;
    Tensor out = mean(r * r);
    if (k % 2 == 0) {
      Tensor d = s - t;
      out = out + sum(d * d) * 0.5;
    }
    return out;
  }

  // zero_grad, forward and backward of step k; returns the loss.
  double compute_grads(std::int64_t k) {
    for (Tensor& p : params) p.zero_grad();
    Tensor l = loss(k);
    l.backward();
    return l.item();
  }
};

}  // namespace headgrad::testing
