// Hook points (nn/hooks.hpp) through inspect::Hooks: every documented point fires with its
// shape on the three attention layer types, the transformer layers and GPT; their values
// agree across the layer types and with independent computations (the residual identities
// of a pre-norm layer, the composed attention); a replacement continues the forward and
// gradients flow through it (checked against inspect::Capture's retained gradients); bad
// replacements and unknown names are refused with the point named.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/hooks.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/keras_attention.hpp"
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

// Records every hook point's value (unchanged) by name.
std::map<std::string, Tensor> record_all(const nn::Module& model, const std::function<Tensor()>& f,
                                         Tensor* output = nullptr) {
  inspect::Hooks hooks(model);
  std::map<std::string, Tensor> seen;
  for (const std::string& name : hooks.names())
    hooks.add(name, [&seen](const Tensor& v, const inspect::HookContext& c) {
      seen[c.name] = v;
      return v;
    });
  auto scope = hooks.activate();
  Tensor out = f();
  if (output) *output = out;
  return seen;
}

nn::GPTOptions tiny_gpt(bool per_head) { return hg::testing::tiny_gpt_options(per_head); }

Tensor tokens(std::int64_t n, std::int64_t t, std::uint64_t seed) {
  hg::Generator gen(seed);
  return hg::randint(0, 11, {n, t}, {}, &gen);
}

}  // namespace

TEST_CASE(
    "every attention layer type fires q, k, v, scores, pattern, z and result with the documented "
    "shapes") {
  const std::int64_t n = 2, l = 5, s = 5, e = 8, h = 2, d = 4;
  const auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_batch_first(true), 1);
  const auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  const auto keras = nn::KerasMultiHeadAttention::from_torch(*fused);
  hg::Generator gen(2);
  const Tensor x = hg::randn({n, l, e}, hg::kFloat64, &gen);
  const std::map<std::string, Shape> expected = {
      {"q", {n, h, l, d}},      {"k", {n, h, s, d}},       {"v", {n, h, s, d}},
      {"scores", {n, h, l, s}}, {"pattern", {n, h, l, s}}, {"z", {n, h, l, d}},
      {"result", {n, h, l, e}}};
  std::vector<std::map<std::string, Tensor>> all;
  std::vector<Tensor> outputs;
  for (int kind = 0; kind < 3; ++kind) {
    Tensor out;
    const nn::Module& m = kind == 0   ? static_cast<const nn::Module&>(*fused)
                          : kind == 1 ? static_cast<const nn::Module&>(*headwise)
                                      : static_cast<const nn::Module&>(*keras);
    auto seen = record_all(
        m,
        [&] {
          if (kind == 0) return fused->forward(x, x, x).output;
          if (kind == 1) return headwise->forward(x, x, x).output;
          return keras->forward(x, x).output;
        },
        &out);
    INFO("layer type " << kind);
    REQUIRE(seen.size() == expected.size());
    for (const auto& [name, shape] : expected) CHECK(seen.at(name).shape() == shape);
    // The output is the sum of the heads' results plus the output bias.
    const Tensor bias = kind == 2 ? keras->attention_output_dense->bias : fused->out_proj->bias;
    CHECK(max_abs_diff(out, hg::add(hg::sum(seen.at("result"), {1}), bias)) < 1e-12);
    all.push_back(seen);
    outputs.push_back(out);
  }
  // The same weights give the same values whatever the layout.
  for (int kind = 1; kind < 3; ++kind)
    for (const auto& [name, shape] : expected) {
      INFO("layer type " << kind << ", point " << name);
      CHECK(max_abs_diff(all[kind].at(name), all[0].at(name)) < 1e-12);
    }
  // Hooked (composed) and unhooked (fused) forwards agree.
  CHECK(max_abs_diff(outputs[0], fused->forward(x, x, x).output) < 1e-12);
}

