// inspect::heads against independent computations: attention layer names; per-head
// gradient norms from the row blocks of in_proj_weight's gradient and the column blocks of
// out_proj.weight's, in both layouts; head importance (Michel et al. 2019) against one
// example at a time with gates (H) requiring grad (and a central difference), on a
// sequence task and on a regression task with a target mask; heads that
// cannot affect the loss score exactly 0; ablation, pruning curves and head orders.
//
// Models: a float64 GPT (2 layers, 2 heads, d_model 8) on the copy task with lengths 1..3,
// so examples score different numbers of targets and the batches carry a padding mask.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;
using inspect::HeadId;

namespace {

struct Setup {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  train::ForwardFn forward;

  explicit Setup(bool per_head = false) {
    task = train::make_task("copy",
                            train::TaskOptions().with_seed(5).with_length(3).with_min_length(1));
    hg::Generator gen(17);
    model = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                     .max_len = task->max_len(),
                                                     .d_model = 8,
                                                     .nhead = 2,
                                                     .num_layers = 2,
                                                     .dim_feedforward = 16,
                                                     .per_head = per_head},
                                      &gen);
    model->to(hg::kFloat64);
    auto m = model;
    forward = [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); };
  }
  nn::AttentionLayer& layer(std::size_t i) const { return *(*model->layers)[i]->self_attn; }
  void backward_on(std::int64_t index, std::int64_t batch_size) const {
    const train::Batch b = task->batch(train::Split::train, index, batch_size);
    train::task_loss(forward(b), b, task->kind()).backward();
  }
};

train::Batch example(const train::Batch& b, std::int64_t i) {
  train::Batch one;
  one.tokens = hg::narrow(b.tokens, 0, i, 1);
  one.targets = hg::narrow(b.targets, 0, i, 1);
  if (b.key_padding_mask.defined()) one.key_padding_mask = hg::narrow(b.key_padding_mask, 0, i, 1);
  return one;
}

std::int64_t scored(const train::Batch& b) {
  std::int64_t count = 0;
  for (std::int64_t t : b.targets.to_vector<std::int64_t>()) count += t != train::kIgnoreIndex;
  return count;
}

// L2 norm of rows [r0, r0 + rows) x columns [c0, c0 + cols) of a 2-d tensor, by a loop.
double block_norm(const Tensor& g, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                  std::int64_t cols) {
  const auto v = g.to_vector<double>();
  const std::int64_t width = g.size(1);
  double acc = 0;
  for (std::int64_t r = r0; r < r0 + rows; ++r)
    for (std::int64_t c = c0; c < c0 + cols; ++c) {
      const double x = v[static_cast<std::size_t>(r * width + c)];
      acc += x * x;
    }
  return std::sqrt(acc);
}

void check_close(double actual, double expected, double rel) {
  INFO("actual " << actual << ", expected " << expected);
  CHECK(std::abs(actual - expected) <= rel * std::max(1e-3, std::abs(expected)));
}

// A model holding a GPT and an attention layer whose output never reaches the logits.
class WithProbe : public nn::Module {
 public:
  WithProbe(std::shared_ptr<nn::GPT> gpt) : Module("WithProbe") {
    this->gpt = register_module("gpt", std::move(gpt));
    probe =
        register_module("probe", std::make_shared<nn::MultiheadAttention>(
                                     nn::MultiheadAttentionOptions(8, 2).with_batch_first(true)));
    probe->to(hg::kFloat64);
  }
  std::shared_ptr<nn::GPT> gpt;
  std::shared_ptr<nn::MultiheadAttention> probe;
};

}  // namespace

TEST_CASE("attention_layers names every attention layer in model order") {
  Setup s;
  const auto layers = inspect::attention_layers(*s.model);
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].name == "layers.0.self_attn");
  CHECK(layers[1].name == "layers.1.self_attn");
  CHECK(layers[0].layer == &s.layer(0));
  CHECK(layers[1].layer == &s.layer(1));
  nn::MultiheadAttention bare(4, 2);
  const auto own = inspect::attention_layers(bare);
  REQUIRE(own.size() == 1);
  CHECK(own[0].name == "");
  CHECK(own[0].layer == &bare);
  nn::Linear linear(3, 2);
  CHECK(inspect::attention_layers(linear).empty());
}

