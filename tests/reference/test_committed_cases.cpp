// nn::MultiheadAttention against PyTorch 1.13: every committed case under
// tests/reference/cases (written by generate_cases.py --suite committed) is run through the
// parity library and each file of its expected/ directory (output (L,N,E) or like query,
// attn_weights (N,L,S') or (N,H,L,S'), every input and parameter gradient) is compared:
// max|a-b| <= tol * max(1, max|expected|) with tol 1e-10 for float64 and 1e-5 for float32.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "parity.hpp"

namespace fs = std::filesystem;
using namespace headgrad;

namespace {

const fs::path kCasesDir = HEADGRAD_REFERENCE_CASES_DIR;

std::vector<fs::path> committed_cases() {
  std::vector<fs::path> cases;
  if (fs::is_directory(kCasesDir))
    for (const auto& entry : fs::directory_iterator(kCasesDir))
      if (entry.is_directory() && fs::exists(entry.path() / "config.json"))
        cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// Empty when `actual` matches `expected`; otherwise what differs, in words.
std::string mismatch(const Tensor& actual, const Tensor& expected, double tolerance,
                     double* scaled_error) {
  if (actual.dtype() != expected.dtype())
    return "dtype " + to_string(actual.dtype()) + ", expected " + to_string(expected.dtype());
  if (actual.shape() != expected.shape())
    return "shape " + shape_str(actual.shape()) + ", expected " + shape_str(expected.shape());
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  double scale = 1.0, worst = 0.0;
  std::size_t worst_at = 0;
  for (double v : e) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - e[i]);
    if (!(d <= worst)) {  // also catches NaN
      worst = std::isnan(d) ? INFINITY : d;
      worst_at = i;
    }
  }
  *scaled_error = worst / scale;
  if (worst <= tolerance * scale) return {};
  std::ostringstream os;
  os << "max|a-b| = " << worst << " at flat index " << worst_at << " (got " << a[worst_at]
     << ", expected " << e[worst_at] << "), allowed " << tolerance * scale;
  return os.str();
}

// The problems of one case: missing or extra results, mismatching values.
std::vector<std::string> check_case(const fs::path& dir, double* worst_scaled, DType* dtype) {
  std::vector<std::string> problems;
  const parity::ParityCase pc = parity::load_case(dir);
  *dtype = pc.config.dtype;
  const double tolerance = pc.config.dtype == kFloat64 ? 1e-10 : 1e-5;
  std::map<std::string, Tensor> results;
  for (auto& [name, t] : parity::run_case(pc)) results[name] = t;

  std::set<std::string> expected_names;
  for (const auto& entry : fs::directory_iterator(dir / "expected")) {
    if (entry.path().extension() != ".npy") continue;
    const std::string name = entry.path().stem().string();
    expected_names.insert(name);
    const auto it = results.find(name);
    if (it == results.end()) {
      problems.push_back(name + ".npy: expected but not produced");
      continue;
    }
    double scaled = 0;
    const std::string what =
        mismatch(it->second, parity::read_npy(entry.path()), tolerance, &scaled);
    *worst_scaled = std::max(*worst_scaled, scaled);
    if (!what.empty()) problems.push_back(name + ".npy: " + what);
  }
  for (const auto& [name, t] : results)
    if (!expected_names.count(name)) problems.push_back(name + ".npy: produced but not expected");
  return problems;
}

}  // namespace

TEST_CASE("MultiheadAttention matches PyTorch 1.13 on every committed reference case") {
  const std::vector<fs::path> cases = committed_cases();
  INFO("cases directory: " << kCasesDir.string());
  REQUIRE(cases.size() >= 20);  // an empty or truncated directory must not pass
  double worst32 = 0, worst64 = 0;
  for (const fs::path& dir : cases) {
    CAPTURE(dir.filename().string());
    double worst = 0;
    DType dtype = kFloat32;
    std::vector<std::string> problems;
    try {
      problems = check_case(dir, &worst, &dtype);
    } catch (const std::exception& e) {
      problems.push_back(std::string("threw: ") + e.what());
    }
    for (const std::string& p : problems) FAIL_CHECK(p);
    double& slot = dtype == kFloat64 ? worst64 : worst32;
    slot = std::max(slot, worst);
  }
  MESSAGE("worst error / max(1, max|expected|): float32 " << worst32 << ", float64 " << worst64);
}

