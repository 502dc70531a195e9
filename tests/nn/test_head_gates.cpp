// Head gates on the attention layers (AttentionLayer::set_head_gates): head h's output z_h
// is scaled by gates[h] (H) or gates[n, h] (N, H) before the output projection. Checked
// against the per-head contributions of an ungated run (inspect::Capture), whose sum over
// heads plus out_proj.bias is the output: a gated output must equal
// out_proj.bias + sum_h gate_h * contribution_h. Also gradcheck in the gates and the query,
// ones leaving the output unchanged beyond rounding, and the errors.
//
// Shapes: N batch, L length, E embed, H heads; outputs compared batch first (N, L, E).
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "helpers.hpp"
#include "nn/random_attention.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using headgrad::testing::layout_of;
using headgrad::testing::random_fused;
namespace inspect = headgrad::inspect;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;

namespace {

constexpr double kTol = 1e-12;

// out_proj.bias + sum_h gate(n, h) * contribution[n, h] as (N, L, E), from the
// contributions (N, H, L, E) of an ungated run.
Tensor gated_reference(const Tensor& contribution, const Tensor& out_bias,
                       const std::vector<std::vector<double>>& gate) {
  const std::int64_t n = contribution.size(0), h = contribution.size(1), l = contribution.size(2),
                     e = contribution.size(3);
  const auto c = contribution.to_vector<double>();
  const auto b = out_bias.to_vector<double>();
  std::vector<double> out(static_cast<std::size_t>(n * l * e));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < l; ++t)
      for (std::int64_t f = 0; f < e; ++f) {
        double acc = b[static_cast<std::size_t>(f)];
        for (std::int64_t hd = 0; hd < h; ++hd)
          acc += gate[static_cast<std::size_t>(i)][static_cast<std::size_t>(hd)] *
                 c[static_cast<std::size_t>(((i * h + hd) * l + t) * e + f)];
        out[static_cast<std::size_t>((i * l + t) * e + f)] = acc;
      }
  return hg::from_vector(out, {n, l, e}, hg::kFloat64);
}

}  // namespace

TEST_CASE("a head whose gate is 0 contributes nothing and gates scale each head's output") {
  const std::int64_t n = 2, l = 3, e = 6, h = 3;
  for (bool batch_first : {false, true}) {
    auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_batch_first(batch_first), 1);
    const Tensor x_bf = hg::testing::param({n, l, e}, 2).detach();
    const Tensor x = batch_first ? x_bf : hg::transpose(x_bf, 0, 1);
    auto to_bf = [&](const Tensor& y) { return batch_first ? y : hg::transpose(y, 0, 1); };
    for (bool per_head : {false, true}) {
      CAPTURE(batch_first);
      CAPTURE(per_head);
      auto layer = layout_of(fused, per_head);
      inspect::Capture capture(*layer, {"result"});
      {
        auto scope = capture.activate();
        (*layer)(x, x, x);
      }
      const Tensor contribution = capture.get("result").detach();  // (N, H, L, E)
      const Tensor bias = fused->out_proj->bias.detach();
      auto gated = [&](const Tensor& gates) {
        layer->set_head_gates(gates);
        Tensor out = to_bf((*layer)(x, x, x).output);
        layer->clear_head_gates();
        return out;
      };

      // Head 1 ablated: the output minus its contribution.
      const Tensor plain = to_bf((*layer)(x, x, x).output);
      const Tensor without_1 = gated(hg::tensor({1.0, 0.0, 1.0}, hg::kFloat64));
      CHECK(max_abs_diff(without_1, hg::sub(plain, hg::select(contribution, 1, 1))) <= kTol);
      CHECK(max_abs_diff(without_1, gated_reference(contribution, bias, {{1, 0, 1}, {1, 0, 1}})) <=
            kTol);

      // Arbitrary values (H).
      CHECK(max_abs_diff(gated(hg::tensor({0.5, -2.0, 3.0}, hg::kFloat64)),
                         gated_reference(contribution, bias, {{0.5, -2, 3}, {0.5, -2, 3}})) <=
            kTol);

      // Per example (N, H): example 0 loses head 0, example 1 heads 1 and 2.
      const Tensor per_example = hg::from_vector<double>({0, 1, 1, 1, 0, 0}, {n, h}, hg::kFloat64);
      CHECK(max_abs_diff(gated(per_example),
                         gated_reference(contribution, bias, {{0, 1, 1}, {1, 0, 0}})) <= kTol);

      // Every head ablated: only the bias is left.
      CHECK(max_abs_diff(gated(hg::zeros({h}, hg::kFloat64)),
                         gated_reference(contribution, bias, {{0, 0, 0}, {0, 0, 0}})) <= kTol);

      // Ones change nothing beyond rounding (ungated, the fused layer runs its fused core;
      // gated, the composed path).
      CHECK(max_abs_diff(gated(hg::ones({h}, hg::kFloat64)), plain) <= 1e-14);
      CHECK(max_abs_diff(gated(hg::ones({n, h}, hg::kFloat64)), plain) <= 1e-14);
    }
  }
}