TEST_CASE("head_grad_norms are the norms of each head's blocks of the projection gradients") {
  Setup fused, heads(true);
  const std::int64_t e = 8, d = 4;
  inspect::Capture capture(*fused.model, {"z"});
  {
    auto scope = capture.activate();
    fused.backward_on(0, 4);
  }
  heads.backward_on(0, 4);
  const auto norms = inspect::head_grad_norms(*fused.model, &capture);
  const auto head_norms = inspect::head_grad_norms(*heads.model);
  REQUIRE(norms.size() == 4);
  REQUIRE(head_norms.size() == 4);
  for (std::size_t i = 0; i < norms.size(); ++i) {
    const std::int64_t li = static_cast<std::int64_t>(i) / 2, h = static_cast<std::int64_t>(i) % 2;
    CAPTURE(i);
    CHECK(norms[i].layer == li);
    CHECK(norms[i].head == h);
    auto& layer = dynamic_cast<nn::MultiheadAttention&>(fused.layer(static_cast<std::size_t>(li)));
    const Tensor g = layer.in_proj_weight.grad();
    const Tensor go = layer.out_proj->weight.grad();
    check_close(norms[i].w_q, block_norm(g, h * d, d, 0, e), 1e-12);
    check_close(norms[i].w_k, block_norm(g, e + h * d, d, 0, e), 1e-12);
    check_close(norms[i].w_v, block_norm(g, 2 * e + h * d, d, 0, e), 1e-12);
    check_close(norms[i].w_o, block_norm(go, 0, e, h * d, d), 1e-12);
    CHECK(norms[i].w_q > 0);
    CHECK(norms[i].w_o > 0);
    // z: the (N, H, L, d) gradient's block of head h, by a loop.
    const Tensor dz = capture.grad("layers." + std::to_string(li) + ".self_attn.z");
    const auto dzv = dz.to_vector<double>();
    const std::int64_t per_head = dz.size(2) * dz.size(3);
    double acc = 0;
    for (std::int64_t nb = 0; nb < dz.size(0); ++nb)
      for (std::int64_t j = 0; j < per_head; ++j) {
        const double x = dzv[static_cast<std::size_t>((nb * 2 + h) * per_head + j)];
        acc += x * x;
      }
    check_close(norms[i].z, std::sqrt(acc), 1e-12);
    // The per-head layout of the same weights gives the same norms; no capture, no z.
    CHECK(head_norms[i].layer == li);
    CHECK(head_norms[i].head == h);
    check_close(head_norms[i].w_q, norms[i].w_q, 1e-9);
    check_close(head_norms[i].w_k, norms[i].w_k, 1e-9);
    check_close(head_norms[i].w_v, norms[i].w_v, 1e-9);
    check_close(head_norms[i].w_o, norms[i].w_o, 1e-9);
    CHECK(head_norms[i].z == -1.0);
  }
  // A capture without z leaves z at -1; without gradients every norm is 0.
  inspect::Capture pattern_only(*fused.model, {"pattern"});
  {
    auto scope = pattern_only.activate();
    fused.backward_on(1, 4);
  }
  for (const auto& n : inspect::head_grad_norms(*fused.model, &pattern_only)) CHECK(n.z == -1.0);
  fused.model->zero_grad();
  for (const auto& n : inspect::head_grad_norms(*fused.model)) {
    CHECK(n.w_q == 0.0);
    CHECK(n.w_k == 0.0);
    CHECK(n.w_v == 0.0);
    CHECK(n.w_o == 0.0);
  }
}

