// optim::EnsembleAdamW: member k's slices follow optim::AdamW with member k's options
// bitwise, a member's state dict resumes it alone in AdamW bitwise, keep() drops members'
// state, and invalid options or parameters are refused.
#include <doctest/doctest.h>

#include <vector>

#include "headgrad/headgrad.hpp"

using namespace headgrad;

namespace {

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST_CASE("EnsembleAdamW updates each member as AdamW does, and its state resumes it alone") {
  Generator gen(21);
  const Tensor start = randn({3, 37}, kFloat32, &gen);  // 37: a SIMD body and a tail
  Tensor stacked = start.clone().requires_grad_(true);
  std::vector<optim::AdamWOptions> hyper = {
      optim::AdamWOptions().with_lr(1e-3),
      optim::AdamWOptions().with_lr(1e-2).with_weight_decay(0.1),
      optim::AdamWOptions().with_lr(3e-3).with_betas(0.8, 0.99)};
  optim::EnsembleAdamW ensemble({stacked}, hyper);
  std::vector<Tensor> alone;
  std::vector<std::unique_ptr<optim::AdamW>> optimizers;
  for (std::int64_t k = 0; k < 3; ++k) {
    alone.push_back(select(start, 0, k).clone().requires_grad_(true));
    optimizers.push_back(std::make_unique<optim::AdamW>(std::vector<Tensor>{alone.back()},
                                                        hyper[static_cast<std::size_t>(k)]));
  }
  std::vector<Tensor> grads;
  for (int step = 0; step < 6; ++step) grads.push_back(randn({3, 37}, kFloat32, &gen));
  for (int step = 0; step < 3; ++step) {
    stacked.set_grad(grads[step].clone());
    ensemble.step();
    for (std::int64_t k = 0; k < 3; ++k) {
      alone[k].set_grad(select(grads[step], 0, k));
      optimizers[k]->step();
    }
  }
  for (std::int64_t k = 0; k < 3; ++k) CHECK(values(select(stacked, 0, k)) == values(alone[k]));
  // Member 1 leaves with its state and goes on alone; the ensemble keeps 0 and 2.
  Tensor resumed = select(stacked, 0, 1).detach().clone().requires_grad_(true);
  optim::AdamW on_its_own({resumed}, optim::AdamWOptions());
  on_its_own.load_state_dict(ensemble.member_state_dict(1));
  CHECK(on_its_own.lr() == 1e-2);
  CHECK(on_its_own.weight_decay() == 0.1);
  ensemble.keep({0, 2});
  {
    NoGradGuard no_grad;
    const Tensor kept = index_select(stacked, 0, from_vector<std::int64_t>({0, 2}, {2}));
    stacked.impl()->storage = kept.impl()->storage;
    stacked.impl()->shape = kept.shape();
  }
  for (int step = 3; step < 6; ++step) {
    stacked.set_grad(index_select(grads[step], 0, from_vector<std::int64_t>({0, 2}, {2})));
    ensemble.step();
    resumed.set_grad(select(grads[step], 0, 1));
    on_its_own.step();
    for (std::int64_t k = 0; k < 3; ++k) {
      alone[k].set_grad(select(grads[step], 0, k));
      optimizers[k]->step();
    }
  }
  CHECK(values(resumed) == values(alone[1]));
  CHECK(values(select(stacked, 0, 0)) == values(alone[0]));
  CHECK(values(select(stacked, 0, 1)) == values(alone[2]));
  CHECK(ensemble.size() == 2);
  CHECK(ensemble.lr(1) == 3e-3);
}

TEST_CASE("EnsembleAdamW refuses invalid options and parameters not stacked over its members") {
  const Tensor p = zeros({2, 3}).requires_grad_(true);
  CHECK_THROWS_WITH_AS(optim::EnsembleAdamW({p}, {optim::AdamWOptions()}),
                       doctest::Contains("not stacked over the 1 members"), ShapeError);
  CHECK_THROWS_WITH_AS(
      optim::EnsembleAdamW({p}, {optim::AdamWOptions(), optim::AdamWOptions().with_lr(-1)}),
      doctest::Contains("member 1: invalid lr"), ValueError);
  optim::EnsembleAdamW ok({p}, {optim::AdamWOptions(), optim::AdamWOptions()});
  CHECK_THROWS_AS(ok.set_lr(2, 1e-3), IndexError);
  CHECK_THROWS_WITH_AS(ok.set_lr(0, std::nan("")), doctest::Contains("invalid learning rate"),
                       ValueError);
}

TEST_CASE("clip_member_grad_norms_ clips each member as clip_grad_norm_ clips it alone") {
  Generator gen(31);
  const Tensor a = randn({2, 5, 3}, kFloat32, &gen), b = randn({2, 4}, kFloat32, &gen);
  Tensor pa = zeros({2, 5, 3}).requires_grad_(true), pb = zeros({2, 4}).requires_grad_(true);
  pa.set_grad(mul(a, 3.0));
  pb.set_grad(mul(b, 3.0));
  const std::vector<double> norms = optim::clip_member_grad_norms_({pa, pb}, {1.0, 0.0});
  for (std::int64_t k = 0; k < 2; ++k) {
    Tensor qa = zeros({5, 3}).requires_grad_(true), qb = zeros({4}).requires_grad_(true);
    qa.set_grad(mul(select(a, 0, k), 3.0));
    qb.set_grad(mul(select(b, 0, k), 3.0));
    const double total = k == 0 ? optim::clip_grad_norm_({qa, qb}, 1.0)
                                : optim::grad_norm({qa, qb});  // max_norm 0: not clipped
    CHECK(norms[static_cast<std::size_t>(k)] == total);
    CHECK(values(select(pa.grad(), 0, k)) == values(qa.grad()));
    CHECK(values(select(pb.grad(), 0, k)) == values(qb.grad()));
  }
  CHECK_THROWS_WITH_AS(optim::clip_member_grad_norms_({pa}, {1.0, 1.0, 1.0}),
                       doctest::Contains("not stacked over the 3 members"), ShapeError);
}
