// nn::MultiheadAttention (nn/multihead_attention.hpp) on the GPU against the same layer on
// the CPU, in float64 and float32: outputs, attention weights averaged over heads and per
// head, and the gradients of the query, key and value and of every parameter, with causal
// masks (is_causal and a bool attn_mask), float attn_masks, key padding masks with a fully
// padded sequence (its rows get zero weights), cross-attention with kdim and vdim,
// batch_first, unbatched inputs, add_bias_kv and add_zero_attn; also the per-head layout
// (HeadwiseMultiheadAttention) built from the same layer.
//
// Tolerances are normwise (relative to each tensor's largest entry): 1e-11 in float64 and
// 1e-4 in float32. A layer chains about ten ops (projections, softmax, products); each
// may move the last bits, and parameter gradients are sums over every position.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/random_attention.hpp"
#include "parity.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using namespace hg::cuda_testing;

namespace {

struct Case {
  std::string name;
  nn::MultiheadAttentionOptions options;
  std::int64_t L = 5, S = 5, N = 3;  // N = 0: unbatched
  bool self_attention = false;       // key = value = query
  bool is_causal = false;
  bool bool_causal_mask = false;      // attn_mask = causal_mask(L, S)
  bool float_attn_mask = false;       // attn_mask: random additive (L, S)
  bool per_batch_float_mask = false;  // attn_mask: random additive (N*H, L, S)
  bool key_padding = false;           // with one sequence fully padded when N >= 2
  bool average = true;
};

struct Inputs {
  Tensor query, key, value, key_padding_mask, attn_mask;
};

// The CPU tensors of a case: float64, drawn once.
Inputs make_inputs(const Case& c) {
  const auto& o = c.options;
  auto shape = [&](std::int64_t len, std::int64_t dim) {
    if (c.N == 0) return Shape{len, dim};
    return o.batch_first ? Shape{c.N, len, dim} : Shape{len, c.N, dim};
  };
  Inputs in;
  in.query = grad_input(random(shape(c.L, o.embed_dim), 1400));
  if (!c.self_attention) {
    in.key = grad_input(random(shape(c.S, o.key_dim()), 1401));
    in.value = grad_input(random(shape(c.S, o.value_dim()), 1402));
  }
  if (c.key_padding) {
    const Shape pad_shape = c.N == 0 ? Shape{c.S} : Shape{c.N, c.S};
    Tensor pad = random_mask(pad_shape, 0.3, 1403);
    if (c.N >= 2) {  // sequence 1 entirely padding: every query row of it is fully masked
      Tensor whole = hg::zeros({c.N, 1}, hg::kBool);
      whole.set_at({1, 0}, 1.0);
      pad = mask_or(pad, whole);
    }
    in.key_padding_mask = pad;
  }
  if (c.bool_causal_mask) in.attn_mask = hg::causal_mask(c.L, c.S);
  if (c.float_attn_mask) in.attn_mask = random({c.L, c.S}, 1404);
  if (c.per_batch_float_mask) in.attn_mask = random({c.N * o.num_heads, c.L, c.S}, 1405);
  return in;
}

struct Run {
  std::shared_ptr<nn::AttentionLayer> layer;
  Tensor query, key, value, output, weights;
};

// Builds the layer (random nonzero parameters from a fixed seed), moves it and the inputs
// to `device` in `dtype`, runs forward and backward of sum(out * w1) + sum(weights * w2).
Run run(const Case& c, const Inputs& in, bool per_head, hg::DType dtype, hg::Device device) {
  auto fused = hg::testing::random_fused(c.options, 1410);
  fused->to(dtype);
  Run r;
  r.layer = hg::testing::layout_of(fused, per_head);
  r.layer->to(device);
  auto leaf = [&](const Tensor& t) {
    return t.defined() ? copy_to(t.to(dtype), device, true) : Tensor();
  };
  auto mask = [&](const Tensor& t) {
    if (!t.defined()) return Tensor();
    return copy_to(is_floating(t.dtype()) ? t.to(dtype) : t, device);
  };
  r.query = leaf(in.query);
  r.key = c.self_attention ? r.query : leaf(in.key);
  r.value = c.self_attention ? r.query : leaf(in.value);
  nn::MultiheadAttentionArgs args;
  args.with_key_padding_mask(mask(in.key_padding_mask))
      .with_attn_mask(mask(in.attn_mask))
      .with_is_causal(c.is_causal)
      .with_average_attn_weights(c.average);
  const nn::AttentionOutput out = (*r.layer)(r.query, r.key, r.value, args);
  r.output = out.output;
  r.weights = out.weights;
  hg::Generator gen(1420);
  const Tensor w1 = copy_to(hg::randn(out.output.shape(), dtype, &gen), device);
  const Tensor w2 = copy_to(hg::randn(out.weights.shape(), dtype, &gen), device);
  hg::add(hg::sum(hg::mul(out.output, w1)), hg::sum(hg::mul(out.weights, w2))).backward();
  return r;
}

void check_attention(const Case& c) {
  const Inputs in = make_inputs(c);
  for (bool per_head : {false, true}) {
    for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
      // One string: doctest's INFO keeps references to its operands until a check fails.
      const std::string label = std::string(c.name) +
                                (per_head ? ", per-head layout" : ", fused layout") + " [" +
                                hg::to_string(dtype) + "]";
      INFO(label);
      const Tol tol{dtype == hg::kFloat64 ? 1e-11 : 1e-4, kNormwise};
      const Run cpu = run(c, in, per_head, dtype, hg::Device::cpu());
      const Run dev = run(c, in, per_head, dtype, gpu());
      CHECK(dev.output.device() == gpu());
      CHECK(dev.weights.device() == gpu());
      check_close(dev.output, cpu.output, tol, "output");
      check_close(dev.weights, cpu.weights, tol, "attention weights");
      check_close(dev.query.grad(), cpu.query.grad(), tol, "gradient of query");
      if (!c.self_attention) {
        check_close(dev.key.grad(), cpu.key.grad(), tol, "gradient of key");
        check_close(dev.value.grad(), cpu.value.grad(), tol, "gradient of value");
      }
      check_module_parity(*dev.layer, *cpu.layer, tol, /*grads=*/true, "parameters");
    }
  }
}

