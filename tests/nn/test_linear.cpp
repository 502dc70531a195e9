// nn::Linear: PyTorch's names, shapes and init bound, and the forward against matmul.
#include <doctest/doctest.h>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

using namespace headgrad;

TEST_CASE("Linear holds weight (out, in) and bias (out) initialized within 1/sqrt(in)") {
  manual_seed(4);
  nn::Linear fc(400, 30);
  CHECK(fc.weight.shape() == Shape{30, 400});
  CHECK(fc.bias.shape() == Shape{30});
  const double bound = 1.0 / 20.0;
  double wmax = 0, bmax = 0;
  for (double x : fc.weight.to_vector<double>()) wmax = std::max(wmax, std::abs(x));
  for (double x : fc.bias.to_vector<double>()) bmax = std::max(bmax, std::abs(x));
  CHECK(wmax <= bound);
  CHECK(wmax > 0.99 * bound);
  CHECK(bmax <= bound);
  CHECK(fc.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(nn::Linear(3, 2, false).state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK_THROWS_AS(nn::Linear(0, 2), ValueError);
}

TEST_CASE("Linear computes x W^T + b over any leading dims") {
  nn::Linear fc(3, 2);
  fc.to(kFloat64);
  Tensor x = testing::param({4, 5, 3}, 1);
  Tensor expected = matmul(x, transpose(fc.weight, 0, 1)) + fc.bias;
  CHECK(testing::max_abs_diff(fc(x), expected) < 1e-14);
  testing::check_gradcheck([&](const std::vector<Tensor>& in) { return fc(in[0]).sum(); },
                           {x, fc.weight, fc.bias});
}
