// The Optimizer contract shared by SGD, Adam and AdamW: parameter checks, zero_grad,
// gradient checks before any update, updates outside the graph, state-dict layout and
// round trip, bitwise resume, and all-or-nothing load_state_dict validation.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/optim/sgd.hpp"
#include "helpers.hpp"
#include "optim/toy_problem.hpp"

using namespace headgrad;
using headgrad::testing::ToyProblem;

namespace {

using Factory = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>&)>;

// One configuration of each optimizer, with every feature that carries state switched on.
std::vector<std::pair<std::string, Factory>> factories() {
  return {
      {"SGD",
       [](const std::vector<Tensor>& p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::SGD>(
             p, optim::SGDOptions(0.05).with_momentum(0.9).with_nesterov(true).with_weight_decay(
                    0.01));
       }},
      {"Adam",
       [](const std::vector<Tensor>& p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::Adam>(
             p, optim::AdamOptions(0.02).with_amsgrad(true).with_weight_decay(0.01));
       }},
      {"AdamW",
       [](const std::vector<Tensor>& p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.02));
       }},
  };
}

// Bitwise equality of two tensors (same dtype, shape and bytes).
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.numel() * element_size(a.dtype())) == 0;
}

bool same_state(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [k, t] : a)
    if (!same_bits(t, b.at(k))) return false;
  return true;
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// Steps [from, to) of the toy problem: gradients, clipping, the lr from a schedule (a pure
// function of the step), a step.
void run_steps(ToyProblem& problem, optim::Optimizer& opt, std::int64_t from, std::int64_t to) {
  const auto schedule = optim::LRSchedule::cosine(0.03, 2, 12, 0.003);
  for (std::int64_t k = from; k < to; ++k) {
    problem.compute_grads(k);
    optim::clip_grad_norm_(problem.params, 0.5);
    schedule.apply(opt, k);
    opt.step();
  }
}

}  // namespace

TEST_CASE("optimizers refuse parameters that are not distinct floating leaves") {
  Tensor ok = tensor({1.0}).requires_grad_(true);
  auto message = [](std::vector<Tensor> params) {
    return HG_ERROR_MESSAGE(optim::SGD(params, optim::SGDOptions(0.1)));
  };
  CHECK(message({}).find("empty parameter list") != std::string::npos);
  CHECK(message({ok, Tensor()}).find("parameter 1 is undefined") != std::string::npos);
  CHECK(message({ok, zeros({2}, kInt64)}).find("not floating") != std::string::npos);
  CHECK(message({ok * 2.0}).find("not a leaf") != std::string::npos);
  CHECK(message({ok, ok}).find("same tensor as parameter 0") != std::string::npos);
  CHECK_THROWS_AS(optim::Adam({ok * 2.0}, optim::AdamOptions()), ValueError);
  CHECK(
      message({ok, tensor({1.0}, kFloat64)}).empty());  // no requires_grad: allowed, never stepped
}

TEST_CASE("set_lr refuses a negative or non-finite learning rate and keeps the old one") {
  optim::Adam opt({tensor({1.0}).requires_grad_(true)}, optim::AdamOptions(0.1));
  CHECK_THROWS_AS(opt.set_lr(-0.5), ValueError);
  CHECK_THROWS_AS(opt.set_lr(NAN), ValueError);
  CHECK_THROWS_AS(opt.set_lr(INFINITY), ValueError);
  CHECK(opt.lr() == 0.1);
  opt.set_lr(0.0);
  CHECK(opt.lr() == 0.0);
}

TEST_CASE("zero_grad drops every parameter's gradient") {
  ToyProblem problem = ToyProblem::random(1);
  optim::SGD opt(problem.params, optim::SGDOptions(0.1));
  problem.loss(0).backward();
  CHECK(problem.params[0].grad().defined());
  opt.zero_grad();
  for (const Tensor& p : problem.params) CHECK_FALSE(p.grad().defined());
  opt.step();  // nothing has a gradient: nothing moves, nothing throws
}

