// Shared helpers of the GPU parity suite (tests/cuda, the headgrad_cuda_tests binary).
//
// Every parity case runs one computation twice: on the CPU, the reference, and on the GPU,
// the device under test, from the same inputs (float64 tensors drawn on the CPU from a
// seeded Generator, converted to the dtype under test, then copied over). It compares the
// outputs and, for the backward, the gradient of every input that requires grad under the
// scalar loss sum_k sum(out_k * w_k), with fixed random weights w_k.
//
// Tolerances are relative with a floor: |gpu - cpu| <= rtol * max(|cpu|, floor), so values
// of order one are compared absolutely and large ones relatively. NaN must appear exactly
// where the CPU has NaN and infinities must match; rtol 0 means equal values.
//
// Self-check without a GPU: HEADGRAD_CUDA_TESTS_ON_CPU=1 makes the "GPU" the CPU, so the
// suite's own logic (shapes, arguments, the harness) can be run on any machine; the cases
// in the test suite "gpu_only" (which test the device itself) are then left out by main.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/cuda.hpp"
#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

namespace headgrad::cuda_testing {

// --- the device under test ---------------------------------------------------------------

inline bool cpu_self_check() {
  static const bool on = [] {
    const char* v = std::getenv("HEADGRAD_CUDA_TESTS_ON_CPU");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

// cuda:0, or the CPU in the self-check mode.
inline Device gpu() { return cpu_self_check() ? Device::cpu() : Device::cuda(0); }

// A detached copy of `t` on `device` that never shares storage with `t` (so CPU and GPU
// leaves stay distinct even in the self-check mode), requiring grad when asked.
inline Tensor copy_to(const Tensor& t, Device device, bool requires_grad = false) {
  Tensor c = device == t.device() ? t.detach().clone() : t.detach().to(device);
  if (requires_grad) c.requires_grad_(true);
  return c;
}
inline Tensor to_gpu(const Tensor& t) { return copy_to(t, gpu()); }
inline Tensor to_cpu(const Tensor& t) { return t.detach().to(Device::cpu()); }

// --- random inputs, drawn on the CPU -----------------------------------------------------

// Standard normal float64 entries times `scale`.
inline Tensor random(const Shape& shape, std::uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return mul(randn(shape, kFloat64, &gen), scale);
}
// Uniform float64 entries in [low, high) (positive inputs for log, sqrt, pow, div).
inline Tensor random_uniform(const Shape& shape, std::uint64_t seed, double low = 0.5,
                             double high = 1.5) {
  Generator gen(seed);
  return uniform(shape, low, high, kFloat64, &gen);
}
// Small integers in [-k, k] as float64: many exact ties and exact zeros.
inline Tensor random_integers(const Shape& shape, std::uint64_t seed, std::int64_t k = 2) {
  Generator gen(seed);
  return randint(-k, k + 1, shape, kInt64, &gen).to(kFloat64);
}
// int64 entries uniform in [low, high).
inline Tensor random_indices(const Shape& shape, std::int64_t low, std::int64_t high,
                             std::uint64_t seed) {
  Generator gen(seed);
  return randint(low, high, shape, kInt64, &gen);
}
// A bool mask of `shape`, true with probability `p`.
inline Tensor random_mask(const Shape& shape, double p, std::uint64_t seed) {
  Generator gen(seed);
  return lt(rand(shape, kFloat64, &gen), scalar_tensor(p, kFloat64));
}
// Elementwise a || b of bool masks, broadcasting.
inline Tensor mask_or(const Tensor& a, const Tensor& b) {
  return gt(add(a.to(kFloat64), b.to(kFloat64)), scalar_tensor(0.0, kFloat64));
}
// int64 `values` with `replacement` where the bool `mask` (same shape) is true.
inline Tensor replace_where(const Tensor& values, const Tensor& mask, std::int64_t replacement) {
  std::vector<std::int64_t> v = values.to_vector<std::int64_t>();
  const std::vector<bool> m = mask.to_vector<bool>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (m[i]) v[i] = replacement;
  return from_vector<std::int64_t>(v, values.shape());
}
// `t` as requires-grad leaf (the harness copies inputs; this marks which get gradients).
inline Tensor grad_input(Tensor t) { return t.detach().requires_grad_(true); }

// --- tolerances --------------------------------------------------------------------------

struct Tol {
  double rtol = 0.0;   // |gpu - cpu| <= rtol * max(|cpu|, floor); 0: equal values
  double floor = 1.0;  // values below it are compared absolutely, at rtol * floor
};
// A floor of kNormwise stands for the largest finite |cpu| of the tensor: every element
// is compared at rtol times the tensor's scale (for matrix products, whose entries all
// carry rounding errors of the size of the largest one).
inline constexpr double kNormwise = -1.0;

// Per-dtype tolerances of one comparison. The defaults: float64 to 1e-12 (a GPU computes
// the same formulas, in another summation order and with fused multiply-adds, so only the
// last few bits may differ); float32 to 1e-5 (about 100 ulp, for short sums and
// transcendental functions whose CUDA implementations differ from glibc's by an ulp or
// two).
struct Tols {
  double f64 = 1e-12;
  double f32 = 1e-5;
  double floor = 1.0;
  Tol for_dtype(DType dtype) const { return {dtype == kFloat64 ? f64 : f32, floor}; }
  static Tols exact() { return {0.0, 0.0, 1.0}; }
};

// --- comparisons ------------------------------------------------------------------------

// CHECKs that `actual` (from the GPU) equals `expected` (from the CPU) in shape, dtype and,
// element by element, within `tol` (see the top of this file). Reports the worst element.
inline void check_close(const Tensor& actual, const Tensor& expected, Tol tol,
                        const std::string& what) {
  INFO(what);
  REQUIRE(actual.defined() == expected.defined());
  if (!actual.defined()) return;
  REQUIRE(actual.shape() == expected.shape());
  REQUIRE(actual.dtype() == expected.dtype());
  const std::vector<double> a = to_cpu(actual).to_vector<double>();
  const std::vector<double> e = to_cpu(expected).to_vector<double>();
  REQUIRE(a.size() == e.size());
  std::int64_t pattern_mismatches = 0, first_pattern_mismatch = -1;
  std::int64_t worst = -1;
  double worst_ratio = 0.0;  // |a - e| / (rtol * max(|e|, floor)); must stay <= 1
  if (tol.floor == kNormwise) {
    tol.floor = 0.0;
    for (double v : e)
      if (std::isfinite(v)) tol.floor = std::max(tol.floor, std::abs(v));
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool special =
        std::isnan(e[i]) || std::isinf(e[i]) || std::isnan(a[i]) || std::isinf(a[i]);
    if (special) {
      const bool same = (std::isnan(e[i]) && std::isnan(a[i])) || a[i] == e[i];
      if (!same) {
        if (pattern_mismatches++ == 0) first_pattern_mismatch = static_cast<std::int64_t>(i);
      }
      continue;
    }
    const double diff = std::abs(a[i] - e[i]);
    if (diff == 0.0) continue;
    const double allowed = tol.rtol * std::max(std::abs(e[i]), tol.floor);
    const double ratio = allowed > 0 ? diff / allowed : INFINITY;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = static_cast<std::int64_t>(i);
  }
  if (pattern_mismatches > 0) {
    const auto i = static_cast<std::size_t>(first_pattern_mismatch);
    INFO(pattern_mismatches << " element(s) differ in NaN/inf, first at flat index " << i
                            << ": gpu " << a[i] << ", cpu " << e[i]);
    CHECK(pattern_mismatches == 0);
  }
  if (worst >= 0) {
    const auto i = static_cast<std::size_t>(worst);
    std::ostringstream msg;
    msg.precision(17);
    msg << "worst element at flat index " << i << " of " << a.size() << ": gpu " << a[i] << ", cpu "
        << e[i] << ", |diff| " << std::abs(a[i] - e[i]) << " = " << worst_ratio
        << " x the tolerance (rtol " << tol.rtol << ", floor " << tol.floor << ")";
    INFO(msg.str());
    CHECK(worst_ratio <= 1.0);
  }
}

// True when the two tensors have the same shape, dtype and bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = to_cpu(a), cb = to_cpu(b);
  const std::size_t n = static_cast<std::size_t>(ca.numel()) * element_size(ca.dtype());
  return n == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), n) == 0;
}

