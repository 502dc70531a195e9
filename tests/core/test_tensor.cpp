// Tensor core: default dtype, deterministic factories (zeros/ones/full/arange/from_vector/
// tensor), dtype conversion (values and gradients), clone/detach storage semantics,
// element access and its errors, printing, names in error messages, devices, and the
// rules for in-place writes on tensors that require grad.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Device;
using hg::Shape;
using hg::Tensor;
using hg::TensorOptions;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A float64 leaf [values] that requires grad.
Tensor leaf64(std::initializer_list<double> values) {
  return hg::tensor(values, hg::kFloat64).requires_grad_(true);
}

}  // namespace

TEST_CASE("factories default to float32 on the cpu and honour an explicit dtype") {
  CHECK(hg::zeros({2, 3}).dtype() == hg::kFloat32);
  CHECK(hg::ones({2}).dtype() == hg::kFloat32);
  CHECK(hg::full({1}, 2.0).dtype() == hg::kFloat32);
  CHECK(hg::empty({4}).dtype() == hg::kFloat32);
  CHECK(hg::arange(3).dtype() == hg::kFloat32);
  CHECK(hg::tensor({1, 2}).dtype() == hg::kFloat32);
  CHECK(hg::rand({2}).dtype() == hg::kFloat32);
  CHECK(hg::zeros({2}).device() == Device::cpu());
  CHECK(hg::zeros({2}, hg::kFloat64).dtype() == hg::kFloat64);
  CHECK(hg::tensor({1, 2}, hg::kFloat64).dtype() == hg::kFloat64);
  CHECK(hg::randint(0, 3, {2}).dtype() == hg::kInt64);
  CHECK_FALSE(hg::zeros({2}).requires_grad());
  CHECK(hg::zeros({2}, TensorOptions().requires_grad()).requires_grad());
}

TEST_CASE("zeros, ones and full fill every element with the value, for every dtype") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64, hg::kInt64}) {
    CAPTURE(hg::to_string(dtype));
    Tensor z = hg::zeros({2, 3}, dtype);
    Tensor o = hg::ones({2, 3}, dtype);
    Tensor f = hg::full({3, 1, 2}, 7.0, dtype);
    CHECK(z.shape() == Shape{2, 3});
    CHECK(f.shape() == Shape{3, 1, 2});
    CHECK(f.numel() == 6);
    for (double v : z.to_vector<double>()) CHECK(v == 0.0);
    for (double v : o.to_vector<double>()) CHECK(v == 1.0);
    for (double v : f.to_vector<double>()) CHECK(v == 7.0);
  }
  Tensor b = hg::full({3}, 1.0, hg::kBool);
  for (bool v : b.to_vector<bool>()) CHECK(v);
  Tensor s = hg::scalar_tensor(2.5, hg::kFloat64);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item() == 2.5);
  Tensor like = hg::full_like(hg::zeros({4, 2}, hg::kFloat64), -1.5);
  CHECK(like.dtype() == hg::kFloat64);
  CHECK(like.shape() == Shape{4, 2});
  for (double v : like.to_vector<double>()) CHECK(v == -1.5);
  CHECK(hg::zeros({0, 3}).numel() == 0);
}