nn::MultiheadAttentionOptions opts(std::int64_t e, std::int64_t h) { return {e, h}; }

}  // namespace

TEST_CASE("MultiheadAttention self-attention on the GPU matches the CPU, weights averaged") {
  check_attention({.name = "self-attention", .options = opts(16, 4), .self_attention = true});
}

TEST_CASE(
    "MultiheadAttention on the GPU matches the CPU with is_causal and key padding, per-head "
    "weights") {
  check_attention({.name = "causal with key padding",
                   .options = opts(16, 4),
                   .L = 6,
                   .S = 6,
                   .self_attention = true,
                   .is_causal = true,
                   .key_padding = true,
                   .average = false});
}

TEST_CASE(
    "MultiheadAttention cross-attention on the GPU matches the CPU with a bool causal "
    "mask, key padding, kdim and vdim") {
  check_attention({.name = "cross-attention, causal_mask(L, S), kdim 12, vdim 10",
                   .options = opts(16, 2).with_kdim(12).with_vdim(10),
                   .L = 5,
                   .S = 7,
                   .bool_causal_mask = true,
                   .key_padding = true});
  check_attention({.name = "cross-attention, causal_mask(L, S), per head",
                   .options = opts(12, 3),
                   .L = 7,
                   .S = 4,
                   .bool_causal_mask = true,
                   .key_padding = true,
                   .average = false});
}

TEST_CASE(
    "MultiheadAttention on the GPU matches the CPU with float masks, batch_first, "
    "add_bias_kv and add_zero_attn") {
  check_attention({.name = "float attn_mask, batch_first",
                   .options = opts(16, 4).with_batch_first(true),
                   .L = 4,
                   .S = 6,
                   .float_attn_mask = true,
                   .key_padding = true,
                   .average = false});
  check_attention({.name = "per-batch-and-head float attn_mask, add_bias_kv, add_zero_attn",
                   .options = opts(8, 2).with_add_bias_kv(true).with_add_zero_attn(true),
                   .L = 3,
                   .S = 5,
                   .N = 2,
                   .per_batch_float_mask = true});
  check_attention({.name = "no bias", .options = opts(8, 2).with_bias(false), .L = 4, .S = 4});
}

TEST_CASE("MultiheadAttention on unbatched inputs on the GPU matches the CPU") {
  check_attention({.name = "unbatched with key padding",
                   .options = opts(8, 2),
                   .L = 4,
                   .S = 6,
                   .N = 0,
                   .key_padding = true});
  check_attention({.name = "unbatched causal self-attention",
                   .options = opts(8, 4),
                   .L = 5,
                   .S = 5,
                   .N = 0,
                   .self_attention = true,
                   .is_causal = true});
}

TEST_CASE("MultiheadAttention of transformer size on the GPU matches the CPU") {
  // d_model 128, 8 heads, 64 positions, batch 4: tiles and long softmax rows.
  check_attention({.name = "E 128, H 8, L = S = 64, N 4, causal with key padding",
                   .options = opts(128, 8),
                   .L = 64,
                   .S = 64,
                   .N = 4,
                   .self_attention = true,
                   .is_causal = true,
                   .key_padding = true});
}