TEST_CASE("head_grad_norms read separate projections and a bare layer's z tap") {
  // kdim and vdim differ from E: q_proj_weight (E, E), k_proj_weight (E, 5), v_proj_weight
  // (E, 7); the per-head copy holds the same rows in heads.<h>.{q,k,v}_proj.weight.
  const std::int64_t e = 6, d = 2;
  auto fused = std::make_shared<nn::MultiheadAttention>(
      nn::MultiheadAttentionOptions(e, 3).with_kdim(5).with_vdim(7).with_batch_first(true));
  fused->to(hg::kFloat64);
  auto heads = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  const Tensor q = hg::testing::param({2, 3, e}, 30), k = hg::testing::param({2, 4, 5}, 31),
               v = hg::testing::param({2, 4, 7}, 32), r = hg::testing::param({2, 3, e}, 33);
  inspect::Capture capture(*fused, {"z"});
  {
    auto scope = capture.activate();
    hg::sum(hg::mul((*fused)(q, k, v).output, r)).backward();
  }
  hg::sum(hg::mul((*heads)(q, k, v).output, r)).backward();
  const auto a = inspect::head_grad_norms(*fused, &capture);
  const auto b = inspect::head_grad_norms(*heads);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  const auto dz = capture.grad("z").to_vector<double>();  // (2, 3, 3, 2)
  for (std::int64_t h = 0; h < 3; ++h) {
    CAPTURE(h);
    const auto& n = a[static_cast<std::size_t>(h)];
    check_close(n.w_q, block_norm(fused->q_proj_weight.grad(), h * d, d, 0, e), 1e-12);
    check_close(n.w_k, block_norm(fused->k_proj_weight.grad(), h * d, d, 0, 5), 1e-12);
    check_close(n.w_v, block_norm(fused->v_proj_weight.grad(), h * d, d, 0, 7), 1e-12);
    check_close(n.w_o, block_norm(fused->out_proj->weight.grad(), 0, e, h * d, d), 1e-12);
    double acc = 0;
    for (std::int64_t nb = 0; nb < 2; ++nb)
      for (std::int64_t j = 0; j < 6; ++j) {
        const double x = dz[static_cast<std::size_t>((nb * 3 + h) * 6 + j)];
        acc += x * x;
      }
    check_close(n.z, std::sqrt(acc), 1e-12);
    const auto& m = b[static_cast<std::size_t>(h)];
    check_close(m.w_q, n.w_q, 1e-9);
    check_close(m.w_k, n.w_k, 1e-9);
    check_close(m.w_v, n.w_v, 1e-9);
    check_close(m.w_o, n.w_o, 1e-9);
  }
}

TEST_CASE("head_grad_norms slice H * head_size rows when the head size is set apart from E") {
  // E = 6, 2 heads of d = 5: in_proj_weight (30, 6), out_proj.weight (6, 10).
  const std::int64_t e = 6, d = 5, rows = 10;
  nn::MultiheadAttention fused(
      nn::MultiheadAttentionOptions(e, 2).with_head_size(d).with_batch_first(true));
  fused.to(hg::kFloat64);
  auto heads = nn::HeadwiseMultiheadAttention::from_fused(fused);
  const Tensor x = hg::testing::param({2, 3, e}, 40), r = hg::testing::param({2, 3, e}, 41);
  hg::sum(hg::mul(fused(x, x, x).output, r)).backward();
  hg::sum(hg::mul((*heads)(x, x, x).output, r)).backward();
  const auto a = inspect::head_grad_norms(fused);
  const auto b = inspect::head_grad_norms(*heads);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  const Tensor g = fused.in_proj_weight.grad();
  REQUIRE(g.shape() == Shape{3 * rows, e});
  for (std::int64_t h = 0; h < 2; ++h) {
    CAPTURE(h);
    const auto& n = a[static_cast<std::size_t>(h)];
    check_close(n.w_q, block_norm(g, h * d, d, 0, e), 1e-12);
    check_close(n.w_k, block_norm(g, rows + h * d, d, 0, e), 1e-12);
    check_close(n.w_v, block_norm(g, 2 * rows + h * d, d, 0, e), 1e-12);
    check_close(n.w_o, block_norm(fused.out_proj->weight.grad(), 0, e, h * d, d), 1e-12);
    const auto& m = b[static_cast<std::size_t>(h)];
    check_close(m.w_q, n.w_q, 1e-9);
    check_close(m.w_k, n.w_k, 1e-9);
    check_close(m.w_v, n.w_v, 1e-9);
    check_close(m.w_o, n.w_o, 1e-9);
  }
}

