// inspect::head_grad_cosines and inspect::compare_grad_slices (src/inspect/
// head_gradients.cpp) against cosines computed here from the parameters' own gradients
// (in_proj_weight and out_proj.weight, sliced by hand), and a case the derivation in
// docs/research/heads.md predicts exactly: with W_q = W_k = 0 every head attends uniformly,
// so one head and two heads from the same weights get the same W_v and W_o gradients.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;
using hg::Tensor;

namespace {

constexpr std::int64_t kWidth = 8;

std::shared_ptr<nn::GPT> gpt(const train::Task& task, std::int64_t heads) {
  hg::Generator gen(11);
  auto model = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task.vocab_size(),
                                                        .max_len = task.max_len(),
                                                        .d_model = kWidth,
                                                        .nhead = heads,
                                                        .num_layers = 2,
                                                        .dim_feedforward = 16},
                                         &gen);
  model->to(hg::kFloat64);
  return model;
}

void backward(nn::GPT& model, const train::Task& task) {
  model.zero_grad();
  const train::Batch b = task.batch(train::Split::train, 0, 6);
  train::task_loss(model.forward(b.tokens, b.key_padding_mask), b, task.kind()).backward();
}

// A parameter by its dotted name.
Tensor parameter(nn::GPT& model, const std::string& name) {
  for (auto& [n, p] : model.named_parameters())
    if (n == name) return p;
  FAIL("no parameter " << name);
  return {};
}

// Rows [r0, r0 + rows) x columns [c0, c0 + cols) of a parameter's gradient, flattened.
std::vector<double> block(nn::GPT& model, const std::string& name, std::int64_t r0,
                          std::int64_t rows, std::int64_t c0, std::int64_t cols) {
  const Tensor g = parameter(model, name).grad();
  const auto v = g.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t r = r0; r < r0 + rows; ++r)
    for (std::int64_t c = c0; c < c0 + cols; ++c)
      out.push_back(v[static_cast<std::size_t>(r * g.size(1) + c)]);
  return out;
}

double cos(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa * bb);
}

double norm(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

std::string in_proj(int layer) {
  return "layers." + std::to_string(layer) + ".self_attn.in_proj_weight";
}
std::string out_proj(int layer) {
  return "layers." + std::to_string(layer) + ".self_attn.out_proj.weight";
}

}  // namespace

TEST_CASE("head_grad_cosines: every pair of heads' gradient blocks, per projection") {
  const auto task = train::make_task("copy", train::TaskOptions().with_seed(2).with_length(3));
  auto model = gpt(*task, 2);
  backward(*model, *task);
  const auto c = inspect::head_grad_cosines(*model);
  REQUIRE(c.size() == 2);
  CHECK(c[1].layer == "layers.1.self_attn");
  const std::int64_t d = kWidth / 2;
  for (int l = 0; l < 2; ++l) {
    CAPTURE(l);
    for (int p = 0; p < 3; ++p) {  // q, k, v: row blocks of in_proj_weight
      const auto& m = p == 0 ? c[l].w_q : p == 1 ? c[l].w_k : c[l].w_v;
      const auto h0 = block(*model, in_proj(l), p * kWidth, d, 0, kWidth);
      const auto h1 = block(*model, in_proj(l), p * kWidth + d, d, 0, kWidth);
      CHECK(m[0][0] == doctest::Approx(1.0));
      CHECK(m[0][1] == doctest::Approx(cos(h0, h1)).epsilon(1e-12));
      CHECK(m[1][0] == doctest::Approx(m[0][1]).epsilon(1e-15));
    }
    const auto o0 = block(*model, out_proj(l), 0, kWidth, 0, d);  // W_o: column blocks
    const auto o1 = block(*model, out_proj(l), 0, kWidth, d, d);
    CHECK(c[l].w_o[0][1] == doctest::Approx(cos(o0, o1)).epsilon(1e-12));
  }
}

