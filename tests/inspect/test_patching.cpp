// inspect::Patching, ablate_heads, direct_logit_attribution and logit_lens against
// independent facts: patching a run with its own values changes nothing (bitwise);
// patching the whole last residual stream gives the clean logits (bitwise); attribution
// patching equals activation patching where the metric is linear in the patched tensor (a
// bare attention layer's z and v, with a linear metric of its output); zero ablation
// equals gating the head to 0 (HeadAblation, another mechanism); DLA components sum to
// the logit difference (1e-5 in float32, 1e-12 in float64); the logit lens ends in the
// model's logits; path patching from a head in the receiver's layer or later is refused.
// The PyTorch oracle for the grids is tests/reference/patching_oracle.py.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/heads.hpp"
#include "headgrad/inspect/logit_attribution.hpp"
#include "headgrad/inspect/patching.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "helpers.hpp"
#include "nn/random_attention.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;
using hg::testing::random_fused;

namespace {

constexpr std::int64_t kVocab = 11, kBatch = 4, kLength = 6;

std::shared_ptr<nn::GPT> small_gpt(hg::DType dtype, bool per_head = false, std::uint64_t seed = 1) {
  nn::GPTOptions o;
  o.vocab_size = kVocab;
  o.max_len = 8;
  o.d_model = 16;
  o.nhead = 4;
  o.num_layers = 2;
  o.per_head = per_head;
  hg::Generator gen(seed);
  auto model = std::make_shared<nn::GPT>(o, &gen);
  model->to(dtype);
  model->eval();
  return model;
}

struct Prompts {
  Tensor clean, corrupted, position, answer, wrong;
};

// Random prompts; the corrupted one differs at position 1; the metric is the logit
// difference at the last position between tokens 3 and 7.
Prompts prompts(std::uint64_t seed) {
  hg::Generator gen(seed);
  Prompts p;
  p.clean = hg::randint(0, kVocab, {kBatch, kLength}, {}, &gen);
  std::vector<std::int64_t> corrupted = p.clean.to_vector<std::int64_t>();
  for (std::int64_t n = 0; n < kBatch; ++n) {
    auto& token = corrupted[static_cast<std::size_t>(n * kLength + 1)];
    token = (token + 1) % kVocab;
  }
  p.corrupted = hg::from_vector<std::int64_t>(corrupted, {kBatch, kLength});
  p.position = hg::full({kBatch}, kLength - 1, hg::TensorOptions(hg::kInt64));
  p.answer = hg::full({kBatch}, 3, hg::TensorOptions(hg::kInt64));
  p.wrong = hg::full({kBatch}, 7, hg::TensorOptions(hg::kInt64));
  return p;
}

inspect::Patching patching_of(const std::shared_ptr<nn::GPT>& model, const Prompts& p) {
  return inspect::Patching(
      *model, [model](const Tensor& x) { return model->forward(x); }, p.clean, p.corrupted,
      [p](const Tensor& logits) {
        return inspect::logit_difference(logits, p.position, p.answer, p.wrong);
      });
}

}  // namespace

TEST_CASE("patching a run with its own values leaves the logits bitwise identical") {
  const auto model = small_gpt(hg::kFloat32);
  const Prompts p = prompts(2);
  const auto cached = inspect::run_with_cache(*model, [&] { return model->forward(p.corrupted); });
  // The same points hooked with identity functions, and then with the cached values: the
  // patched run is the hooked run, bit for bit.
  for (const std::string point : {"z", "q", "pattern", "result"}) {
    INFO(point);
    const std::string name = "layers.0.self_attn." + point;
    inspect::Hooks identity(*model), patched(*model);
    identity.add(name, [](const Tensor& v, const inspect::HookContext&) { return v; });
    const Tensor source = cached.cache.get(name);
    patched.add(name, 2, [&](const Tensor&, const inspect::HookContext&) {
      return hg::select(source, 1, 2);
    });
    Tensor a, b;
    {
      auto s = identity.activate();
      a = model->forward(p.corrupted);
    }
    {
      auto s = patched.activate();
      b = model->forward(p.corrupted);
    }
    CHECK(a.to_vector<float>() == b.to_vector<float>());
  }
}