TEST_CASE("head importance is the mean of |dL/dgate| over examples run one at a time") {
  Setup s;
  // Existing (H) gates are kept as the gates' values.
  const std::vector<double> layer1_gates = {0.5, 2.0};
  s.layer(1).set_head_gates(hg::from_vector(layer1_gates, {2}, hg::kFloat64));
  const std::int64_t batches = 2, batch_size = 3;
  const inspect::HeadImportance imp = inspect::head_importance(
      *s.model, s.forward, *s.task, train::Split::validation, batches, batch_size);

  std::vector<std::vector<double>> expected(2, std::vector<double>(2, 0.0));
  std::int64_t examples = 0;
  s.model->eval();
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    const train::Batch batch = s.task->batch(train::Split::validation, bi, batch_size);
    for (std::int64_t i = 0; i < batch_size; ++i) {
      const train::Batch one = example(batch, i);
      if (scored(one) == 0) continue;
      ++examples;
      std::vector<Tensor> gates;
      for (std::size_t li = 0; li < 2; ++li) {
        gates.push_back((li == 1 ? hg::from_vector(layer1_gates, {2}, hg::kFloat64)
                                 : hg::ones({2}, hg::kFloat64))
                            .requires_grad_(true));
        s.layer(li).set_head_gates(gates.back());
      }
      train::task_loss(s.forward(one), one, s.task->kind()).backward();
      for (std::size_t li = 0; li < 2; ++li) {
        const auto g = gates[li].grad().to_vector<double>();
        for (std::size_t h = 0; h < 2; ++h) expected[li][h] += std::abs(g[h]);
      }
      if (bi == 0 && i == 0) {
        // The gradient itself against a central difference in gate (layer 0, head 1).
        hg::NoGradGuard no_grad;
        auto loss_at = [&](double gate) {
          s.layer(0).set_head_gates(hg::tensor({1.0, gate}, hg::kFloat64));
          return train::task_loss(s.forward(one), one, s.task->kind()).item();
        };
        const double eps = 1e-6;
        const double numerical = (loss_at(1 + eps) - loss_at(1 - eps)) / (2 * eps);
        check_close(gates[0].grad().to_vector<double>()[1], numerical, 1e-6);
      }
    }
  }
  s.model->train();
  REQUIRE(examples > 0);
  CHECK(imp.examples == examples);
  CHECK(imp.layers == std::vector<std::string>{"layers.0.self_attn", "layers.1.self_attn"});
  REQUIRE(imp.raw.size() == 2);
  REQUIRE(imp.normalized.size() == 2);
  for (std::size_t li = 0; li < 2; ++li) {
    REQUIRE(imp.raw[li].size() == 2);
    double l2 = 0;
    for (std::size_t h = 0; h < 2; ++h) {
      CAPTURE(li);
      CAPTURE(h);
      const double mean = expected[li][h] / static_cast<double>(examples);
      CHECK(mean > 0);
      check_close(imp.raw[li][h], mean, 1e-9);
      l2 += imp.normalized[li][h] * imp.normalized[li][h];
      check_close(imp.normalized[li][h] * std::hypot(imp.raw[li][0], imp.raw[li][1]),
                  imp.raw[li][h], 1e-12);
    }
    CHECK(std::sqrt(l2) == doctest::Approx(1.0).epsilon(1e-12));
  }
}

