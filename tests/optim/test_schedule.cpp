// optim::LRSchedule: constant, warm-up, linear decay and cosine values computed by hand,
// the shape of each curve, apply() on an optimizer, and argument checks.
#include <doctest/doctest.h>

#include <cmath>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/optim/sgd.hpp"
#include "helpers.hpp"

using namespace headgrad;
using optim::LRSchedule;

TEST_CASE("a constant schedule gives the base lr at every step") {
  const LRSchedule s = LRSchedule::constant(0.3);
  for (std::int64_t step : {0, 1, 7, 1000000}) CHECK(s.lr_at(step) == 0.3);
}

TEST_CASE("linear warm-up reaches the base lr at step warmup - 1 and then stays there") {
  const LRSchedule s = LRSchedule::constant(0.1, 4);
  CHECK(s.lr_at(0) == doctest::Approx(0.025).epsilon(1e-15));
  CHECK(s.lr_at(1) == doctest::Approx(0.05).epsilon(1e-15));
  CHECK(s.lr_at(2) == doctest::Approx(0.075).epsilon(1e-15));
  CHECK(s.lr_at(3) == 0.1);
  CHECK(s.lr_at(4) == 0.1);
  CHECK(s.lr_at(500) == 0.1);
}

TEST_CASE("linear decay goes from the base lr at the end of warm-up to the floor at total") {
  // lr 1, warm-up 2, total 10, floor 0.2: decay lr = 0.2 + 0.8 * (10 - step) / 8
  const LRSchedule s = LRSchedule::linear(1.0, 2, 10, 0.2);
  CHECK(s.lr_at(0) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(s.lr_at(1) == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(s.lr_at(2) == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(s.lr_at(6) == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(s.lr_at(9) == doctest::Approx(0.3).epsilon(1e-15));
  CHECK(s.lr_at(10) == 0.2);
  CHECK(s.lr_at(11) == 0.2);
  CHECK(LRSchedule::linear(2.0, 0, 4).lr_at(1) == doctest::Approx(1.5).epsilon(1e-15));
}

TEST_CASE("cosine decay follows half a cosine from the base lr to the floor") {
  const LRSchedule s = LRSchedule::cosine(1.0, 0, 4);
  CHECK(s.lr_at(0) == 1.0);
  CHECK(s.lr_at(1) == doctest::Approx(0.5 + std::sqrt(2.0) / 4).epsilon(1e-15));
  CHECK(s.lr_at(2) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(s.lr_at(3) == doctest::Approx(0.5 - std::sqrt(2.0) / 4).epsilon(1e-14));
  CHECK(s.lr_at(4) == 0.0);
  // lr 0.5, warm-up 2, total 6, floor 0.1: step 4 is halfway, 0.1 + 0.4 / 2
  const LRSchedule w = LRSchedule::cosine(0.5, 2, 6, 0.1);
  CHECK(w.lr_at(0) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(w.lr_at(1) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(w.lr_at(2) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(w.lr_at(4) == doctest::Approx(0.3).epsilon(1e-15));
  CHECK(w.lr_at(6) == 0.1);
}

TEST_CASE("decaying schedules rise during warm-up and never rise afterwards") {
  for (const LRSchedule& s :
       {LRSchedule::linear(0.01, 10, 100, 1e-4), LRSchedule::cosine(0.01, 10, 100, 1e-4),
        LRSchedule::cosine(0.01, 0, 1)}) {
    CAPTURE(s.to_string());
    for (std::int64_t step = 1; step < 120; ++step) {
      if (step < s.options().warmup_steps)
        CHECK(s.lr_at(step) > s.lr_at(step - 1));
      else
        CHECK(s.lr_at(step) <= s.lr_at(step - 1));
      CHECK(s.lr_at(step) >= s.options().min_lr);
      CHECK(s.lr_at(step) <= s.options().lr);
    }
  }
}

TEST_CASE("a schedule whose warm-up fills every step jumps to the floor at total") {
  const LRSchedule s = LRSchedule::linear(1.0, 4, 4, 0.1);
  CHECK(s.lr_at(3) == 1.0);
  CHECK(s.lr_at(4) == 0.1);
}

TEST_CASE("apply sets the optimizer's learning rate from the step") {
  Tensor p = tensor({1.0}, kFloat64).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  const LRSchedule s = LRSchedule::linear(0.4, 0, 4);
  CHECK(s.apply(opt, 1) == doctest::Approx(0.3).epsilon(1e-15));
  CHECK(opt.lr() == doctest::Approx(0.3).epsilon(1e-15));
  s.apply(opt, 9);
  CHECK(opt.lr() == 0.0);
}

TEST_CASE("schedule kinds have names, and bad schedules are rejected") {
  CHECK(optim::schedule_kind_from_string("cosine") == optim::ScheduleKind::cosine);
  CHECK(optim::to_string(optim::ScheduleKind::linear) == "linear");
  CHECK(
      HG_ERROR_MESSAGE(optim::schedule_kind_from_string("step")).find("constant, linear, cosine") !=
      std::string::npos);
  CHECK(LRSchedule::cosine(0.001, 10, 100, 0).to_string() ==
        "cosine(lr=0.001, warmup=10, total=100, min_lr=0)");
  CHECK(HG_ERROR_MESSAGE(LRSchedule::constant(0.1).lr_at(-1)).find("step") != std::string::npos);
  CHECK_THROWS_AS(LRSchedule::constant(-0.1), ValueError);
  CHECK_THROWS_AS(LRSchedule::constant(0.1, -1), ValueError);
  CHECK(HG_ERROR_MESSAGE(LRSchedule::linear(0.1, 10, 5)).find("total_steps") != std::string::npos);
  CHECK_THROWS_AS(LRSchedule::cosine(0.1, 0, 0), ValueError);
  CHECK(HG_ERROR_MESSAGE(LRSchedule::cosine(0.1, 0, 10, 0.2)).find("min_lr") != std::string::npos);
  CHECK_THROWS_AS(LRSchedule::linear(0.1, 0, 10, -0.01), ValueError);
}