TEST_CASE("the committed reference cases cover every MultiheadAttention option") {
  std::multiset<std::string> seen;
  for (const fs::path& dir : committed_cases()) {
    const parity::ParityCase pc = parity::load_case(dir);
    const parity::CaseConfig& c = pc.config;
    seen.insert(c.dtype == kFloat64 ? "float64" : "float32");
    if (c.self_attention) seen.insert("self_attention");
    if (!c.self_attention && c.kdim == 0 && c.vdim == 0) seen.insert("cross_attention");
    if ((c.kdim != 0 && c.kdim != c.embed_dim) || (c.vdim != 0 && c.vdim != c.embed_dim))
      seen.insert("kdim_vdim");
    if (!c.bias) seen.insert("no_bias");
    if (c.add_bias_kv) seen.insert("add_bias_kv");
    if (c.add_zero_attn) seen.insert("add_zero_attn");
    if (c.add_bias_kv && c.add_zero_attn) seen.insert("both_appended");
    if (c.batch_first && pc.query.dim() == 3) seen.insert("batch_first");
    if (pc.query.dim() == 2) seen.insert("unbatched");
    if (c.is_causal) seen.insert("is_causal");
    seen.insert(!c.need_weights          ? "weights_off"
                : c.average_attn_weights ? "weights_averaged"
                                         : "weights_per_head");
    if (pc.attn_mask.defined())
      seen.insert(std::string("attn_mask_") + (pc.attn_mask.dtype() == kBool ? "bool" : "float") +
                  std::to_string(pc.attn_mask.dim()) + "d");
    if (pc.key_padding_mask.defined())
      seen.insert(std::string("key_padding_mask_") +
                  (pc.key_padding_mask.dtype() == kBool ? "bool" : "float"));
    if (pc.attn_mask.defined() && pc.key_padding_mask.defined()) seen.insert("both_masks");
  }
  for (const char* option : {"float32",
                             "float64",
                             "self_attention",
                             "cross_attention",
                             "kdim_vdim",
                             "no_bias",
                             "add_bias_kv",
                             "add_zero_attn",
                             "both_appended",
                             "batch_first",
                             "unbatched",
                             "is_causal",
                             "weights_off",
                             "weights_averaged",
                             "weights_per_head",
                             "attn_mask_bool2d",
                             "attn_mask_bool3d",
                             "attn_mask_float2d",
                             "attn_mask_float3d",
                             "key_padding_mask_bool",
                             "key_padding_mask_float",
                             "both_masks"}) {
    CAPTURE(option);
    CHECK(seen.count(option) > 0);
  }
}

TEST_CASE("the reference comparison rejects a result perturbed beyond the tolerance") {
  const std::vector<fs::path> cases = committed_cases();
  REQUIRE(!cases.empty());
  const parity::Results results = parity::run_case(parity::load_case(cases.front()));
  const Tensor& output = results.front().second;
  REQUIRE(results.front().first == "output");
  const double tolerance = output.dtype() == kFloat64 ? 1e-10 : 1e-5;
  double scaled = 0;
  CHECK(mismatch(output, output, tolerance, &scaled).empty());
  // Scale is max(1, max|output|): a change of 10x the tolerance at that scale must show.
  double scale = 1.0;
  for (double v : output.to_vector<double>()) scale = std::max(scale, std::abs(v));
  Tensor moved = output.clone().detach();
  moved.set_at(
      Shape(static_cast<std::size_t>(output.dim()), 0),
      output.at(Shape(static_cast<std::size_t>(output.dim()), 0)) + 10 * tolerance * scale);
  CHECK(!mismatch(moved, output, tolerance, &scaled).empty());
  Tensor nan = output.clone().detach();
  nan.set_at(Shape(static_cast<std::size_t>(output.dim()), 0), NAN);
  CHECK(!mismatch(nan, output, tolerance, &scaled).empty());
}
