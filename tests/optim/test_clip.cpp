// optim::clip_grad_norm_ and grad_norm: totals computed by hand for the 2-norm, 1-norm,
// 3-norm and max norm; clipping only above max_norm; parameters without gradients;
// non-finite gradients; argument checks.
#include <doctest/doctest.h>

#include <cmath>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/clip.hpp"
#include "helpers.hpp"

using namespace headgrad;
using headgrad::testing::check_values;

namespace {

// Three parameters: gradients [3, -4] and [[12]]; the third has none.
std::vector<Tensor> params_with_grads(DType dtype = kFloat64) {
  Tensor a = zeros({2}, dtype).requires_grad_(true);
  Tensor b = zeros({1, 1}, dtype).requires_grad_(true);
  Tensor c = zeros({3}, dtype).requires_grad_(true);
  a.set_grad(tensor({3.0, -4.0}, dtype));
  b.set_grad(tensor({12.0}, dtype).reshape({1, 1}));
  return {a, b, c};
}

}  // namespace

TEST_CASE("clip_grad_norm_ scales every gradient by max_norm / (total + 1e-6) above max_norm") {
  auto params = params_with_grads();
  const double total = optim::clip_grad_norm_(params, 6.5);
  CHECK(total == doctest::Approx(13.0).epsilon(1e-15));  // sqrt(9 + 16 + 144)
  const double scale = 6.5 / (13.0 + 1e-6);
  check_values(params[0].grad(), {2}, {3.0 * scale, -4.0 * scale}, 1e-15);
  check_values(params[1].grad(), {1, 1}, {12.0 * scale}, 1e-15);
  CHECK_FALSE(params[2].grad().defined());
  CHECK(optim::grad_norm(params) == doctest::Approx(6.5).epsilon(1e-6));
}

TEST_CASE("clip_grad_norm_ leaves gradients bitwise unchanged at or below max_norm") {
  auto params = params_with_grads();
  CHECK(optim::clip_grad_norm_(params, 20.0) == doctest::Approx(13.0).epsilon(1e-15));
  check_values(params[0].grad(), {2}, {3.0, -4.0}, 0);
  check_values(params[1].grad(), {1, 1}, {12.0}, 0);
  // max_norm equal to the norm: the scale 13 / (13 + 1e-6) is below 1, so torch clips.
  optim::clip_grad_norm_(params, 13.0);
  CHECK(params[1].grad().item() == doctest::Approx(12.0 * 13.0 / (13.0 + 1e-6)).epsilon(1e-15));
}

TEST_CASE("clip_grad_norm_ supports the max norm, the 1-norm and other p-norms") {
  {
    auto params = params_with_grads();
    CHECK(optim::clip_grad_norm_(params, 1.0, INFINITY) == 12.0);  // max |g|
    check_values(params[0].grad(), {2}, {3.0 / (12.0 + 1e-6), -4.0 / (12.0 + 1e-6)}, 1e-15);
  }
  {
    auto params = params_with_grads();
    CHECK(optim::clip_grad_norm_(params, 100.0, 1.0) == doctest::Approx(19.0).epsilon(1e-15));
  }
  {
    auto params = params_with_grads();
    const double want = std::cbrt(27.0 + 64.0 + 1728.0);
    CHECK(optim::grad_norm(params, 3.0) == doctest::Approx(want).epsilon(1e-14));
    CHECK(optim::clip_grad_norm_(params, 1.0, 3.0) == doctest::Approx(want).epsilon(1e-14));
    CHECK(optim::grad_norm(params, 3.0) == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("clip_grad_norm_ works on float32 gradients") {
  auto params = params_with_grads(kFloat32);
  CHECK(optim::clip_grad_norm_(params, 1.3) == doctest::Approx(13.0).epsilon(1e-7));
  CHECK(params[0].grad().dtype() == kFloat32);
  check_values(params[0].grad(), {2}, {0.3, -0.4}, 1e-6);
}

TEST_CASE("clip_grad_norm_ over parameters without gradients returns 0 and changes nothing") {
  Tensor a = zeros({2}, kFloat64).requires_grad_(true);
  CHECK(optim::clip_grad_norm_({a}, 1.0) == 0.0);
  CHECK(optim::clip_grad_norm_({}, 1.0) == 0.0);
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("clip_grad_norm_ with a non-finite gradient propagates it, or throws when asked") {
  auto params = params_with_grads();
  params[0].grad().set_at({0}, NAN);
  CHECK(
      HG_ERROR_MESSAGE(optim::clip_grad_norm_(params, 1.0, 2.0, true)).find("cannot be clipped") !=
      std::string::npos);
  CHECK_THROWS_AS(optim::clip_grad_norm_(params, 1.0, 2.0, true), ValueError);
  CHECK(params[1].grad().item() == 12.0);  // untouched by the refused call
  CHECK(std::isnan(optim::clip_grad_norm_(params, 1.0)));
  CHECK(std::isnan(params[1].grad().item()));  // as PyTorch: scaled by NaN

  auto inf_params = params_with_grads();
  inf_params[0].grad().set_at({1}, INFINITY);
  CHECK(std::isinf(optim::clip_grad_norm_(inf_params, 1.0, INFINITY)));
  CHECK(inf_params[1].grad().item() == 0.0);  // scale 1 / inf = 0
}

TEST_CASE("clip_grad_norm_ rejects a non-positive norm_type and a negative max_norm") {
  auto params = params_with_grads();
  CHECK(HG_ERROR_MESSAGE(optim::clip_grad_norm_(params, 1.0, 0.0)).find("norm_type") !=
        std::string::npos);
  CHECK_THROWS_AS(optim::clip_grad_norm_(params, 1.0, -2.0), ValueError);
  CHECK_THROWS_AS(optim::clip_grad_norm_(params, 1.0, NAN), ValueError);
  CHECK(HG_ERROR_MESSAGE(optim::clip_grad_norm_(params, -1.0)).find("max_norm") !=
        std::string::npos);
  CHECK_THROWS_AS(optim::grad_norm(params, 0.0), ValueError);
  check_values(params[0].grad(), {2}, {3.0, -4.0}, 0);
}