// --- the parity harness ------------------------------------------------------------------

using ParityFn = std::function<Tensor(const std::vector<Tensor>&)>;
using MultiParityFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct ParityOptions {
  Tols forward;                                   // outputs
  Tols backward;                                  // input gradients
  std::vector<DType> dtypes{kFloat64, kFloat32};  // the dtypes to run
  std::uint64_t weight_seed = 4242;               // the loss weights w_k

  ParityOptions& with_forward(Tols t) {
    forward = t;
    return *this;
  }
  ParityOptions& with_backward(Tols t) {
    backward = t;
    return *this;
  }
  ParityOptions& with_dtypes(std::vector<DType> d) {
    dtypes = std::move(d);
    return *this;
  }
};

// Runs `fn` on the CPU and on the GPU for each dtype of `options` and compares outputs and
// gradients. `inputs` are CPU tensors: floating ones (float64) are converted to the dtype
// under test, others (int64 indices, bool masks) are copied as they are; those that
// require grad get gradients, which must come out on the GPU, defined exactly where the
// CPU's are.
inline void check_parity_multi(const std::string& what, const MultiParityFn& fn,
                               const std::vector<Tensor>& inputs,
                               const ParityOptions& options = {}) {
  for (DType dtype : options.dtypes) {
    INFO(what << " [" << to_string(dtype) << "]");
    std::vector<Tensor> cpu_in, gpu_in;
    for (const Tensor& t : inputs) {
      const Tensor base = is_floating(t.dtype()) ? t.detach().to(dtype) : t.detach();
      cpu_in.push_back(copy_to(base, Device::cpu(), t.requires_grad()));
      gpu_in.push_back(copy_to(base, gpu(), t.requires_grad()));
      REQUIRE(gpu_in.back().device() == gpu());
    }
    const std::vector<Tensor> cpu_out = fn(cpu_in);
    const std::vector<Tensor> gpu_out = fn(gpu_in);
    REQUIRE(cpu_out.size() == gpu_out.size());
    Tensor cpu_loss, gpu_loss;
    for (std::size_t k = 0; k < cpu_out.size(); ++k) {
      CAPTURE(k);
      CHECK(gpu_out[k].device() == gpu());
      check_close(gpu_out[k], cpu_out[k], options.forward.for_dtype(dtype),
                  "output " + std::to_string(k));
      if (!cpu_out[k].requires_grad()) continue;
      REQUIRE(gpu_out[k].requires_grad());
      Generator gen(options.weight_seed + k);
      const Tensor w = randn(cpu_out[k].shape(), TensorOptions(dtype), &gen);
      Tensor c = sum(mul(cpu_out[k], w)), g = sum(mul(gpu_out[k], to_gpu(w)));
      cpu_loss = cpu_loss.defined() ? add(cpu_loss, c) : c;
      gpu_loss = gpu_loss.defined() ? add(gpu_loss, g) : g;
    }
    if (!cpu_loss.defined()) continue;
    cpu_loss.backward();
    gpu_loss.backward();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      CAPTURE(i);
      const Tensor cg = cpu_in[i].grad(), gg = gpu_in[i].grad();
      REQUIRE(cg.defined() == gg.defined());
      if (!cg.defined()) continue;
      CHECK(gg.device() == gpu());
      check_close(gg, cg, options.backward.for_dtype(dtype),
                  "gradient of input " + std::to_string(i));
    }
  }
}

