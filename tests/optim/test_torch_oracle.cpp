// SGD, Adam and AdamW (with clip_grad_norm_ and LR schedules inside the loop) against
// torch.optim from PyTorch 1.13: every case under tests/reference/optim_cases (written by
// tests/reference/generate_optim_cases.py) is replayed step by step, and the parameters
// after each of its 20 steps are compared with PyTorch's:
//   max|a - b| <= tol * max(1, max|expected|) per parameter and step,
// tol 1e-10 for float64 and 1e-5 for float32. Two replays per case:
//   - applied gradients: each step applies PyTorch's recorded gradients, so only the
//     optimizer (and clipping, schedule) arithmetic is compared;
//   - closed loop (float64): headgrad computes loss and gradients itself at its own
//     parameters (tests/optim/toy_problem.hpp); losses and gradients are compared too.
// Set HEADGRAD_OPTIM_ORACLE_REPORT=1 to print each case's largest deviation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xnpy.hpp>

#include "headgrad/core/xtensor_interop.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/optim/sgd.hpp"
#include "optim/toy_problem.hpp"

namespace fs = std::filesystem;
using namespace headgrad;
using json = nlohmann::json;

namespace {

const fs::path kCasesDir =
    fs::path(__FILE__).parent_path().parent_path() / "reference" / "optim_cases";

std::vector<fs::path> oracle_cases() {
  std::vector<fs::path> cases;
  if (fs::is_directory(kCasesDir))
    for (const auto& entry : fs::directory_iterator(kCasesDir))
      if (entry.is_directory() && fs::exists(entry.path() / "config.json"))
        cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// A .npy file as a tensor of the file's dtype (float32, float64 or int64).
Tensor load(const fs::path& file, DType dtype) {
  REQUIRE_MESSAGE(fs::exists(file), file.string());
  if (dtype == kFloat32) return from_xtensor(xt::load_npy<float>(file.string()));
  if (dtype == kInt64) return from_xtensor(xt::load_npy<std::int64_t>(file.string()));
  return from_xtensor(xt::load_npy<double>(file.string()));
}

// max|actual - expected| / max(1, max|expected|); infinity for NaN or a shape mismatch.
double scaled_error(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) return INFINITY;
  const auto a = actual.to_vector<double>();
  const auto e = expected.to_vector<double>();
  double scale = 1.0, worst = 0.0;
  for (double v : e) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - e[i]);
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return worst / scale;
}

struct Case {
  std::string name;
  fs::path dir;
  json config;
  DType dtype;
  std::int64_t steps;
  std::vector<std::string> names;
  Tensor x, y, t, has_grad, loss, lr, total_norm;
  std::vector<Tensor> init, expected, grads;  // per parameter; expected/grads (steps, ...)

  explicit Case(const fs::path& d) : name(d.filename().string()), dir(d) {
    std::ifstream in(d / "config.json");
    config = json::parse(in);
    dtype = config.at("dtype") == "float32" ? kFloat32 : kFloat64;
    steps = config.at("steps");
    names = config.at("param_names").get<std::vector<std::string>>();
    x = load(d / "x.npy", dtype);
    y = load(d / "y.npy", dtype);
    t = load(d / "t.npy", dtype);
    for (const auto& n : names) {
      init.push_back(load(d / ("init_" + n + ".npy"), dtype));
      expected.push_back(load(d / "expected" / (n + ".npy"), dtype));
      grads.push_back(load(d / "expected" / ("grad_" + n + ".npy"), dtype));
    }
    has_grad = load(d / "expected" / "has_grad.npy", kInt64);
    loss = load(d / "expected" / "loss.npy", kFloat64);
    lr = load(d / "expected" / "lr.npy", kFloat64);
    if (!config.at("clip").is_null())
      total_norm = load(d / "expected" / "total_norm.npy", kFloat64);
  }

  double tolerance() const { return dtype == kFloat64 ? 1e-10 : 1e-5; }

  testing::ToyProblem problem() const {
    testing::ToyProblem p;
    p.x = x;
    p.y = y;
    p.t = t;
    for (const Tensor& v : init) p.params.push_back(v.clone().detach().requires_grad_(true));
    return p;
  }

  std::unique_ptr<optim::Optimizer> optimizer(const std::vector<Tensor>& params) const {
    const json& o = config.at("options");
    const std::string kind = config.at("optimizer");
    if (kind == "sgd") {
      optim::SGDOptions s(o.at("lr").get<double>());
      s.momentum = o.value("momentum", 0.0);
      s.dampening = o.value("dampening", 0.0);
      s.weight_decay = o.value("weight_decay", 0.0);
      s.nesterov = o.value("nesterov", false);
      return std::make_unique<optim::SGD>(params, s);
    }
    auto fill = [&](auto options) {
      options.lr = o.at("lr");
      if (o.contains("betas")) options.betas = {o.at("betas")[0], o.at("betas")[1]};
      options.eps = o.value("eps", options.eps);
      options.weight_decay = o.value("weight_decay", options.weight_decay);  // keeps AdamW's 0.01
      options.amsgrad = o.value("amsgrad", false);
      return options;
    };
    if (kind == "adam") return std::make_unique<optim::Adam>(params, fill(optim::AdamOptions()));
    REQUIRE(kind == "adamw");
    return std::make_unique<optim::AdamW>(params, fill(optim::AdamWOptions()));
  }