TEST_CASE("a gradient of the wrong shape or dtype is reported before any parameter moves") {
  for (auto& [name, make] : factories()) {
    CAPTURE(name);
    Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_(true);
    Tensor b = tensor({3.0, 4.0}, kFloat64).requires_grad_(true);
    auto opt = make({a, b});
    a.set_grad(tensor({0.1, 0.1}, kFloat64));
    b.impl()->grad = tensor({0.1, 0.1, 0.1}, kFloat64);  // set_grad itself would refuse it
    CHECK(HG_ERROR_MESSAGE(opt->step()).find("gradient of parameter 1 has shape (3)") !=
          std::string::npos);
    CHECK_THROWS_AS(opt->step(), ShapeError);
    b.impl()->grad = tensor({0.1, 0.1}, kFloat32);
    CHECK_THROWS_AS(opt->step(), DTypeError);
    CHECK(a.to_vector<double>() == std::vector<double>{1.0, 2.0});
    CHECK(opt->state_dict().size() == make({a, b})->state_dict().size());  // no state created
  }
}

TEST_CASE("a step changes parameters in place outside the graph and bumps their version") {
  for (auto& [name, make] : factories()) {
    CAPTURE(name);
    Tensor p = tensor({1.0, 2.0}, kFloat64).requires_grad_(true);
    const void* storage = p.raw_data();
    auto opt = make({p});
    Tensor y = (p * p).sum();  // saves p for backward
    p.set_grad(tensor({0.5, -0.5}, kFloat64));
    opt->step();  // grad mode is on here: the optimizer turns it off itself
    CHECK(p.raw_data() == storage);
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
    CHECK(p.at({0}) != 1.0);
    CHECK_THROWS_AS(y.backward(), AutogradError);  // the saved p was overwritten
  }
}