TEST_CASE("gates act on unbatched input and with add_bias_kv like on batched input") {
  const std::int64_t l = 3, e = 4, h = 2;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_add_bias_kv(true), 3);
  const Tensor x = hg::testing::param({l, e}, 4).detach();
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    inspect::Capture capture(*layer, {"result"});
    {
      auto scope = capture.activate();
      (*layer)(x, x, x);
    }
    const Tensor contribution = capture.get("result").detach();  // (1, H, L, E)
    for (const Tensor& gates : {hg::tensor({0.0, 1.0}, hg::kFloat64),
                                hg::from_vector<double>({0.0, 1.0}, {1, h}, hg::kFloat64)}) {
      layer->set_head_gates(gates);
      const Tensor out = (*layer)(x, x, x).output;  // (L, E)
      layer->clear_head_gates();
      CHECK(max_abs_diff(hg::unsqueeze(out, 0),
                         gated_reference(contribution, fused->out_proj->bias, {{0, 1}})) <= kTol);
    }
  }
}

TEST_CASE("the layer output passes gradcheck in the gates and the query") {
  const std::int64_t n = 2, l = 3, e = 4, h = 2;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_batch_first(true), 5);
  const Tensor kv = hg::testing::param({n, 4, e}, 6).detach();
  for (bool per_head : {false, true}) {
    for (const Shape& gate_shape : {Shape{h}, Shape{n, h}}) {
      CAPTURE(per_head);
      CAPTURE(gate_shape.size());
      auto layer = layout_of(fused, per_head);
      auto fn = [&](const std::vector<Tensor>& in) {
        layer->set_head_gates(in[1]);
        Tensor out = (*layer)(in[0], kv, kv).output;
        layer->clear_head_gates();
        return out;
      };
      check_gradcheck(fn, {hg::testing::param({n, l, e}, 7), hg::testing::param(gate_shape, 8)});
    }
  }
}

TEST_CASE("gates that require grad receive dL/dgate = sum of dL/dz times the ungated z") {
  // z_gated = gate * z, so dL/dgate[h] = sum over (n, l, c) of dL/dz_gated * z.
  const std::int64_t n = 2, l = 3, e = 6, h = 3;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h), 9);
  const Tensor x = hg::testing::param({l, n, e}, 10).detach();
  const Tensor r = hg::testing::param({l, n, e}, 11).detach();
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    inspect::Capture capture(*layer, {"z"});
    {
      auto scope = capture.activate();
      hg::sum(hg::mul((*layer)(x, x, x).output, r)).backward();
    }
    const Tensor z = capture.get("z").detach(), dz = capture.grad("z");  // (N, H, L, d)
    const auto expected = hg::sum(hg::mul(z, dz), {0, 2, 3}).to_vector<double>();
    Tensor gates = hg::ones({h}, hg::kFloat64).requires_grad_(true);
    layer->set_head_gates(gates);
    hg::sum(hg::mul((*layer)(x, x, x).output, r)).backward();
    layer->clear_head_gates();
    hg::testing::check_values(gates.grad(), {h}, expected, 1e-12);
  }
}

TEST_CASE("wrong gate shapes and dtypes are refused naming the layer") {
  const std::int64_t n = 2, e = 4, h = 2;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h), 12);
  const Tensor x = hg::testing::param({3, n, e}, 13).detach();
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    const std::string type = per_head ? "HeadwiseMultiheadAttention" : "MultiheadAttention";
    CHECK_THROWS_AS(layer->set_head_gates(hg::ones({h + 1}, hg::kFloat64)), hg::ShapeError);
    CHECK_THROWS_AS(layer->set_head_gates(hg::ones({n, h + 1}, hg::kFloat64)), hg::ShapeError);
    CHECK_THROWS_AS(layer->set_head_gates(hg::ones({1, n, h}, hg::kFloat64)), hg::ShapeError);
    CHECK_THROWS_AS(layer->set_head_gates(hg::ones({h})), hg::DTypeError);  // float32
    CHECK_THROWS_AS(layer->set_head_gates(Tensor()), hg::Error);
    const std::string shape_message =
        HG_ERROR_MESSAGE(layer->set_head_gates(hg::ones({h + 1}, hg::kFloat64)));
    CHECK(shape_message.find(type) != std::string::npos);
    CHECK(shape_message.find("(3)") != std::string::npos);
    CHECK(HG_ERROR_MESSAGE(layer->set_head_gates(hg::ones({h}))).find(type) != std::string::npos);
    CHECK_FALSE(layer->head_gates().defined());  // refused gates are not kept

    // (N, H) gates for a batch of 3 on a batch of 2: refused at forward.
    layer->set_head_gates(hg::ones({3, h}, hg::kFloat64));
    CHECK_THROWS_AS((*layer)(x, x, x), hg::ShapeError);
    const std::string batch_message = HG_ERROR_MESSAGE((*layer)(x, x, x));
    CHECK(batch_message.find(type) != std::string::npos);
    CHECK(batch_message.find("(3,2)") != std::string::npos);
    layer->clear_head_gates();
    CHECK_FALSE(layer->head_gates().defined());
  }
}

TEST_CASE("gates are not parameters and are kept until cleared") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2), 14);
  const auto names_before = fused->state_dict().size();
  const auto params_before = fused->parameters().size();
  const Tensor gates = hg::tensor({0.25, 1.0}, hg::kFloat64);
  fused->set_head_gates(gates);
  CHECK(fused->head_gates().impl() == gates.impl());
  CHECK(fused->state_dict().size() == names_before);
  CHECK(fused->parameters().size() == params_before);
  fused->clear_head_gates();
  CHECK_FALSE(fused->head_gates().defined());
}
