// Embedding, LayerNorm, Dropout, Sequential, MLP, masked_mean and embed_with_positions,
// against hand-computed values and independent compositions.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "headgrad/nn/layers.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::check_values;
using hg::testing::max_abs_diff;

TEST_CASE("Embedding looks up rows of its N(0, 1) table and zeroes the padding row") {
  hg::Generator gen(1);
  nn::Embedding emb(1000, 8, -1, &gen);  // padding_idx -1 is row 999, as in torch
  REQUIRE(emb.padding_idx().has_value());
  CHECK(*emb.padding_idx() == 999);
  CHECK(emb.state_dict().keys() == std::vector<std::string>{"weight"});
  const auto w = emb.weight.to_vector<double>();
  double mean = 0, sq = 0;
  for (std::size_t i = 0; i < 999 * 8; ++i) mean += w[i], sq += w[i] * w[i];
  mean /= 999 * 8;
  const double stddev = std::sqrt(sq / (999 * 8) - mean * mean);
  CHECK(std::abs(mean) < 0.05);
  CHECK(std::abs(stddev - 1.0) < 0.05);
  for (std::size_t i = 999 * 8; i < w.size(); ++i) CHECK(w[i] == 0.0);

  Tensor ids = hg::from_vector<std::int64_t>({3, 999, 3, 0}, {2, 2});
  Tensor out = emb(ids);
  REQUIRE(out.shape() == Shape{2, 2, 8});
  for (std::int64_t j = 0; j < 8; ++j) {
    CHECK(out.at({0, 0, j}) == emb.weight.at({3, j}));
    CHECK(out.at({1, 0, j}) == emb.weight.at({3, j}));
    CHECK(out.at({1, 1, j}) == emb.weight.at({0, j}));
    CHECK(out.at({0, 1, j}) == 0.0);
  }
  // Row 3 is looked up twice: its gradient is the sum; the padding row gets none.
  hg::mul(out, 2.0).sum().backward();
  Tensor g = emb.weight.grad();
  CHECK(g.at({3, 5}) == 4.0);
  CHECK(g.at({0, 5}) == 2.0);
  CHECK(g.at({999, 5}) == 0.0);
  CHECK(g.at({1, 5}) == 0.0);
}