inline void check_parity(const std::string& what, const ParityFn& fn,
                         const std::vector<Tensor>& inputs, const ParityOptions& options = {}) {
  check_parity_multi(
      what, [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }, inputs,
      options);
}

// Options with the same tolerances forward and backward.
inline ParityOptions tolerances(double f64, double f32, double floor = 1.0) {
  return ParityOptions().with_forward({f64, f32, floor}).with_backward({f64, f32, floor});
}
// Outputs equal to the CPU's (ops that only move elements); gradients too when `backward`.
inline ParityOptions exact(bool backward = true) {
  ParityOptions o;
  o.forward = Tols::exact();
  if (backward) o.backward = Tols::exact();
  return o;
}

// --- modules ----------------------------------------------------------------------------

// Two identical modules' parameters, pairwise by name: values, or gradients when `grads`.
// A floor of kNormwise is the module's scale here: the largest finite |cpu| over all its
// parameters (or gradients), not each tensor's own. A gradient that is zero in exact
// arithmetic is rounding noise on both sides, of the size of the terms it sums: the key
// projection's bias, whose term q . b_k is the same for every key of a query row, so the
// softmax cancels it (torch's gradient for it is noise of 1e-7 in float32 too).
inline void check_module_parity(const nn::Module& on_gpu, const nn::Module& on_cpu, Tol tol,
                                bool grads, const std::string& what) {
  const auto g = on_gpu.named_parameters(), c = on_cpu.named_parameters();
  REQUIRE(g.size() == c.size());
  if (tol.floor == kNormwise) {
    tol.floor = 0.0;
    for (const auto& [name, p] : c) {
      const Tensor t = grads ? p.grad() : p;
      if (!t.defined()) continue;
      for (double v : to_cpu(t).to_vector<double>())
        if (std::isfinite(v)) tol.floor = std::max(tol.floor, std::abs(v));
    }
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    REQUIRE(g[i].first == c[i].first);
    CHECK(g[i].second.device() == gpu());
    const Tensor a = grads ? g[i].second.grad() : g[i].second;
    const Tensor b = grads ? c[i].second.grad() : c[i].second;
    if (grads) CHECK((!a.defined() || a.device() == gpu()));
    check_close(a, b, tol, what + (grads ? ": gradient of " : ": ") + g[i].first);
  }
}

// Sets TF32 for float32 GPU matmuls while alive, then restores the previous setting.
class AllowTf32Guard {
 public:
  explicit AllowTf32Guard(bool allow) : saved_(cuda_allow_tf32()) { set_cuda_allow_tf32(allow); }
  ~AllowTf32Guard() { set_cuda_allow_tf32(saved_); }
  AllowTf32Guard(const AllowTf32Guard&) = delete;
  AllowTf32Guard& operator=(const AllowTf32Guard&) = delete;

 private:
  bool saved_;
};

}  // namespace headgrad::cuda_testing
