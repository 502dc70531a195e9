// Tensor::index, Tensor::index_put_ and index_put against PyTorch 1.13: the cases in
// tests/reference/indexing_cases/cases.json (generate_indexing_cases.py: random index lists
// mixing integers, slices, None, Ellipsis, int64 tensors of any shape with negative
// entries, and boolean masks), replayed value by value with their gradients. Inputs,
// weights and values are multiples of 1/16, so every result is exact: compared to 1e-12.
// HEADGRAD_INDEXING_CASES names another case file (the live oracle's fresh cases).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

namespace fs = std::filesystem;
using namespace headgrad;
using namespace headgrad::indexing;
using nlohmann::json;

namespace {

fs::path cases_file() {
  if (const char* path = std::getenv("HEADGRAD_INDEXING_CASES")) return path;
  return fs::path(__FILE__).parent_path().parent_path() / "reference" / "indexing_cases" /
         "cases.json";
}

Shape shape_of(const json& j) { return j.get<Shape>(); }

Tensor doubles(const json& data, const Shape& shape) {
  return from_vector<double>(data.get<std::vector<double>>(), shape);
}

std::vector<TensorIndex> index_of(const json& entries) {
  std::vector<TensorIndex> index;
  for (const json& e : entries) {
    if (e.contains("int")) {
      index.emplace_back(e["int"].get<std::int64_t>());
    } else if (e.contains("slice")) {
      const json& s = e["slice"];
      auto bound = [](const json& b) {
        return b.is_null() ? std::nullopt : std::optional<std::int64_t>(b.get<std::int64_t>());
      };
      index.emplace_back(Slice(bound(s[0]), bound(s[1]), s[2].get<std::int64_t>()));
    } else if (e.contains("none")) {
      index.emplace_back(None);
    } else if (e.contains("ellipsis")) {
      index.emplace_back(Ellipsis);
    } else if (e.contains("ids")) {
      index.emplace_back(from_vector<std::int64_t>(
          e["ids"]["data"].get<std::vector<std::int64_t>>(), shape_of(e["ids"]["shape"])));
    } else {
      const Tensor m = from_vector<std::int64_t>(e["mask"]["data"].get<std::vector<std::int64_t>>(),
                                                 shape_of(e["mask"]["shape"]));
      index.emplace_back(m.to(kBool));
    }
  }
  return index;
}

// x = arange(n) / 8 - 1 in the case's shape, as the generator made it.
Tensor input_of(const json& c, bool requires_grad) {
  const Shape shape = shape_of(c["shape"]);
  Tensor x = sub(div(arange(static_cast<double>(numel_of(shape)), kFloat64), 8.0), 1.0);
  x = x.reshape(shape).detach();
  if (requires_grad) x.requires_grad_(true);
  return x;
}

void check_equal(const Tensor& actual, const json& expected, const std::string& what) {
  INFO(what);
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.get<std::vector<double>>();
  REQUIRE(a.size() == e.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - e[i]) <= 1e-12) continue;
    FAIL_CHECK("flat index " << i << ": headgrad " << a[i] << ", PyTorch " << e[i]);
  }
}

void check_get(const json& c) {
  Tensor x = input_of(c, true);
  const Tensor out = x.index(index_of(c["index"]));
  CHECK(out.shape() == shape_of(c["out_shape"]));
  check_equal(out, c["out"], "x[index]");
  sum(mul(out, doubles(c["weights"], out.shape()))).backward();
  check_equal(x.grad(), c["grad_x"], "gradient of x");
}

void check_put(const json& c) {
  const bool accumulate = c["accumulate"].get<bool>();
  const Shape value_shape = shape_of(c["value_shape"]);
  // In place, out of the graph.
  Tensor y = input_of(c, false);
  y.index_put_(index_of(c["index"]), doubles(c["value"], value_shape), accumulate);
  check_equal(y, c["out"], "index_put_");
  // The differentiable form.
  Tensor x = input_of(c, true);
  Tensor value = doubles(c["value"], value_shape).requires_grad_(true);
  const Tensor out = index_put(x, index_of(c["index"]), value, accumulate);
  check_equal(out, c["out"], "index_put");
  sum(mul(out, doubles(c["weights"], x.shape()))).backward();
  check_equal(x.grad(), c["grad_x"], "gradient of x");
  check_equal(value.grad(), c["grad_value"], "gradient of value");
}

}  // namespace

TEST_CASE("index and index_put_ and index_put agree with PyTorch on random advanced indexing") {
  std::ifstream in(cases_file());
  REQUIRE_MESSAGE(in.good(), "cannot read " << cases_file());
  const json file = json::parse(in);
  const json& cases = file["cases"];
  REQUIRE(cases.size() >= 100);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const json& c = cases[k];
    // One string: doctest's INFO keeps references to its operands.
    const std::string label = "case " + std::to_string(k) + ": " + c["op"].get<std::string>() +
                              " x " + c["shape"].dump() + " index " + c["index"].dump();
    INFO(label);
    if (c["op"] == "get")
      check_get(c);
    else
      check_put(c);
  }
}