TEST_CASE("LayerNorm normalizes the last dim and starts as weight one, bias zero") {
  nn::LayerNorm norm(4, 1e-5);
  CHECK(norm.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  check_values(norm.weight, {4}, {1, 1, 1, 1}, 0);
  check_values(norm.bias, {4}, {0, 0, 0, 0}, 0);
  // x = 1, 2, 3, 4: mean 2.5, biased variance 1.25.
  Tensor x = hg::from_vector<double>({1, 2, 3, 4}, {1, 4});
  norm.to(hg::kFloat64);
  const double s = std::sqrt(1.25 + 1e-5);
  check_values(norm(x), {1, 4}, {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
  {
    hg::NoGradGuard no_grad;
    norm.weight.copy_(hg::from_vector<double>({1, 2, 3, 4}, {4}));
    norm.bias.fill_(0.5);
  }
  check_values(norm(x), {1, 4}, {0.5 - 1.5 / s, 0.5 - 1.0 / s, 0.5 + 1.5 / s, 0.5 + 6.0 / s});

  nn::LayerNorm no_bias(4, 1e-5, true, false);
  CHECK(no_bias.state_dict().keys() == std::vector<std::string>{"weight"});
  nn::LayerNorm plain(4, 1e-5, false);
  CHECK(plain.state_dict().empty());
  plain.to(hg::kFloat64);
  check_values(plain(x), {1, 4}, {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
}

TEST_CASE("LayerNorm's gradient passes gradcheck") {
  nn::LayerNorm norm(5);
  norm.to(hg::kFloat64);
  check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor w = norm.weight, b = norm.bias;
        norm.weight = in[1];
        norm.bias = in[2];
        Tensor y = norm(in[0]);
        norm.weight = w;
        norm.bias = b;
        return y;
      },
      {hg::testing::param({3, 5}, 1), hg::testing::param({5}, 2), hg::testing::param({5}, 3)});
}

TEST_CASE("Dropout drops in training mode only, scales the rest and follows its generator") {
  hg::Generator g1(5), g2(5);
  nn::Dropout drop(0.5, &g1);
  Tensor x = hg::ones({4000});
  Tensor y = drop(x);
  const auto v = y.to_vector<double>();
  std::size_t zeros = 0, other = 0;
  for (double e : v) {
    zeros += e == 0.0;
    other += e != 0.0 && e != 2.0;
  }
  CHECK(other == 0);
  CHECK(zeros > 1800);
  CHECK(zeros < 2200);
  drop.set_generator(&g2);
  CHECK(max_abs_diff(drop(x), y) == 0.0);  // same seed, same mask
  drop.eval();
  CHECK(max_abs_diff(drop(x), x) == 0.0);
  CHECK(HG_ERROR_MESSAGE(nn::Dropout(1.5)).find("Dropout: probability p") != std::string::npos);
}

TEST_CASE("Sequential applies its modules in order under the names 0, 1, 2") {
  hg::Generator gen(2);
  nn::Sequential seq;
  auto lin1 = std::make_shared<nn::Linear>(3, 5, true, &gen);
  auto lin2 = std::make_shared<nn::Linear>(5, 2, false, &gen);
  seq.push_back(lin1).push_back(std::make_shared<nn::ReLU>()).push_back(lin2);
  CHECK(seq.size() == 3);
  CHECK(seq.state_dict().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
  Tensor x = hg::randn({4, 3}, {}, &gen);
  // relu(x W1^T + b1) W2^T with matmul and maximum.
  Tensor h = hg::maximum(hg::matmul(x, lin1->weight.t()) + lin1->bias, hg::zeros({1}));
  Tensor want = hg::matmul(h, lin2->weight.t());
  CHECK(max_abs_diff(seq(x), want) <= 1e-6);
}

TEST_CASE("MLP is fc2 of dropout of the activation of fc1") {
  hg::Generator gen(3);
  nn::MLP mlp(nn::MLPOptions(4, 6, 3).with_activation(nn::Activation::relu), &gen);
  CHECK(mlp.state_dict().keys() ==
        std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(mlp.fc1->weight.shape() == Shape{6, 4});
  CHECK(mlp.fc2->weight.shape() == Shape{3, 6});
  Tensor x = hg::randn({2, 5, 4}, {}, &gen);
  Tensor h = hg::maximum(hg::matmul(x, mlp.fc1->weight.t()) + mlp.fc1->bias, hg::zeros({1}));
  Tensor want = hg::matmul(h, mlp.fc2->weight.t()) + mlp.fc2->bias;
  CHECK(max_abs_diff(mlp(x), want) <= 1e-6);

  nn::MLP same_width(nn::MLPOptions(4, 8), &gen);  // out defaults to in, gelu
  CHECK(same_width(x).shape() == Shape{2, 5, 4});
}

TEST_CASE("masked_mean averages the positions that are not padding") {
  // x (2, 3, 2); the second sequence has its last position padded.
  Tensor x = hg::from_vector<double>({1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 500, 600}, {2, 3, 2});
  Tensor pad = hg::from_vector<bool>({false, false, false, false, false, true}, {2, 3});
  check_values(nn::masked_mean(x, pad), {2, 2}, {3, 4, 20, 30});
  check_values(nn::masked_mean(x, Tensor()), {2, 2}, {3, 4, 180, 220});
  Tensor all_pad = hg::from_vector<bool>({true, true, true, false, true, true}, {2, 3});
  check_values(nn::masked_mean(x, all_pad), {2, 2}, {0, 0, 10, 20});
  CHECK(HG_ERROR_MESSAGE(nn::masked_mean(x, hg::zeros({2, 4}, hg::kBool)))
            .find("masked_mean: key_padding_mask") != std::string::npos);
}

TEST_CASE("embed_with_positions adds the position rows and refuses sequences past max_len") {
  hg::Generator gen(4);
  nn::Embedding tokens(10, 3, std::nullopt, &gen);
  nn::Embedding positions(4, 3, std::nullopt, &gen);
  Tensor ids = hg::from_vector<std::int64_t>({7, 1, 2}, {1, 3});
  Tensor e = nn::embed_with_positions(tokens, positions, ids, "Model");
  REQUIRE(e.shape() == Shape{1, 3, 3});
  for (std::int64_t j = 0; j < 3; ++j)
    CHECK(e.at({0, 2, j}) ==
          doctest::Approx(tokens.weight.at({2, j}) + positions.weight.at({2, j})));
  Tensor too_long = hg::zeros({1, 5}, hg::kInt64);
  CHECK(HG_ERROR_MESSAGE(nn::embed_with_positions(tokens, positions, too_long, "Model"))
            .find("Model: tokens") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(nn::embed_with_positions(tokens, positions, hg::zeros({1, 2}), "Model"))
            .find("must be int64") != std::string::npos);
}