TEST_CASE("a pre-norm GPT's hook points satisfy the residual identities and end in its logits") {
  for (bool per_head : {false, true}) {
    INFO("per_head " << per_head);
    hg::Generator gen(3);
    nn::GPT model(tiny_gpt(per_head), &gen);
    model.to(hg::kFloat64);
    model.eval();
    const Tensor input = tokens(2, 6, 4);
    Tensor logits;
    const auto seen = record_all(
        model, [&] { return model.forward(input); }, &logits);
    CHECK(max_abs_diff(seen.at("logits"), logits) < 1e-15);
    CHECK(max_abs_diff(seen.at("ln_final"), model.norm->forward(seen.at("layers.1.resid_post"))) <
          1e-12);
    CHECK(max_abs_diff(seen.at("layers.0.resid_pre"), seen.at("embed")) < 1e-15);
    for (const std::string layer : {"layers.0", "layers.1"}) {
      INFO(layer);
      const Tensor pre = seen.at(layer + ".resid_pre"), mid = seen.at(layer + ".resid_mid");
      CHECK(seen.at(layer + ".resid_pre").shape() == Shape{2, 6, 12});
      CHECK(seen.at(layer + ".mlp_pre").shape() == Shape{2, 6, 48});
      CHECK(max_abs_diff(mid, hg::add(pre, seen.at(layer + ".attn_out"))) < 1e-12);
      CHECK(max_abs_diff(seen.at(layer + ".resid_post"),
                         hg::add(mid, seen.at(layer + ".mlp_out"))) < 1e-12);
      CHECK(max_abs_diff(seen.at(layer + ".mlp_post"), hg::gelu(seen.at(layer + ".mlp_pre"))) <
            1e-12);
      CHECK(max_abs_diff(seen.at(layer + ".attn_out"),
                         hg::add(hg::sum(seen.at(layer + ".self_attn.result"), {1}),
                                 model.parameter(layer + ".self_attn.out_proj.bias"))) < 1e-12);
    }
    CHECK(max_abs_diff(seen.at("layers.1.resid_pre"), seen.at("layers.0.resid_post")) < 1e-15);
  }
}

TEST_CASE("names follow the module paths in model order and contexts give layer and head") {
  hg::Generator gen(5);
  nn::GPT model(tiny_gpt(false), &gen);
  inspect::Hooks hooks(model);
  const auto names = hooks.names();
  REQUIRE(names.size() == 3 + 2 * (7 + 7));
  CHECK(names.front() == "embed");
  CHECK(hooks.context("layers.1.self_attn.z").layer == 1);
  CHECK(hooks.context("layers.1.mlp_out").layer == 1);
  CHECK(hooks.context("layers.1.self_attn.z").module == "layers.1.self_attn");
  CHECK(hooks.names_at("pattern") ==
        std::vector<std::string>{"layers.0.self_attn.pattern", "layers.1.self_attn.pattern"});
  CHECK(hooks.heads_at("layers.0.self_attn.q") == 3);
  CHECK(hooks.heads_at("layers.0.resid_pre") == 0);
  CHECK_THROWS_AS(hooks.add("layers.0.self_attn.zz", {}), hg::IndexError);
  CHECK_THROWS_AS(hooks.add("layers.0.resid_pre", 0, {}), hg::ValueError);
  CHECK_THROWS_AS(hooks.add("layers.0.self_attn.z", 3, {}), hg::IndexError);
  CHECK(hooks.names_at("hook_z").empty());
  CHECK(hooks.point_names() ==
        std::vector<std::string>{"embed", "ln_final", "logits", "resid_pre", "attn_out",
                                 "resid_mid", "mlp_pre", "mlp_post", "mlp_out", "resid_post", "q",
                                 "k", "v", "scores", "pattern", "z", "result"});
}