TEST_CASE("full and fill_ refuse an int64 fill value outside int64's range") {
  // static_cast<int64_t>(2^63) is undefined (it gave -2^63 here); torch refuses the value.
  const double two_63 = 9223372036854775808.0;
  CHECK_THROWS_WITH_AS(hg::full({2}, two_63, hg::kInt64),
                       doctest::Contains("full: the fill value 9.2233720368547758e+18"),
                       hg::ValueError);
  CHECK_THROWS_AS(hg::full({2}, -two_63 * 2, hg::kInt64), hg::ValueError);
  CHECK_THROWS_AS(hg::full({2}, std::nan(""), hg::kInt64), hg::ValueError);
  CHECK(hg::full({1}, -two_63, hg::kInt64).item<std::int64_t>() ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(hg::full({1}, two_63, hg::kFloat32).item() == two_63);  // a float holds it
  Tensor t = hg::zeros({2}, hg::kInt64);
  CHECK_THROWS_WITH_AS(t.fill_(two_63), doctest::Contains("fill_: the fill value"), hg::ValueError);
}

TEST_CASE("arange follows torch.arange for integer, fractional and negative steps") {
  SUBCASE("end only") {
    Tensor a = hg::arange(5, hg::kInt64);
    CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  }
  SUBCASE("fractional step: [0, 1) by 0.1 has 10 elements i*0.1") {
    Tensor a = hg::arange(0.0, 1.0, 0.1, hg::kFloat64);
    REQUIRE(a.shape() == Shape{10});
    auto v = a.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(0.1 * i));
  }
  SUBCASE("fractional step whose quotient is inexact: [0, 0.3) by 0.1 has 3 elements") {
    CHECK(hg::arange(0.0, 0.3, 0.1).numel() == 3);
    Tensor a = hg::arange(1.0, 2.5, 0.5);
    CHECK(a.to_vector<float>() == std::vector<float>{1.0f, 1.5f, 2.0f});
  }
  SUBCASE("negative step counts down and excludes end") {
    Tensor a = hg::arange(5.0, 0.0, -1.5, hg::kFloat64);
    CHECK(a.to_vector<double>() == std::vector<double>{5.0, 3.5, 2.0, 0.5});
  }
  SUBCASE("a step pointing away from end gives an empty tensor") {
    Tensor a = hg::arange(0.0, 5.0, -1.0);
    CHECK(a.shape() == Shape{0});
  }
  SUBCASE("step zero is a ValueError naming arange") {
    CHECK_THROWS_AS(hg::arange(0.0, 1.0, 0.0), hg::ValueError);
    CHECK(contains(HG_ERROR_MESSAGE(hg::arange(0.0, 1.0, 0.0)), "arange"));
  }
}

TEST_CASE("from_vector builds float, double, int64 and bool tensors with the matching dtype") {
  Tensor f = hg::from_vector(std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f}, {2, 2});
  CHECK(f.dtype() == hg::kFloat32);
  CHECK(f.at({1, 0}) == 3.25);
  Tensor d = hg::from_vector(std::vector<double>{0.1, 0.2, 0.3}, {3});
  CHECK(d.dtype() == hg::kFloat64);
  CHECK(d.to_vector<double>() == std::vector<double>{0.1, 0.2, 0.3});
  Tensor i = hg::from_vector(std::vector<std::int64_t>{7, -8, 9, 10, 11, 12}, {3, 2});
  CHECK(i.dtype() == hg::kInt64);
  CHECK(i.at({2, 1}) == 12);
  CHECK(i.at({0, 1}) == -8);
  Tensor b = hg::from_vector(std::vector<bool>{true, false, true}, {3});
  CHECK(b.dtype() == hg::kBool);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, true});
  // An explicit dtype converts.
  Tensor converted = hg::from_vector(std::vector<std::int64_t>{1, 2}, {2}, hg::kFloat64);
  CHECK(converted.dtype() == hg::kFloat64);
  CHECK(converted.to_vector<double>() == std::vector<double>{1.0, 2.0});
  // 0-d from a single value.
  CHECK(hg::from_vector(std::vector<double>{4.0}, {}).item() == 4.0);
}

TEST_CASE("from_vector with the wrong number of values is a ShapeError naming the shape") {
  auto make = [] { return hg::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {2, 3}); };
  CHECK_THROWS_AS(make(), hg::ShapeError);
  const std::string msg = HG_ERROR_MESSAGE(make());
  CHECK(contains(msg, "from_vector"));
  CHECK(contains(msg, "(2,3)"));
  CHECK(contains(msg, "5"));
}