  std::optional<optim::LRSchedule> schedule() const {
    const json& s = config.at("schedule");
    if (s.is_null()) return std::nullopt;
    return optim::LRSchedule(
        optim::LRScheduleOptions(optim::schedule_kind_from_string(s.at("kind")), s.at("lr"))
            .with_warmup_steps(s.at("warmup_steps"))
            .with_total_steps(s.at("total_steps"))
            .with_min_lr(s.at("min_lr")));
  }

  // Clipping (when the case clips) and the schedule's lr (when it has one) for step k,
  // checked against PyTorch's total norm and lr.
  void before_step(optim::Optimizer& opt, const std::vector<Tensor>& params, std::int64_t k,
                   const std::optional<optim::LRSchedule>& sched) const {
    const json& c = config.at("clip");
    if (!c.is_null()) {
      const double norm_type =
          c.at("norm_type").is_string() ? INFINITY : c.at("norm_type").get<double>();
      const double total = optim::clip_grad_norm_(params, c.at("max_norm"), norm_type);
      const double want = total_norm.at({k});
      CHECK_MESSAGE(std::abs(total - want) <= tolerance() * std::max(1.0, want),
                    "total norm " << total << ", PyTorch " << want << " at step " << k);
    }
    if (sched) sched->apply(opt, k);
    CHECK(opt.lr() == doctest::Approx(lr.at({k})).epsilon(1e-15));
  }

  // The largest scaled error of the parameters after step k.
  double compare_params(const std::vector<Tensor>& params, std::int64_t k) const {
    double worst = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double e = scaled_error(params[i], select(expected[i], 0, k));
      CHECK_MESSAGE(e <= tolerance(),
                    name << ": parameter " << names[i] << " after step " << k << " off by " << e);
      worst = std::max(worst, e);
    }
    return worst;
  }
};

void report(const std::string& what, const std::string& name, double worst) {
  if (std::getenv("HEADGRAD_OPTIM_ORACLE_REPORT"))
    std::cout << what << " " << name << ": max scaled deviation from PyTorch " << worst << "\n";
}

}  // namespace

TEST_CASE("the committed optimizer cases are all there") {
  const auto cases = oracle_cases();
  CHECK(cases.size() >= 16);
  std::vector<std::string> kinds;
  for (const auto& d : cases) kinds.push_back(Case(d).config.at("optimizer"));
  for (const char* k : {"sgd", "adam", "adamw"})
    CHECK(std::count(kinds.begin(), kinds.end(), k) >= 3);
}

TEST_CASE("optimizers applying PyTorch's gradients follow torch.optim's trajectory") {
  for (const auto& dir : oracle_cases()) {
    const Case c(dir);
    CAPTURE(c.name);
    std::vector<Tensor> params = c.problem().params;
    auto opt = c.optimizer(params);
    const auto sched = c.schedule();
    double worst = 0.0;
    for (std::int64_t k = 0; k < c.steps; ++k) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (c.has_grad.at({k, static_cast<std::int64_t>(i)}) != 0)
          params[i].set_grad(select(c.grads[i], 0, k));
        else
          params[i].zero_grad();
      }
      c.before_step(*opt, params, k, sched);
      opt->step();
      worst = std::max(worst, c.compare_params(params, k));
    }
    report("applied gradients", c.name, worst);
  }
}

TEST_CASE("optimizers computing their own gradients follow torch.optim's trajectory") {
  for (const auto& dir : oracle_cases()) {
    const Case c(dir);
    if (c.dtype != kFloat64) continue;
    CAPTURE(c.name);
    testing::ToyProblem problem = c.problem();
    std::vector<Tensor>& params = problem.params;
    auto opt = c.optimizer(params);
    const auto sched = c.schedule();
    double worst = 0.0;
    for (std::int64_t k = 0; k < c.steps; ++k) {
      opt->zero_grad();
      Tensor loss = problem.loss(k);
      loss.backward();
      CHECK(loss.item() == doctest::Approx(c.loss.at({k})).epsilon(1e-10));
      for (std::size_t i = 0; i < params.size(); ++i) {
        const bool torch_has = c.has_grad.at({k, static_cast<std::int64_t>(i)}) != 0;
        REQUIRE(params[i].grad().defined() == torch_has);
        if (torch_has) CHECK(scaled_error(params[i].grad(), select(c.grads[i], 0, k)) <= 1e-10);
      }
      c.before_step(*opt, params, k, sched);
      opt->step();
      worst = std::max(worst, c.compare_params(params, k));
    }
    report("closed loop", c.name, worst);
  }
}