TEST_CASE("a replacement continues the forward and its gradient is the one a capture retains") {
  const std::int64_t n = 2, l = 4, e = 8, h = 2;
  const auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_batch_first(true), 6);
  hg::Generator gen(7);
  const Tensor x = hg::randn({n, l, e}, hg::kFloat64, &gen);
  const Tensor r = hg::randn({n, l, e}, hg::kFloat64, &gen);
  // Reference: dL/dz from a capture, L = sum(output * R).
  inspect::Capture capture(*fused, {"z"});
  Tensor z_grad, base;
  {
    auto scope = capture.activate();
    base = fused->forward(x, x, x).output;
    hg::sum(hg::mul(base, r)).backward();
    z_grad = capture.grad("z");
  }
  fused->zero_grad();
  // z + delta with delta a zero leaf: same output, and delta's gradient is dL/dz.
  Tensor delta = hg::zeros({n, h, l, e / h}, hg::kFloat64);
  delta.requires_grad_(true);
  inspect::Hooks hooks(*fused);
  hooks.add("z", [&](const Tensor& z, const inspect::HookContext&) { return hg::add(z, delta); });
  {
    auto scope = hooks.activate();
    const Tensor out = fused->forward(x, x, x).output;
    CHECK(max_abs_diff(out, base) < 1e-12);
    hg::sum(hg::mul(out, r)).backward();
  }
  CHECK(max_abs_diff(delta.grad(), z_grad) < 1e-12);

  // Doubling head 1's z doubles its share of the output (output - b_o is linear in z).
  inspect::Hooks twice(*fused);
  twice.add("z", 1, [](const Tensor& z, const inspect::HookContext& c) {
    CHECK(c.head == 1);
    CHECK(z.shape() == Shape{2, 4, 4});
    return hg::mul(z, 2.0);
  });
  std::map<std::string, Tensor> plain;
  {
    hg::NoGradGuard no_grad;
    plain = record_all(*fused, [&] { return fused->forward(x, x, x).output; });
    auto scope = twice.activate();
    const Tensor out = fused->forward(x, x, x).output;
    const Tensor head1 = hg::select(plain.at("result"), 1, 1);
    CHECK(max_abs_diff(out, hg::add(base, head1)) < 1e-12);
  }
}

TEST_CASE("a replacement of another shape is refused naming the hook point") {
  const auto fused = random_fused(nn::MultiheadAttentionOptions(8, 2).with_batch_first(true), 8);
  hg::Generator gen(9);
  const Tensor x = hg::randn({2, 3, 8}, hg::kFloat64, &gen);
  inspect::Hooks hooks(*fused);
  hooks.add("pattern",
            [](const Tensor& p, const inspect::HookContext&) { return hg::narrow(p, 3, 0, 2); });
  auto scope = hooks.activate();
  try {
    fused->forward(x, x, x);
    FAIL("no error");
  } catch (const hg::ShapeError& e) {
    CHECK(std::string(e.what()).find("pattern") != std::string::npos);
  }
}

TEST_CASE("without an active handler a layer keeps its fused path, and nested hooks both run") {
  const auto fused = random_fused(nn::MultiheadAttentionOptions(8, 2).with_batch_first(true), 10);
  hg::Generator gen(11);
  const Tensor x = hg::randn({2, 3, 8}, hg::kFloat64, &gen);
  CHECK(nn::active_hook_handlers().empty());
  inspect::Hooks outer(*fused), inner(*fused);
  int outer_calls = 0, inner_calls = 0;
  outer.add("q", [&](const Tensor& q, const inspect::HookContext&) {
    ++outer_calls;
    return q;
  });
  inner.add("q", [&](const Tensor& q, const inspect::HookContext&) {
    ++inner_calls;
    return q;
  });
  {
    auto a = outer.activate();
    fused->forward(x, x, x);
    {
      auto b = inner.activate();
      fused->forward(x, x, x);
    }
    fused->forward(x, x, x);
  }
  fused->forward(x, x, x);
  CHECK(outer_calls == 3);
  CHECK(inner_calls == 1);
  CHECK(nn::active_hook_handlers().empty());
}