TEST_CASE("tensor({...}) is a 1-d float32 tensor of the listed values") {
  Tensor t = hg::tensor({1, 2.5, -3});
  CHECK(t.shape() == Shape{3});
  CHECK(t.to_vector<float>() == std::vector<float>{1.0f, 2.5f, -3.0f});
  Tensor i = hg::tensor({4, 5}, hg::kInt64);
  CHECK(i.dtype() == hg::kInt64);
  CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("to(dtype) converts values, round trips exactly and returns self for the same dtype") {
  Tensor f = hg::tensor({1.5, -2.25, 3.0});
  Tensor back = f.to(hg::kFloat64).to(hg::kFloat32);
  CHECK(back.dtype() == hg::kFloat32);
  CHECK(back.to_vector<float>() == f.to_vector<float>());
  // float -> int64 truncates toward zero, like a C++ cast.
  Tensor trunc = hg::tensor({2.7, -2.7, 0.4}, hg::kFloat64).to(hg::kInt64);
  CHECK(trunc.to_vector<std::int64_t>() == std::vector<std::int64_t>{2, -2, 0});
  // int64 -> float -> int64 and bool -> float.
  Tensor ints = hg::from_vector(std::vector<std::int64_t>{-3, 0, 1 << 20}, {3});
  CHECK(ints.to(hg::kFloat32).to(hg::kInt64).to_vector<std::int64_t>() ==
        ints.to_vector<std::int64_t>());
  Tensor bools = hg::from_vector(std::vector<bool>{true, false}, {2}).to(hg::kFloat64);
  CHECK(bools.to_vector<double>() == std::vector<double>{1.0, 0.0});
  // Same dtype: the same tensor (shared storage).
  CHECK(f.to(hg::kFloat32).impl() == f.impl());
}

TEST_CASE(
    "to(dtype) between float types is differentiable and returns the gradient in the source "
    "dtype") {
  Tensor x = hg::tensor({1.0, -2.0, 0.5}).requires_grad_(true);  // float32 leaf
  Tensor y = x.to(hg::kFloat64);
  CHECK(y.requires_grad());
  REQUIRE(y.grad_fn() != nullptr);
  hg::mul(y, y).sum().backward();  // d/dx sum(x^2) = 2x
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == hg::kFloat32);
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2.0f, -4.0f, 1.0f});
  // Conversion to a non-floating dtype leaves the graph.
  Tensor i = x.to(hg::kInt64);
  CHECK_FALSE(i.requires_grad());
  CHECK(i.grad_fn() == nullptr);
}

TEST_CASE("clone copies the storage and is differentiable") {
  Tensor x = leaf64({1.0, 2.0, 3.0});
  Tensor c = x.clone();
  CHECK(c.impl()->storage != x.impl()->storage);
  CHECK(c.raw_data() != x.raw_data());
  CHECK(c.to_vector<double>() == x.to_vector<double>());
  CHECK(c.grad_fn() != nullptr);
  hg::mul(c, hg::tensor({4.0, 5.0, 6.0}, hg::kFloat64)).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4.0, 5.0, 6.0});
  // Writing into a detached clone does not touch the original.
  Tensor plain = hg::tensor({1.0, 2.0}, hg::kFloat64);
  Tensor copy = plain.clone();
  copy.set_at({0}, 100.0);
  CHECK(plain.at({0}) == 1.0);
}

TEST_CASE("detach shares storage with the original but has no graph") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor y = hg::mul(x, 3.0);
  Tensor d = y.detach();
  CHECK(d.grad_fn() == nullptr);
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.impl()->storage == y.impl()->storage);
  d.set_at({1}, -7.0);
  CHECK(y.at({1}) == -7.0);  // same memory
}

TEST_CASE("metadata: size with negative dims, numel, and set_grad checking the shape") {
  Tensor t = hg::zeros({2, 3, 4}, hg::kFloat64);
  CHECK(t.dim() == 3);
  CHECK(t.size(-1) == 4);
  CHECK(t.size(0) == 2);
  CHECK(t.numel() == 24);
  CHECK_THROWS_AS(t.size(3), hg::IndexError);
  CHECK_THROWS_AS(t.set_grad(hg::zeros({2, 3}, hg::kFloat64)), hg::ShapeError);
  CHECK_THROWS_AS(t.set_grad(hg::zeros({2, 3, 4})), hg::ShapeError);  // float32
  t.set_grad(hg::ones({2, 3, 4}, hg::kFloat64));
  CHECK(t.grad().sum().item() == 24.0);
  CHECK_FALSE(Tensor().defined());
  CHECK_THROWS_AS(Tensor().shape(), hg::Error);
}