TEST_CASE("compare_grad_slices: one head against two from the same weights, slice by slice") {
  const auto task = train::make_task("copy", train::TaskOptions().with_seed(2).with_length(3));
  auto two = gpt(*task, 2), one = gpt(*task, 1);
  one->load_state_dict(two->state_dict());  // fixed width: the same parameters
  backward(*two, *task);
  backward(*one, *task);
  const auto c = inspect::compare_grad_slices(*two, *one, 2);
  REQUIRE(c.size() == 4);  // 2 layers x 2 slices
  const std::int64_t d = kWidth / 2;
  for (const auto& s : c) {
    CAPTURE(s.layer);
    CAPTURE(s.slice);
    const int l = static_cast<int>(s.layer);
    const std::int64_t r = s.slice * d;
    const auto q2 = block(*two, in_proj(l), r, d, 0, kWidth),
               q1 = block(*one, in_proj(l), r, d, 0, kWidth);
    const auto v2 = block(*two, in_proj(l), 2 * kWidth + r, d, 0, kWidth);
    const auto v1 = block(*one, in_proj(l), 2 * kWidth + r, d, 0, kWidth);
    const auto o2 = block(*two, out_proj(l), 0, kWidth, r, d),
               o1 = block(*one, out_proj(l), 0, kWidth, r, d);
    CHECK(s.cos_q == doctest::Approx(cos(q2, q1)).epsilon(1e-12));
    CHECK(s.ratio_q == doctest::Approx(norm(q2) / norm(q1)).epsilon(1e-12));
    CHECK(s.cos_v == doctest::Approx(cos(v2, v1)).epsilon(1e-12));
    CHECK(s.cos_o == doctest::Approx(cos(o2, o1)).epsilon(1e-12));
    CHECK(s.cos_q < 0.999);  // different functions, different gradients
  }
  // A model against itself: cosine 1, ratio 1.
  for (const auto& s : inspect::compare_grad_slices(*two, *two, 4)) {
    CHECK(s.cos_k == doctest::Approx(1.0));
    CHECK(s.ratio_o == doctest::Approx(1.0));
  }
  CHECK_THROWS_WITH_AS(inspect::compare_grad_slices(*two, *one, 3),
                       doctest::Contains("must divide the projections' width 8"), hg::ValueError);
  auto wide = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                       .max_len = task->max_len(),
                                                       .d_model = 2 * kWidth,
                                                       .nhead = 2,
                                                       .num_layers = 2,
                                                       .dim_feedforward = 16});
  wide->to(hg::kFloat64);
  backward(*wide, *task);
  CHECK_THROWS_WITH_AS(inspect::compare_grad_slices(*two, *wide, 2),
                       doctest::Contains("other shapes"), hg::ValueError);
  auto fresh = gpt(*task, 2);
  CHECK_THROWS_WITH_AS(inspect::compare_grad_slices(*two, *fresh, 2),
                       doctest::Contains("no projection gradient"), hg::ValueError);
}

TEST_CASE("with W_q = W_k = 0 one head and two get the same W_v and W_o gradients") {
  // Every score is 0, so every head's pattern is the uniform causal one, the single head's
  // too: the value and output blocks see the same pattern in both models, and the
  // derivation's only difference (the per-head softmax Jacobian) vanishes for them.
  const auto task = train::make_task("copy", train::TaskOptions().with_seed(4).with_length(3));
  auto two = gpt(*task, 2), one = gpt(*task, 1);
  {
    hg::NoGradGuard no_grad;
    for (int l = 0; l < 2; ++l) {
      Tensor w = parameter(*two, in_proj(l));
      auto v = w.to_vector<double>();
      for (std::int64_t i = 0; i < 2 * kWidth * kWidth; ++i) v[static_cast<std::size_t>(i)] = 0;
      w.copy_(hg::from_vector(v, w.shape(), hg::kFloat64));
    }
  }
  one->load_state_dict(two->state_dict());
  backward(*two, *task);
  backward(*one, *task);
  for (const auto& s : inspect::compare_grad_slices(*two, *one, 2)) {
    CAPTURE(s.layer);
    CAPTURE(s.slice);
    CHECK(s.cos_v == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(s.ratio_v == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(s.cos_o == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(s.ratio_o == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(std::isnan(s.cos_q));  // k = 0 makes dL/dW_q 0 in both
  }
}
