// An xtensor array into a tensor and a tensor's storage back as an xtensor view, with the
// installed headgrad's xtensor component.
#include <headgrad/core/xtensor_interop.hpp>
#include <headgrad/headgrad.hpp>

#include <iostream>
#include <xtensor/xarray.hpp>

int main() {
  using namespace headgrad;
  const xt::xarray<float> a = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  Tensor t = from_xtensor(a);
  Tensor doubled = t * 2.0;
  auto view = as_xtensor<float>(doubled);
  view(1, 2) = 0.0f;  // writes through to the tensor
  const bool ok =
      t.shape() == Shape{2, 3} && doubled.at({0, 1}) == 4.0 && doubled.at({1, 2}) == 0.0;
  std::cout << "consumer_xtensor: " << (ok ? "ok" : "wrong values") << "\n";
  return ok ? 0 : 1;
}