TEST_CASE("item on a tensor with more than one element is a ShapeError naming the shape") {
  Tensor t = hg::zeros({2, 3});
  CHECK_THROWS_AS(t.item(), hg::ShapeError);
  const std::string msg = HG_ERROR_MESSAGE(t.item());
  CHECK(contains(msg, "item"));
  CHECK(contains(msg, "(2,3)"));
  CHECK(hg::full({1, 1}, 3.0).item() == 3.0);
  CHECK(hg::full({1}, 3.0, hg::kInt64).item<std::int64_t>() == 3);
}

TEST_CASE("at and set_at accept negative indices and reject out of range ones") {
  Tensor t = hg::arange(0.0, 6.0, 1.0, hg::kFloat64).reshape({2, 3});
  CHECK(t.at({0, 0}) == 0.0);
  CHECK(t.at({1, 2}) == 5.0);
  CHECK(t.at({-1, -1}) == 5.0);
  CHECK(t.at({-2, 1}) == 1.0);
  t.set_at({-1, 0}, 42.0);
  CHECK(t.at({1, 0}) == 42.0);
  CHECK_THROWS_AS(t.at({2, 0}), hg::IndexError);
  CHECK_THROWS_AS(t.at({0, -4}), hg::IndexError);
  CHECK_THROWS_AS(t.set_at({0, 3}, 1.0), hg::IndexError);
  CHECK_THROWS_AS(t.at({0}), hg::IndexError);  // wrong rank
  const std::string msg = HG_ERROR_MESSAGE(t.at({0, 3}));
  CHECK(contains(msg, "at"));
  CHECK(contains(msg, "out of range"));
  CHECK(contains(msg, "3"));
}