TEST_CASE("patching every position of the last resid_post gives the clean logits bitwise") {
  for (bool per_head : {false, true}) {
    const auto model = small_gpt(hg::kFloat32, per_head);
    const Prompts p = prompts(3);
    const auto clean = inspect::run_with_cache(*model, [&] { return model->forward(p.clean); });
    inspect::Hooks hooks(*model);
    const Tensor source = clean.cache.get("layers.1.resid_post");
    hooks.add("layers.1.resid_post",
              [&](const Tensor&, const inspect::HookContext&) { return source; });
    auto scope = hooks.activate();
    CHECK(model->forward(p.corrupted).to_vector<float>() == clean.output.to_vector<float>());
    scope.end();  // every active handler runs: left active, it would patch Patching's runs too
    // and through Patching: the whole point restores the metric fully.
    const inspect::Patching patching = patching_of(model, p);
    CHECK(patching.patch({{"layers.1.resid_post"}}) == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("grids have the documented shapes and patching the embedding everywhere restores all") {
  const auto model = small_gpt(hg::kFloat64);
  const Prompts p = prompts(4);
  const inspect::Patching patching = patching_of(model, p);
  CHECK(std::abs(patching.patch({})) < 1e-9);  // nothing patched: the corrupted run
  const inspect::PatchingGrid heads = patching.by_head("z");
  CHECK(heads.shape == Shape{2, 4});
  CHECK(heads.rows == std::vector<std::string>{"layers.0.self_attn", "layers.1.self_attn"});
  const inspect::PatchingGrid cells = patching.by_head_position("z");
  CHECK(cells.shape == Shape{2, 4, kLength});
  const inspect::PatchingGrid resid = patching.by_position("resid_pre");
  CHECK(resid.shape == Shape{2, kLength});
  // Position 1 of layer 0's input holds everything that differs: restoring it restores all.
  CHECK(resid.at(0, 1) == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(std::abs(resid.at(0, 0)) < 1e-9);
  // Causal: z at positions before the corrupted token is identical in both runs.
  for (std::int64_t h = 0; h < 4; ++h) CHECK(std::abs(cells.at(0, h, 0)) < 1e-9);
  CHECK(patching.by_layer("resid_post").shape == Shape{2});
  CHECK(heads.tensor().shape() == Shape{2, 4});
}

TEST_CASE("attribution patching equals activation patching where the metric is linear") {
  // A bare attention layer; metric = sum(output * R) is linear in z and, the pattern being
  // fixed by q and k, in v: the first-order estimate is exact.
  const auto layer = random_fused(nn::MultiheadAttentionOptions(8, 2).with_batch_first(true), 5);
  hg::Generator gen(6);
  const Tensor clean = hg::randn({3, 5, 8}, hg::kFloat64, &gen);
  const Tensor corrupted = hg::randn({3, 5, 8}, hg::kFloat64, &gen);
  const Tensor r = hg::randn({3, 5, 8}, hg::kFloat64, &gen);
  const inspect::Patching patching(
      *layer, [layer](const Tensor& x) { return layer->forward(x, x, x).output; }, clean, corrupted,
      [r](const Tensor& out) { return hg::sum(hg::mul(out, r)); });
  for (const char* point : {"z", "v"}) {
    INFO(point);
    const auto exact = patching.by_head_position(point);
    const auto estimate = patching.attribution_by_head_position(point);
    REQUIRE(exact.values.size() == estimate.values.size());
    for (std::size_t i = 0; i < exact.values.size(); ++i)
      CHECK(estimate.values[i] == doctest::Approx(exact.values[i]).epsilon(1e-9));
    const auto exact_heads = patching.by_head(point);
    const auto estimate_heads = patching.attribution_by_head(point);
    for (std::size_t i = 0; i < exact_heads.values.size(); ++i)
      CHECK(estimate_heads.values[i] == doctest::Approx(exact_heads.values[i]).epsilon(1e-9));
  }
  // And it is only an estimate where the metric is not linear (the pattern).
  const auto exact = patching.by_head("q");
  const auto estimate = patching.attribution_by_head("q");
  double gap = 0;
  for (std::size_t i = 0; i < exact.values.size(); ++i)
    gap = std::max(gap, std::abs(exact.values[i] - estimate.values[i]));
  CHECK(gap > 1e-6);
}

TEST_CASE("zero ablation of a head equals gating it to 0") {
  const auto model = small_gpt(hg::kFloat64);
  const Prompts p = prompts(7);
  const inspect::ModelRun run = [model](const Tensor& x) { return model->forward(x); };
  const inspect::LogitsMetric metric = [p](const Tensor& logits) {
    return inspect::logit_difference(logits, p.position, p.answer, p.wrong);
  };
  const auto table =
      inspect::ablate_heads(*model, run, p.clean, Tensor(), metric, inspect::Ablation::zero);
  CHECK(table.metric.shape == Shape{2, 4});
  for (std::int64_t l = 0; l < 2; ++l)
    for (std::int64_t h = 0; h < 4; ++h) {
      inspect::HeadAblation gate(*model, {{l, h}});
      hg::NoGradGuard no_grad;
      CHECK(table.metric.at(l, h) ==
            doctest::Approx(metric(model->forward(p.clean)).item()).epsilon(1e-10));
    }
  // Mean ablation over a reference of copies of the input changes nothing.
  const Tensor one = hg::narrow(p.clean, 0, 0, 1);
  const Tensor copies = hg::concat({one, one, one, one}, 0);
  const auto same =
      inspect::ablate_heads(*model, run, copies, copies, metric, inspect::Ablation::mean);
  for (double v : same.metric.values) CHECK(v == doctest::Approx(same.baseline).epsilon(1e-10));
  const auto resampled = inspect::ablate_heads(*model, run, p.clean, p.corrupted, metric,
                                               inspect::Ablation::resample, "z", 3);
  CHECK(resampled.metric.shape == Shape{2, 4});
  CHECK_THROWS_AS(
      inspect::ablate_heads(*model, run, p.clean, one, metric, inspect::Ablation::resample),
      hg::ShapeError);
}

TEST_CASE("direct logit attribution sums to the logit difference and the lens ends in the logits") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    for (bool per_head : {false, true}) {
      INFO(hg::to_string(dtype) << " per_head " << per_head);
      const auto model = small_gpt(dtype, per_head, 8);
      const Prompts p = prompts(9);
      const auto dla =
          inspect::direct_logit_attribution(*model, p.clean, p.position, p.answer, p.wrong);
      const double tol = dtype == hg::kFloat32 ? 1e-5 : 1e-12;
      CHECK(std::abs(dla.sum() - dla.logit_difference) < tol);
      CHECK(dla.labels.size() == 1 + 2 * (4 + 2) + 1);
      CHECK(dla.heads.size() == 2);
      const auto lens = inspect::logit_lens(*model, p.clean);
      REQUIRE(lens.stages.size() == 3);
      hg::NoGradGuard no_grad;
      CHECK(max_abs_diff(lens.logits.back(), model->forward(p.clean)) < tol);
    }
  }
  nn::GPTOptions post;
  post.vocab_size = kVocab;
  post.max_len = 8;
  post.norm_first = false;
  nn::GPT post_norm(post);
  const Prompts p = prompts(10);
  CHECK_THROWS_AS(
      inspect::direct_logit_attribution(post_norm, p.clean, p.position, p.answer, p.wrong),
      hg::ValueError);
}

TEST_CASE("path patching needs an earlier sender and q, k or v, and the grid marks later cells") {
  const auto model = small_gpt(hg::kFloat64);
  const Prompts p = prompts(11);
  const inspect::Patching patching = patching_of(model, p);
  CHECK_THROWS_AS(patching.path_patch({1, 0}, {1, 2}, "q"), hg::ValueError);
  CHECK_THROWS_AS(patching.path_patch({0, 0}, {1, 2}, "z"), hg::ValueError);
  CHECK_THROWS_AS(patching.path_patch({0, 9}, {1, 2}, "q"), hg::IndexError);
  const auto grid = patching.path_patching({1, 2}, "v");
  CHECK(grid.shape == Shape{2, 4});
  for (std::int64_t h = 0; h < 4; ++h) {
    CHECK(std::isfinite(grid.at(0, h)));
    CHECK(std::isnan(grid.at(1, h)));
  }
  const auto restoring = patching.fewest_heads_restoring(0.9);
  CHECK(!restoring.heads.empty());
  CHECK((restoring.restored >= 0.9 || restoring.heads.size() == 8));
}

TEST_CASE("patching refuses equal metrics, unknown names and mismatched inputs") {
  const auto model = small_gpt(hg::kFloat64);
  const Prompts p = prompts(12);
  const inspect::ModelRun run = [model](const Tensor& x) { return model->forward(x); };
  const inspect::LogitsMetric metric = [p](const Tensor& logits) {
    return inspect::logit_difference(logits, p.position, p.answer, p.wrong);
  };
  CHECK_THROWS_AS(inspect::Patching(*model, run, p.clean, p.clean, metric), hg::ValueError);
  CHECK_THROWS_AS(inspect::Patching(*model, run, p.clean, hg::narrow(p.corrupted, 1, 0, 3), metric),
                  hg::ShapeError);
  const inspect::Patching patching(*model, run, p.clean, p.corrupted, metric);
  CHECK_THROWS_AS(patching.patch({{"layers.0.attn.hook_z"}}), hg::IndexError);
  CHECK_THROWS_AS(patching.patch({{"layers.0.resid_pre", 1}}), hg::ValueError);
  CHECK_THROWS_AS(patching.by_head("resid_pre"), hg::ValueError);
  CHECK_THROWS_AS(inspect::logit_difference(hg::zeros({2, 3, 4}), p.position, p.answer, p.wrong),
                  hg::ShapeError);
}

TEST_CASE("token ids outside the vocabulary are refused by the logit difference and DLA") {
  const auto model = small_gpt(hg::kFloat64);
  const Prompts p = prompts(13);
  const Tensor logits = model->forward(p.clean);
  for (const std::int64_t id : {std::int64_t{-1}, kVocab}) {
    const Tensor bad = hg::full_like(p.answer, static_cast<double>(id));
    INFO("token id " << id);
    try {
      inspect::logit_difference(logits, p.position, bad, p.wrong);
      FAIL("accepted");
    } catch (const hg::IndexError& e) {
      CHECK(std::string(e.what()).find("answer holds the token id " + std::to_string(id)) !=
            std::string::npos);
    }
    CHECK_THROWS_AS(inspect::logit_difference(logits, p.position, p.answer, bad), hg::IndexError);
    CHECK_THROWS_AS(inspect::direct_logit_attribution(*model, p.clean, p.position, bad, p.wrong),
                    hg::IndexError);
  }
  // A position may count from the end, as an index does.
  const Tensor last = hg::full_like(p.position, -1.0);
  const Tensor end = hg::full_like(p.position, static_cast<double>(logits.size(1) - 1));
  CHECK(inspect::logit_difference(logits, last, p.answer, p.wrong).item() ==
        inspect::logit_difference(logits, end, p.answer, p.wrong).item());
}

TEST_CASE("a GPT's patched runs resume from the patched layer, on the corrupted run's values") {
  for (const hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    const double tolerance = dtype == hg::kFloat64 ? 1e-12 : 1e-5;
    const auto model = small_gpt(dtype);
    const Prompts p = prompts(5);
    const auto metric = [p](const Tensor& logits) {
      return inspect::logit_difference(logits, p.position, p.answer, p.wrong);
    };
    const inspect::Patching whole = patching_of(model, p);  // every run from the input
    const inspect::Patching resumed(*model, p.clean, p.corrupted, metric);
    CHECK(resumed.clean_metric() == whole.clean_metric());
    CHECK(resumed.corrupted_metric() == whole.corrupted_metric());
    for (const auto& [a, b] :
         {std::pair{whole.by_head_position("z"), resumed.by_head_position("z")},
          std::pair{whole.by_position("resid_pre"), resumed.by_position("resid_pre")},
          std::pair{whole.by_layer("mlp_out"), resumed.by_layer("mlp_out")},
          std::pair{whole.by_head("v"), resumed.by_head("v")}}) {
      REQUIRE(a.values.size() == b.values.size());
      for (std::size_t i = 0; i < a.values.size(); ++i)
        CHECK(b.values[i] == doctest::Approx(a.values[i]).epsilon(tolerance).scale(1));
    }
    // Causal: layer 1's z before the corrupted position is the corrupted run's own value.
    for (std::int64_t h = 0; h < 4; ++h)
      CHECK(std::abs(resumed.patch({{"layers.1.self_attn.z", h, 0}})) < 10 * tolerance);
    // Patches in two layers start from the lower one.
    const std::vector<inspect::Patching::Patch> two{{"layers.1.self_attn.z", 2, 3},
                                                    {"layers.0.resid_post", -1, 1}};
    CHECK(resumed.patch(two) == doctest::Approx(whole.patch(two)).epsilon(tolerance).scale(1));
  }
  // The layers after a residual: with the same hook points active, forward_from(l, the
  // resid_pre of layer l) gives the forward's logits bit for bit.
  const auto model = small_gpt(hg::kFloat32);
  const Prompts p = prompts(6);
  const inspect::CachedRun run =
      inspect::run_with_cache(*model, [&] { return model->forward(p.clean); });
  for (const std::int64_t l : {0, 1}) {
    const Tensor resid = run.cache["layers." + std::to_string(l) + ".resid_pre"];
    const inspect::CachedRun rest =
        inspect::run_with_cache(*model, [&] { return model->forward_from(l, resid); });
    CHECK(max_abs_diff(rest.output, run.output) == 0);
  }
  CHECK_THROWS_WITH_AS(model->forward_from(3, run.cache["layers.1.resid_pre"]),
                       "GPT::forward_from: layer 3 is not in [0, 2]", hg::ValueError);
  CHECK_THROWS_AS(model->forward_from(1, p.clean), hg::ShapeError);
}
