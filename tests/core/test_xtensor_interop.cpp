#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "headgrad/core/xtensor_interop.hpp"
#include "helpers.hpp"

using namespace headgrad;

TEST_CASE("from_xtensor evaluates an expression into a tensor of its value type") {
  xt::xarray<double> a = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  Tensor t = from_xtensor(a * 2.0 + 1.0);
  CHECK(t.dtype() == kFloat64);
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.at({0, 0}) == 3.0);
  CHECK(t.at({1, 2}) == 13.0);
  Tensor f = from_xtensor(xt::arange<float>(5.0f));
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
  Tensor g = from_xtensor(a, kFloat32);
  CHECK(g.dtype() == kFloat32);
}

TEST_CASE("as_xtensor views a tensor's storage without copying") {
  Tensor t = zeros({2, 3}, kFloat64);
  auto view = as_xtensor<double>(t);
  CHECK(view.shape()[0] == 2);
  CHECK(view.shape()[1] == 3);
  view(1, 2) = 7.5;
  CHECK(t.at({1, 2}) == 7.5);
  const Tensor& ct = t;
  auto cview = as_xtensor<double>(ct);
  CHECK(xt::sum(cview)() == 7.5);
  CHECK_THROWS_AS(as_xtensor<float>(t), DTypeError);
}