namespace {

// A regression task with continuous inputs (B, 3, 2) and targets (B, 3, 2); example b of a
// batch scores positions t < b % 4 (so example 0 scores nothing and counts differ).
class ToyRegression : public train::Task {
 public:
  std::string name() const override { return "toy_regression"; }
  train::TaskKind kind() const override { return train::TaskKind::regression; }
  std::int64_t vocab_size() const override { return 2; }
  std::int64_t max_len() const override { return 3; }
  std::int64_t input_dim() const override { return 2; }
  train::Batch batch(train::Split split, std::int64_t index, std::int64_t b) const override {
    const auto seed = static_cast<std::uint64_t>(100 + 10 * index + (split == train::Split::train));
    train::Batch batch;
    batch.inputs = hg::testing::param({b, 3, 2}, seed).detach();
    batch.targets = hg::testing::param({b, 3, 2}, seed + 1).detach();
    std::vector<bool> mask;
    for (std::int64_t e = 0; e < b; ++e)
      for (std::int64_t t = 0; t < 3; ++t) mask.push_back(t < e % 4);
    batch.target_mask = hg::from_vector(mask, {b, 3}, hg::kBool);
    return batch;
  }
};

// inputs (N, T, 2) -> Linear -> self-attention (2 heads of 2) -> Linear -> (N, T, 2).
class ContinuousModel : public nn::Module {
 public:
  ContinuousModel() : Module("ContinuousModel") {
    hg::Generator gen(8);
    in = register_module("in", std::make_shared<nn::Linear>(2, 4, true, &gen));
    attn = register_module("attn",
                           std::make_shared<nn::MultiheadAttention>(
                               nn::MultiheadAttentionOptions(4, 2).with_batch_first(true), &gen));
    out = register_module("out", std::make_shared<nn::Linear>(4, 2, true, &gen));
    to(hg::kFloat64);
  }
  Tensor forward(const Tensor& x) const {
    const Tensor h = (*in)(x);
    return (*out)((*attn)(h, h, h).output);
  }
  std::shared_ptr<nn::Linear> in, out;
  std::shared_ptr<nn::MultiheadAttention> attn;
};

}  // namespace

TEST_CASE("head importance of a regression task weighs examples by their scored positions") {
  ToyRegression task;
  ContinuousModel model;
  const train::ForwardFn forward = [&model](const train::Batch& b) {
    return model.forward(b.inputs);
  };
  const std::int64_t batches = 2, batch_size = 5;
  const auto imp =
      inspect::head_importance(model, forward, task, train::Split::train, batches, batch_size);
  // One example at a time: its own loss (mean over its scored positions), gates (H).
  std::vector<double> expected(2, 0.0);
  std::int64_t examples = 0;
  model.eval();
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    const train::Batch batch = task.batch(train::Split::train, bi, batch_size);
    for (std::int64_t i = 0; i < batch_size; ++i) {
      if (i % 4 == 0) continue;  // nothing scored
      ++examples;
      train::Batch one;
      one.inputs = hg::narrow(batch.inputs, 0, i, 1);
      one.targets = hg::narrow(batch.targets, 0, i, 1);
      one.target_mask = hg::narrow(batch.target_mask, 0, i, 1);
      const Tensor gate = hg::ones({2}, hg::kFloat64).requires_grad_(true);
      model.attn->set_head_gates(gate);
      train::task_loss(forward(one), one, task.kind()).backward();
      const auto g = gate.grad().to_vector<double>();
      for (std::size_t h = 0; h < 2; ++h) expected[h] += std::abs(g[h]);
    }
  }
  model.attn->clear_head_gates();
  CHECK(imp.examples == examples);
  REQUIRE(imp.raw.size() == 1);
  for (std::size_t h = 0; h < 2; ++h) {
    CAPTURE(h);
    CHECK(expected[h] > 0);
    check_close(imp.raw[0][h], expected[h] / static_cast<double>(examples), 1e-9);
  }
}

TEST_CASE("fused and per-head models get the same head importance") {
  Setup fused, heads(true);
  const auto a =
      inspect::head_importance(*fused.model, fused.forward, *fused.task, train::Split::train, 1, 4);
  const auto b =
      inspect::head_importance(*heads.model, heads.forward, *heads.task, train::Split::train, 1, 4);
  CHECK(a.examples == b.examples);
  for (std::size_t li = 0; li < 2; ++li)
    for (std::size_t h = 0; h < 2; ++h) check_close(b.raw[li][h], a.raw[li][h], 1e-9);
}

