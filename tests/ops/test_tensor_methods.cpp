// The member forms of the ops (x.abs(), x.max(1), x > 0.5, ...): each equals its free
// function, and the comparison operators follow PyTorch's elementwise semantics.
#include <doctest/doctest.h>

#include <sstream>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

using namespace headgrad;
using testing::check_values;
using testing::max_abs_diff;

TEST_CASE("member forms of the ops equal their free functions") {
  Generator gen(3);
  const Tensor x = randn({3, 4}, kFloat64, &gen);
  const Tensor y = randn({3, 4}, kFloat64, &gen);
  CHECK(max_abs_diff(x.abs(), abs(x)) == 0);
  CHECK(max_abs_diff(x.neg(), neg(x)) == 0);
  CHECK(max_abs_diff(x.relu(), relu(x)) == 0);
  CHECK(max_abs_diff(x.gelu(), gelu(x)) == 0);
  CHECK(max_abs_diff(x.tanh(), tanh(x)) == 0);
  CHECK(max_abs_diff(x.sigmoid(), sigmoid(x)) == 0);
  CHECK(max_abs_diff(x.abs().sqrt(), sqrt(abs(x))) == 0);
  CHECK(max_abs_diff(x.abs().rsqrt(), rsqrt(abs(x))) == 0);
  CHECK(max_abs_diff(x.clamp(-0.5, 0.5), clamp(x, -0.5, 0.5)) == 0);
  CHECK(max_abs_diff(x.add(y, 2.0), add(x, y, 2.0)) == 0);
  CHECK(max_abs_diff(x.sub(y), sub(x, y)) == 0);
  CHECK(max_abs_diff(x.mul(y), mul(x, y)) == 0);
  CHECK(max_abs_diff(x.div(y), div(x, y)) == 0);
  CHECK(max_abs_diff(x.log_softmax(1), log_softmax(x, 1)) == 0);
  CHECK(max_abs_diff(x.var({1}, true), var(x, {1}, true)) == 0);
  CHECK(max_abs_diff(x.var(), var(x)) == 0);
  CHECK(max_abs_diff(x.max(), max(x)) == 0);
  CHECK(max_abs_diff(x.amax({0}), amax(x, {0})) == 0);
  CHECK(max_abs_diff(x.argmax(1), argmax(x, 1)) == 0);
  auto [values, indices] = x.max(1);
  const MaxResult free = max(x, 1);
  CHECK(max_abs_diff(values, free.values) == 0);
  CHECK(max_abs_diff(indices, free.indices) == 0);
  CHECK(max_abs_diff(x.select(1, 2), select(x, 1, 2)) == 0);
  CHECK(max_abs_diff(x.slice(1, 1, 4, 2), slice(x, 1, 1, 4, 2)) == 0);
  const Tensor ids = from_vector<std::int64_t>({2, 0}, {2});
  CHECK(max_abs_diff(x.index_select(0, ids), index_select(x, 0, ids)) == 0);
  CHECK(x.split(1, 0).size() == 3);
  CHECK(x.chunk(2, 1).size() == 2);
  CHECK(x.contiguous().impl() == x.impl());
}

TEST_CASE("comparison operators compare elementwise with tensors and numbers") {
  const Tensor x = from_vector<double>({-1, 0, 2}, {3});
  const Tensor y = from_vector<double>({0, 0, 1}, {3});
  check_values((x > y).to(kFloat64), {3}, {0, 0, 1}, 0);
  check_values((x >= y).to(kFloat64), {3}, {0, 1, 1}, 0);
  check_values((x == y).to(kFloat64), {3}, {0, 1, 0}, 0);
  check_values((x != y).to(kFloat64), {3}, {1, 0, 1}, 0);
  check_values((x < 0.5).to(kFloat64), {3}, {1, 1, 0}, 0);
  check_values((x <= 0.0).to(kFloat64), {3}, {1, 1, 0}, 0);
  CHECK((x > 0.0).dtype() == kBool);
  // An integer tensor is compared with the number as it is, not truncated to an integer.
  const Tensor ints = from_vector<std::int64_t>({0, 1, 2}, {3});
  check_values((ints > 0.5).to(kFloat64), {3}, {0, 1, 1}, 0);
  check_values(x.gt(0.0).logical_not().to(kFloat64), {3}, {1, 1, 0}, 0);
}

TEST_CASE("shapes, dtypes and devices print as PyTorch users read them") {
  std::ostringstream os;
  os << Shape{2, 3} << " " << Shape{3} << " " << Shape{} << " " << kFloat32 << " " << kInt64 << " "
     << Device::cpu() << " " << Device::cuda(1);
  CHECK(os.str() == "(2, 3) (3,) () float32 int64 cpu cuda:1");
  std::ostringstream shape_of;
  shape_of << zeros({4, 5}).shape();
  CHECK(shape_of.str() == "(4, 5)");
}

TEST_CASE("StateDict takes brace-initialisation and maps, keeping the given order") {
  const Tensor w = ones({2}), b = zeros({1});
  StateDict d{{"w", w}, {"b", b}, {"w", b}};  // a repeated name keeps the last value
  CHECK(d.keys() == std::vector<std::string>{"w", "b"});
  CHECK(d.at("w").impl() == b.impl());
  const std::map<std::string, Tensor> m{{"z", w}, {"a", b}};
  const StateDict from_map(m);
  CHECK(from_map.keys() == std::vector<std::string>{"a", "z"});
}