TEST_CASE("state_dict names hyperparameters and per-parameter buffers as documented") {
  ToyProblem problem = ToyProblem::random(2);
  optim::Adam adam(problem.params, optim::AdamOptions(0.01).with_amsgrad(true));
  problem.compute_grads(0);
  adam.step();
  problem.compute_grads(1);  // s (parameter 4) has no gradient on odd steps
  adam.step();
  const nn::StateDict sd = adam.state_dict();
  std::vector<std::string> want{"num_params", "lr",           "beta1",  "beta2",
                                "eps",        "weight_decay", "amsgrad"};
  for (const char* i : {"0", "1", "2", "4"})
    for (const char* b : {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
      want.push_back(std::string("state.") + i + "." + b);
  CHECK(sd.keys() == want);  // u (parameter 3) never had a gradient: no state
  CHECK(sd.at("state.0.step").dtype() == kInt64);
  CHECK(sd.at("state.0.step").item<std::int64_t>() == 2);
  CHECK(sd.at("state.4.step").item<std::int64_t>() == 1);
  CHECK(sd.at("lr").dtype() == kFloat64);
  CHECK(sd.at("lr").dim() == 0);
  CHECK(sd.at("amsgrad").item<std::int64_t>() == 1);
  CHECK(sd.at("num_params").item<std::int64_t>() == 5);
  CHECK(sd.at("state.2.exp_avg").shape() == Shape{4, 2});
  CHECK(same_bits(sd.at("state.2.exp_avg"), adam.exp_avg(2)));

  optim::SGD sgd(problem.params, optim::SGDOptions(0.1).with_momentum(0.9));
  problem.compute_grads(2);
  sgd.step();
  const auto keys = sgd.state_dict().keys();
  CHECK(keys == std::vector<std::string>{"num_params", "lr", "momentum", "dampening",
                                         "weight_decay", "nesterov", "state.0.momentum_buffer",
                                         "state.1.momentum_buffer", "state.2.momentum_buffer",
                                         "state.4.momentum_buffer"});
}

TEST_CASE("a state dict is a snapshot: later steps do not change it") {
  for (auto& [name, make] : factories()) {
    CAPTURE(name);
    ToyProblem problem = ToyProblem::random(3);
    auto opt = make(problem.params);
    run_steps(problem, *opt, 0, 3);
    const nn::StateDict before = opt->state_dict();
    nn::StateDict copy;
    for (const auto& [k, t] : before) copy.insert(k, t.clone());
    run_steps(problem, *opt, 3, 5);
    CHECK(same_state(before, copy));
    CHECK_FALSE(same_state(before, opt->state_dict()));
  }
}

TEST_CASE("loading a state dict and continuing is bitwise identical to never stopping") {
  for (auto& [name, make] : factories()) {
    CAPTURE(name);
    ToyProblem straight = ToyProblem::random(4);
    ToyProblem resumed = ToyProblem::random(4);
    auto opt_straight = make(straight.params);
    run_steps(straight, *opt_straight, 0, 12);

    auto opt_first = make(resumed.params);
    run_steps(resumed, *opt_first, 0, 5);
    const nn::StateDict saved = opt_first->state_dict();
    const std::vector<Tensor> saved_params = copies(resumed.params);
    opt_first.reset();

    // A fresh run: new parameter tensors, an optimizer built with other hyperparameters;
    // load_state_dict restores lr, momentum/betas, ... and every buffer.
    resumed.params = saved_params;
    std::unique_ptr<optim::Optimizer> opt_second;
    if (name == "SGD")
      opt_second =
          std::make_unique<optim::SGD>(resumed.params, optim::SGDOptions(9.0).with_momentum(0.1));
    else if (name == "Adam")
      opt_second = std::make_unique<optim::Adam>(resumed.params, optim::AdamOptions(9.0));
    else
      opt_second = std::make_unique<optim::AdamW>(resumed.params,
                                                  optim::AdamWOptions(9.0).with_amsgrad(true));
    opt_second->load_state_dict(saved);
    CHECK(same_state(opt_second->state_dict(), saved));
    run_steps(resumed, *opt_second, 5, 12);

    for (std::size_t i = 0; i < straight.params.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(resumed.params[i], straight.params[i]));
    }
    CHECK(same_state(opt_second->state_dict(), opt_straight->state_dict()));
  }
}

TEST_CASE("load_state_dict accepts float32 buffers for float64 parameters by converting them") {
  ToyProblem problem = ToyProblem::random(5);
  optim::SGD opt(problem.params, optim::SGDOptions(0.1).with_momentum(0.9));
  run_steps(problem, opt, 0, 1);
  nn::StateDict sd;
  for (const auto& [k, t] : opt.state_dict())
    sd.insert(k, k.rfind("state.", 0) == 0 ? t.to(kFloat32) : t);
  optim::SGD other(problem.params, optim::SGDOptions(0.1).with_momentum(0.9));
  other.load_state_dict(sd);
  CHECK(other.momentum_buffer(0).dtype() == kFloat64);
  CHECK(testing::max_abs_diff(other.momentum_buffer(0), opt.momentum_buffer(0)) < 1e-6);
}

TEST_CASE("load_state_dict checks every entry first and changes nothing when one is wrong") {
  for (auto& [name, make] : factories()) {
    CAPTURE(name);
    ToyProblem problem = ToyProblem::random(6);
    auto opt = make(problem.params);
    run_steps(problem, *opt, 0, 2);
    const nn::StateDict good = opt->state_dict();
    const std::string buffer = name == "SGD" ? "momentum_buffer" : "exp_avg";

    auto edited = [&](const std::function<void(nn::StateDict&)>& edit, bool drop = false,
                      const std::string& drop_key = "") {
      nn::StateDict sd;
      for (const auto& [k, t] : good)
        if (!(drop && k == drop_key)) sd.insert(k, t);
      edit(sd);
      return sd;
    };
    auto load_message = [&](const nn::StateDict& sd) {
      return HG_ERROR_MESSAGE(opt->load_state_dict(sd));
    };
    auto contains = [](const std::string& message, const std::string& part) {
      INFO(message);
      CHECK(message.find(part) != std::string::npos);
      CHECK(message.find("nothing was loaded") != std::string::npos);
    };

    // Another optimizer's state, so that a wrong load would be visible.
    auto other = make(copies(problem.params));
    ToyProblem other_problem = ToyProblem::random(7);
    other_problem.params = other->params();
    run_steps(other_problem, *other, 0, 3);
    const nn::StateDict foreign = other->state_dict();

    auto with_foreign = [&](const std::function<void(nn::StateDict&)>& edit) {
      nn::StateDict sd;
      for (const auto& [k, t] : foreign) sd.insert(k, t);
      edit(sd);
      return sd;
    };
    contains(load_message(with_foreign([&](nn::StateDict& sd) {
               sd.insert("state.2." + buffer, zeros({3, 3}, kFloat64));
             })),
             "'state.2." + buffer + "' has shape (3,3), parameter 2 has shape (4,2)");
    contains(load_message(edited([](nn::StateDict&) {}, true, "lr")), "missing key 'lr'");
    contains(load_message(with_foreign([](nn::StateDict& sd) {
               sd.insert("state.9.exp_avg", zeros({2}, kFloat64));
               sd.insert("momentum_buffer", zeros({2}, kFloat64));
             })),
             "unexpected keys: state.9.exp_avg, momentum_buffer");
    contains(load_message(with_foreign([](nn::StateDict& sd) {
               sd.insert("num_params", from_vector<std::int64_t>({4}, Shape{}));
             })),
             "the state holds 4 parameters, the optimizer 5");
    contains(load_message(with_foreign(
                 [](nn::StateDict& sd) { sd.insert("lr", scalar_tensor(-1.0, kFloat64)); })),
             "'lr' = -1");
    contains(load_message(
                 with_foreign([](nn::StateDict& sd) { sd.insert("lr", zeros({2}, kFloat64)); })),
             "expected a 0-d floating tensor");
    // Two problems at once: both are listed.
    const std::string both = load_message(with_foreign([&](nn::StateDict& sd) {
      sd.insert("state.0." + buffer, zeros({5}, kFloat64));
      sd.insert("bogus", zeros({1}, kFloat64));
    }));
    contains(both, "'state.0." + buffer + "' has shape (5)");
    contains(both, "unexpected keys: bogus");
    CHECK_THROWS_AS(opt->load_state_dict(nn::StateDict()), ValueError);
    CHECK(same_state(opt->state_dict(), good));  // every refused load left it untouched
  }
}

TEST_CASE("load_state_dict refuses another optimizer's state and inconsistent Adam state") {
  ToyProblem problem = ToyProblem::random(8);
  optim::SGD sgd(problem.params, optim::SGDOptions(0.1).with_momentum(0.9));
  optim::Adam adam(problem.params, optim::AdamOptions(0.01));
  run_steps(problem, sgd, 0, 2);
  run_steps(problem, adam, 0, 2);
  const nn::StateDict adam_state = adam.state_dict();

  std::string m = HG_ERROR_MESSAGE(adam.load_state_dict(sgd.state_dict()));
  CHECK(m.find("Adam.load_state_dict") != std::string::npos);
  CHECK(m.find("missing key 'beta1'") != std::string::npos);
  CHECK(m.find("state.0.momentum_buffer") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(sgd.load_state_dict(adam_state)).find("missing key 'momentum'") !=
        std::string::npos);

  auto edit = [&](const std::function<void(nn::StateDict&)>& f) {
    nn::StateDict sd;
    for (const auto& [k, t] : adam_state) sd.insert(k, t);
    f(sd);
    return HG_ERROR_MESSAGE(adam.load_state_dict(sd));
  };
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("amsgrad", from_vector<std::int64_t>({1}, Shape{}));
        }).find("missing key 'state.0.max_exp_avg_sq'") != std::string::npos);
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("state.1.step", scalar_tensor(2.0, kFloat64));
        }).find("'state.1.step' is") != std::string::npos);
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("state.1.step", from_vector<std::int64_t>({0}, Shape{}));
        }).find("must be >= 1") != std::string::npos);
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("state.3.exp_avg", zeros({2}, kFloat64));
        }).find("without 'state.3.step'") != std::string::npos);
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("beta1", scalar_tensor(1.5, kFloat64));
        }).find("'beta1' = 1.5") != std::string::npos);
  CHECK(edit([](nn::StateDict& sd) {
          sd.insert("amsgrad", from_vector<std::int64_t>({2}, Shape{}));
        }).find("must be 0 or 1") != std::string::npos);
  CHECK(same_state(adam.state_dict(), adam_state));
}

TEST_CASE("a parameter converted after its state was created is refused, not misread") {
  Generator gen(9);
  nn::Linear layer(3, 2, true, &gen);
  layer.to(kFloat64);
  optim::Adam opt(layer.parameters(), optim::AdamOptions(0.1));
  for (Tensor& p : layer.parameters()) p.set_grad(ones_like(p));
  opt.step();
  layer.to(kFloat32);  // swaps the parameters' storage and dtype in place
  for (Tensor& p : layer.parameters()) p.set_grad(ones_like(p));
  const std::vector<float> before = layer.weight.to_vector<float>();
  CHECK(HG_ERROR_MESSAGE(opt.step()).find("optimizer state is") != std::string::npos);
  CHECK_THROWS_AS(opt.step(), DTypeError);
  CHECK(layer.weight.to_vector<float>() == before);
}