TEST_CASE("a head that cannot affect the loss has importance exactly 0") {
  Setup s;
  {
    // Head 1 of layer 0 is cut from the output projection: no gradient reaches its gate.
    hg::NoGradGuard no_grad;
    auto& layer = dynamic_cast<nn::MultiheadAttention&>(s.layer(0));
    Tensor w = layer.out_proj->weight;
    auto values = w.to_vector<double>();
    for (std::int64_t r = 0; r < 8; ++r)
      for (std::int64_t c = 4; c < 8; ++c) values[static_cast<std::size_t>(r * 8 + c)] = 0.0;
    w.copy_(hg::from_vector(values, w.shape(), hg::kFloat64));
  }
  // A probe layer whose output is computed and thrown away.
  auto wrapped = std::make_shared<WithProbe>(s.model);
  auto gpt = s.model;
  auto probe = wrapped->probe;
  const train::ForwardFn forward = [gpt, probe](const train::Batch& b) {
    const Tensor x = hg::ones({b.size(), 2, 8}, hg::kFloat64);
    (*probe)(x, x, x);
    return gpt->forward(b.tokens, b.key_padding_mask);
  };
  const auto imp = inspect::head_importance(*wrapped, forward, *s.task, train::Split::train, 1, 4);
  CHECK(imp.layers ==
        std::vector<std::string>{"gpt.layers.0.self_attn", "gpt.layers.1.self_attn", "probe"});
  CHECK(imp.raw[0][1] == 0.0);
  CHECK(imp.raw[0][0] > 0.0);
  CHECK(imp.raw[1][0] > 0.0);
  CHECK(imp.raw[2] == std::vector<double>{0.0, 0.0});
  CHECK(imp.normalized[2] == std::vector<double>{0.0, 0.0});
  CHECK(imp.normalized[0][0] == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("head importance leaves gradients, gates and the training mode as they were") {
  Setup s;
  s.backward_on(3, 4);
  std::vector<Tensor> grads;
  for (const Tensor& p : s.model->parameters()) grads.push_back(p.grad().clone());
  const Tensor gates = hg::tensor({0.5, 1.5}, hg::kFloat64);
  s.layer(1).set_head_gates(gates);
  s.model->train();
  inspect::head_importance(*s.model, s.forward, *s.task, train::Split::train, 2, 3);
  CHECK(s.model->is_training());
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK(s.layer(1).head_gates().impl() == gates.impl());
  const auto params = s.model->parameters();
  REQUIRE(params.size() == grads.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    CAPTURE(i);
    CHECK(params[i].requires_grad());
    REQUIRE(params[i].grad().defined());
    CHECK(max_abs_diff(params[i].grad(), grads[i]) == 0.0);
  }
  // Per-example gates cannot serve as the gates' values: refused, nothing changed.
  s.layer(0).set_head_gates(hg::ones({3, 2}, hg::kFloat64));
  CHECK_THROWS_AS(inspect::head_importance(*s.model, s.forward, *s.task, train::Split::train, 1, 3),
                  hg::ShapeError);
  CHECK(s.layer(0).head_gates().shape() == Shape{3, 2});
  CHECK(s.layer(1).head_gates().impl() == gates.impl());
  CHECK_THROWS_AS(inspect::head_importance(*s.model, s.forward, *s.task, train::Split::train, 0, 3),
                  hg::ValueError);
}

TEST_CASE("importance_order sorts heads by normalized importance with ties in model order") {
  inspect::HeadImportance imp;
  imp.normalized = {{0.5, 0.1}, {0.3, 0.1, 0.9}};
  const std::vector<HeadId> expected = {{0, 1}, {1, 1}, {1, 0}, {0, 0}, {1, 2}};
  CHECK(inspect::importance_order(imp) == expected);

  Setup s;
  const auto computed =
      inspect::head_importance(*s.model, s.forward, *s.task, train::Split::train, 1, 4);
  const auto order = inspect::importance_order(computed);
  REQUIRE(order.size() == 4);
  for (std::size_t i = 1; i < order.size(); ++i)
    CHECK(computed.normalized[order[i - 1].layer][order[i - 1].head] <=
          computed.normalized[order[i].layer][order[i].head]);
}

TEST_CASE("random_order is a seeded permutation of every head") {
  Setup s;
  const std::vector<HeadId> all = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  auto sorted = [](std::vector<HeadId> v) {
    std::sort(v.begin(), v.end(), [](const HeadId& a, const HeadId& b) {
      return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
    });
    return v;
  };
  const auto first = inspect::random_order(*s.model, 1);
  CHECK(sorted(first) == all);
  CHECK(inspect::random_order(*s.model, 1) == first);
  bool differs = false;
  for (std::uint64_t seed = 2; seed < 8; ++seed) {
    const auto other = inspect::random_order(*s.model, seed);
    CHECK(sorted(other) == all);
    differs = differs || other != first;
  }
  CHECK(differs);
}

TEST_CASE("HeadAblation zeroes the chosen heads while alive and restores the gates after") {
  Setup s;
  const Tensor previous = hg::tensor({0.5, 0.25}, hg::kFloat64);
  s.layer(1).set_head_gates(previous);
  {
    inspect::HeadAblation ablation(*s.model, {{0, 1}, {1, 0}});
    CHECK(s.layer(0).head_gates().to_vector<double>() == std::vector<double>{1.0, 0.0});
    CHECK(s.layer(1).head_gates().to_vector<double>() == std::vector<double>{0.0, 1.0});
  }
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK(s.layer(1).head_gates().impl() == previous.impl());
  {
    inspect::HeadAblation none(*s.model, {});
    CHECK(s.layer(1).head_gates().to_vector<double>() == std::vector<double>{1.0, 1.0});
  }
  for (const HeadId& bad : std::vector<HeadId>{{0, 2}, {2, 0}, {-1, 0}, {0, -1}}) {
    CAPTURE(bad.layer);
    CAPTURE(bad.head);
    CHECK_THROWS_AS(inspect::HeadAblation(*s.model, {{0, 0}, bad}), hg::IndexError);
  }
  // The message counts what the model has where the id points.
  try {
    inspect::HeadAblation(*s.model, {{0, 7}});
    FAIL("no error");
  } catch (const hg::IndexError& e) {
    CHECK(std::string(e.what()).find("the layer has 2 heads, 0 to 1") != std::string::npos);
  }
  try {
    inspect::HeadAblation(*s.model, {{5, 0}});
    FAIL("no error");
  } catch (const hg::IndexError& e) {
    CHECK(std::string(e.what()).find("the model has 2 attention layers, 0 to 1") !=
          std::string::npos);
  }
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK(s.layer(1).head_gates().impl() == previous.impl());
}

TEST_CASE("pruning_curve evaluates with the first k heads of the order gated to 0") {
  Setup s;
  const std::int64_t batches = 2, batch_size = 4;
  const std::vector<HeadId> order = {{1, 0}, {0, 1}, {0, 0}, {1, 1}};
  const auto curve = inspect::pruning_curve(*s.model, s.forward, *s.task, train::Split::validation,
                                            batches, batch_size, order);
  REQUIRE(curve.size() == order.size() + 1);
  for (std::size_t k = 0; k < curve.size(); ++k) CHECK(curve[k].removed == static_cast<int>(k));
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK_FALSE(s.layer(1).head_gates().defined());

  auto evaluate_with = [&](const std::vector<double>& g0, const std::vector<double>& g1) {
    s.layer(0).set_head_gates(hg::from_vector(g0, {2}, hg::kFloat64));
    s.layer(1).set_head_gates(hg::from_vector(g1, {2}, hg::kFloat64));
    const auto m = train::evaluate(*s.model, s.forward, *s.task, train::Split::validation, batches,
                                   batch_size);
    s.layer(0).clear_head_gates();
    s.layer(1).clear_head_gates();
    return m;
  };
  const auto plain =
      train::evaluate(*s.model, s.forward, *s.task, train::Split::validation, batches, batch_size);
  CHECK(curve[0].loss == doctest::Approx(plain.loss).epsilon(1e-12));
  CHECK(curve[0].accuracy == plain.accuracy);
  const auto two = evaluate_with({1, 0}, {0, 1});  // (1, 0) and (0, 1) removed
  CHECK(curve[2].loss == doctest::Approx(two.loss).epsilon(1e-12));
  CHECK(curve[2].accuracy == two.accuracy);
  const auto all = evaluate_with({0, 0}, {0, 0});
  CHECK(curve[4].loss == doctest::Approx(all.loss).epsilon(1e-12));
  CHECK(curve[4].accuracy == all.accuracy);
  CHECK(curve[4].loss != doctest::Approx(plain.loss).epsilon(1e-6));
}