TEST_CASE("data<T> with a T that does not match the dtype is a DTypeError") {
  Tensor f = hg::zeros({2});
  CHECK(f.data<float>() != nullptr);
  CHECK_THROWS_AS(f.data<double>(), hg::DTypeError);
  CHECK_THROWS_AS(hg::zeros({2}, hg::kInt64).data<float>(), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(f.data<std::int64_t>());
  CHECK(contains(msg, "float32"));
  CHECK(contains(msg, "int64"));
}

TEST_CASE("printing shows the values, the dtype when not float32, and the autograd state") {
  const std::string plain = hg::to_string(hg::tensor({1.5, -2.0}));
  CHECK(contains(plain, "1.5000"));
  CHECK(contains(plain, "-2.0000"));
  CHECK_FALSE(contains(plain, "dtype"));
  CHECK_FALSE(contains(plain, "requires_grad"));

  const std::string f64 = hg::to_string(hg::tensor({0.25}, hg::kFloat64));
  CHECK(contains(f64, "0.2500"));
  CHECK(contains(f64, "dtype=float64"));

  const std::string ints = hg::to_string(hg::from_vector(std::vector<std::int64_t>{3, 4}, {2}));
  CHECK(contains(ints, "3"));
  CHECK(contains(ints, "dtype=int64"));

  const Tensor flags = hg::tensor({1.0, -1.0}).gt(0.0);
  CHECK(contains(hg::to_string(flags), "[True, False]"));  // PyTorch's spelling

  Tensor x = hg::tensor({1.0}).requires_grad_(true);
  CHECK(contains(hg::to_string(x), "requires_grad=True"));
  Tensor y = hg::mul(x, x);
  REQUIRE(y.grad_fn() != nullptr);
  const std::string with_fn = hg::to_string(y);
  CHECK(contains(with_fn, "grad_fn="));
  CHECK(contains(with_fn, y.grad_fn()->name()));

  const std::string matrix = hg::to_string(hg::ones({2, 2}));
  CHECK(contains(matrix, "[["));
  Tensor named = hg::zeros({1});
  named.set_name("bias");
  CHECK(contains(hg::to_string(named), "bias"));
  CHECK(hg::to_string(Tensor()) == "tensor(undefined)");
}

TEST_CASE("a tensor's name appears in the error messages it causes") {
  Tensor queries = hg::zeros({2, 3});
  queries.set_name("queries");
  CHECK(queries.name() == "queries");
  CHECK(contains(queries.describe(), "queries"));
  CHECK(contains(queries.describe(), "(2,3)"));
  SUBCASE("shape mismatch in add") {
    Tensor other = hg::zeros({4});
    CHECK_THROWS_AS(hg::add(queries, other), hg::ShapeError);
    const std::string msg = HG_ERROR_MESSAGE(hg::add(queries, other));
    CHECK(contains(msg, "add"));
    CHECK(contains(msg, "(2,3)"));
    CHECK(contains(msg, "(4)"));
    CHECK(contains(msg, "queries"));
  }
  SUBCASE("dtype mismatch in add") {
    Tensor other = hg::zeros({2, 3}, hg::kFloat64);
    CHECK_THROWS_AS(hg::add(queries, other), hg::DTypeError);
    CHECK(contains(HG_ERROR_MESSAGE(hg::add(queries, other)), "queries"));
  }
  SUBCASE("item on a named tensor") { CHECK(contains(HG_ERROR_MESSAGE(queries.item()), "(2,3)")); }
}

TEST_CASE("devices print as cpu and cuda:N, and moving to cuda is a DeviceError without a GPU") {
  CHECK(Device::cpu().str() == "cpu");
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK(Device::cuda().str() == "cuda:0");
  CHECK(Device::cuda(1) != Device::cuda(0));
  Tensor t = hg::ones({2});
  CHECK(t.to(Device::cpu()).impl() == t.impl());
  if (hg::cuda_is_available()) return;  // tests/cuda covers a machine with a GPU
  CHECK_THROWS_AS(t.to(Device::cuda()), hg::DeviceError);
  CHECK(contains(HG_ERROR_MESSAGE(t.to(Device::cuda())), "cuda:0"));
  CHECK_THROWS_AS(hg::zeros({2}, TensorOptions().device(Device::cuda())), hg::DeviceError);
}

TEST_CASE("only floating tensors can require grad") {
  Tensor i = hg::zeros({2}, hg::kInt64);
  CHECK_THROWS_AS(i.requires_grad_(), hg::DTypeError);
  CHECK(contains(HG_ERROR_MESSAGE(i.requires_grad_()), "int64"));
  CHECK_THROWS_AS(hg::zeros({2}, hg::kBool).requires_grad_(), hg::DTypeError);
  CHECK_THROWS_AS(hg::zeros({2}, TensorOptions(hg::kInt64).requires_grad()), hg::DTypeError);
  CHECK_FALSE(i.requires_grad());
  // Turning it off on a non-leaf is refused; on a leaf it works.
  Tensor x = hg::ones({2}).requires_grad_(true);
  CHECK_THROWS_AS(hg::mul(x, 2.0).requires_grad_(false), hg::AutogradError);
  x.requires_grad_(false);
  CHECK_FALSE(x.requires_grad());
}

TEST_CASE(
    "in-place writes to a leaf that requires grad throw in grad mode and work under NoGradGuard") {
  Tensor w = hg::tensor({1.0, 2.0}, hg::kFloat64).requires_grad_(true);
  Tensor delta = hg::tensor({10.0, 20.0}, hg::kFloat64);
  CHECK_THROWS_AS(w.fill_(0.0), hg::AutogradError);
  CHECK_THROWS_AS(w.zero_(), hg::AutogradError);
  CHECK_THROWS_AS(w.add_(delta), hg::AutogradError);
  CHECK_THROWS_AS(w.mul_(2.0), hg::AutogradError);
  CHECK_THROWS_AS(w.copy_(delta), hg::AutogradError);
  CHECK(contains(HG_ERROR_MESSAGE(w.mul_(2.0)), "mul_"));
  CHECK(w.to_vector<double>() == std::vector<double>{1.0, 2.0});  // nothing was written

  // A non-leaf that requires grad is protected too.
  Tensor y = hg::mul(w, 1.0);
  CHECK_THROWS_AS(y.mul_(2.0), hg::AutogradError);

  {
    hg::NoGradGuard no_grad;
    w.mul_(2.0);
    CHECK(w.to_vector<double>() == std::vector<double>{2.0, 4.0});
    w.add_(delta, 0.5);
    CHECK(w.to_vector<double>() == std::vector<double>{7.0, 14.0});
    w.add_(hg::full({1}, 1.0, hg::kFloat64));  // broadcasts
    CHECK(w.to_vector<double>() == std::vector<double>{8.0, 15.0});
    w.copy_(hg::tensor({-1.0, -2.0}));  // converts float32 -> float64
    CHECK(w.to_vector<double>() == std::vector<double>{-1.0, -2.0});
    w.fill_(3.0);
    CHECK(w.to_vector<double>() == std::vector<double>{3.0, 3.0});
    w.zero_();
    CHECK(w.to_vector<double>() == std::vector<double>{0.0, 0.0});
  }
  CHECK(w.requires_grad());
  CHECK(w.is_leaf());
}

TEST_CASE("in-place writes check their operands") {
  hg::NoGradGuard no_grad;
  Tensor t = hg::zeros({2, 3});
  CHECK_THROWS_AS(t.copy_(hg::zeros({3, 2})), hg::ShapeError);
  CHECK_THROWS_AS(t.add_(hg::zeros({4})), hg::ShapeError);
  CHECK_THROWS_AS(t.add_(hg::zeros({4, 2, 3})), hg::ShapeError);  // would grow t
  CHECK(contains(HG_ERROR_MESSAGE(t.copy_(hg::zeros({3, 2}))), "(3,2)"));
}

TEST_CASE("size of a 0-d tensor is an IndexError, not an out-of-bounds read") {
  Tensor s = hg::scalar_tensor(1.0);
  CHECK_THROWS_AS(s.size(0), hg::IndexError);
  CHECK_THROWS_AS(s.size(-1), hg::IndexError);
  CHECK(hg::zeros({2, 5}).size(-1) == 5);
}

TEST_CASE("arange rejects non-finite bounds and randint handles ranges wider than int64") {
  CHECK_THROWS_AS(hg::arange(0.0, INFINITY), hg::ValueError);
  CHECK_THROWS_AS(hg::arange(NAN), hg::ValueError);
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min() / 2 - 10;
  const std::int64_t hi = std::numeric_limits<std::int64_t>::max() / 2 + 10;
  hg::Generator gen(5);
  for (std::int64_t v : hg::randint(lo, hi, {1000}, {}, &gen).to_vector<std::int64_t>()) {
    CHECK(v >= lo);
    CHECK(v < hi);
  }
}

TEST_CASE("from_blob shares memory it does not own and releases it with the last tensor") {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    hg::Tensor t = hg::from_blob(buffer.data(), {2, 3}, hg::kFloat32, [&released] { ++released; });
    CHECK(t.at({1, 2}) == 6.0);
    t.set_at({0, 0}, 10.0);
    CHECK(buffer[0] == 10.0f);
    buffer[5] = -1.0f;
    CHECK(t.at({1, 2}) == -1.0);
    hg::Tensor row = t.select(0, 1) * 2.0;  // an op reads the borrowed memory
    CHECK(row.to_vector<float>() == std::vector<float>{8, 10, -2});
    hg::Tensor view = t.reshape({6});  // a view keeps the storage (and the owner) alive
    t = hg::Tensor();
    CHECK(released == 0);
    CHECK(view.at({5}) == -1.0);
  }
  CHECK(released == 1);
  CHECK_THROWS_AS(hg::from_blob(nullptr, {2}, hg::kFloat32, [] {}), hg::ValueError);
  CHECK_THROWS_AS(hg::from_blob(buffer.data(), {-1}, hg::kFloat32, [] {}), hg::ShapeError);
}
