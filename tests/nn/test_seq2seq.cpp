// nn::EncoderDecoder: shapes, torch.nn.Transformer-style names, encode/decode against
// forward, target causality, source key padding.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "headgrad/nn/seq2seq.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;

namespace {

nn::EncoderDecoderOptions tiny(bool per_head = false) {
  nn::EncoderDecoderOptions o;
  o.src_vocab_size = 10;
  o.tgt_vocab_size = 6;
  o.max_src_len = 7;
  o.max_tgt_len = 5;
  o.d_model = 8;
  o.nhead = 2;
  o.dim_feedforward = 16;
  o.per_head = per_head;
  return o;
}

Tensor ids(const std::vector<std::int64_t>& v, std::int64_t batch) {
  return hg::from_vector<std::int64_t>(v, {batch, static_cast<std::int64_t>(v.size()) / batch});
}

bool has(const std::vector<std::string>& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

}  // namespace

TEST_CASE("EncoderDecoder maps source and target tokens to target logits (B, T, V)") {
  hg::Generator gen(1);
  nn::EncoderDecoder model(tiny(), &gen);
  Tensor src = ids({1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3}, 2);  // (2, 6)
  Tensor tgt = ids({0, 1, 2, 3, 4, 5}, 2);                    // (2, 3)
  Tensor logits = model(src, tgt);
  CHECK(logits.shape() == Shape{2, 3, 6});
  Tensor memory = model.encode(src);
  CHECK(memory.shape() == Shape{2, 6, 8});
  CHECK(max_abs_diff(model.decode(tgt, memory), logits) == 0.0);

  const auto keys = model.state_dict().keys();
  for (const char* k :
       {"src_token_embedding.weight", "src_position_embedding.weight", "tgt_token_embedding.weight",
        "tgt_position_embedding.weight", "encoder.layers.1.self_attn.in_proj_weight",
        "encoder.norm.weight", "decoder.layers.0.multihead_attn.out_proj.weight",
        "decoder.layers.1.norm3.bias", "decoder.norm.bias", "lm_head.weight"}) {
    CAPTURE(k);
    CHECK(has(keys, k));
  }
  CHECK(model.parameter("src_token_embedding.weight").shape() == Shape{10, 8});
  CHECK(model.parameter("tgt_position_embedding.weight").shape() == Shape{5, 8});
  CHECK(model.parameter("lm_head.weight").shape() == Shape{6, 8});
  CHECK(!has(keys, "lm_head.bias"));
}

TEST_CASE("EncoderDecoder target logits do not depend on later target tokens") {
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    hg::Generator gen(2);
    nn::EncoderDecoder model(tiny(per_head), &gen);
    Tensor src = ids({1, 2, 3, 4, 5, 6}, 1);
    Tensor a = model(src, ids({1, 2, 3, 4, 5}, 1));
    Tensor b = model(src, ids({1, 2, 0, 0, 0}, 1));
    CHECK(max_abs_diff(hg::narrow(a, 1, 0, 2), hg::narrow(b, 1, 0, 2)) <= 1e-6);
    CHECK(max_abs_diff(hg::narrow(a, 1, 2, 1), hg::narrow(b, 1, 2, 1)) > 1e-3);
  }
}

TEST_CASE("EncoderDecoder ignores padded source positions") {
  hg::Generator gen(3);
  nn::EncoderDecoder model(tiny(), &gen);
  Tensor pad = hg::from_vector<bool>({false, false, false, false, true, true}, {1, 6});
  Tensor tgt = ids({1, 2, 3}, 1);
  Tensor a = model(ids({1, 2, 3, 4, 0, 0}, 1), tgt, pad);
  Tensor b = model(ids({1, 2, 3, 4, 8, 9}, 1), tgt, pad);
  CHECK(max_abs_diff(a, b) <= 1e-6);
  // The same source without padding gives the same logits.
  CHECK(max_abs_diff(a, model(ids({1, 2, 3, 4}, 1), tgt)) <= 1e-5);
  CHECK(max_abs_diff(model(ids({1, 2, 3, 4, 0, 0}, 1), tgt),
                     model(ids({1, 2, 3, 4, 8, 9}, 1), tgt)) > 1e-4);
}

TEST_CASE("EncoderDecoder defaults the target vocabulary and length to the source's") {
  nn::EncoderDecoderOptions o = tiny();
  o.tgt_vocab_size = 0;
  o.max_tgt_len = 0;
  o.norm_first = false;
  nn::EncoderDecoder model(o);
  CHECK(model.parameter("tgt_token_embedding.weight").shape() == Shape{10, 8});
  CHECK(model.parameter("tgt_position_embedding.weight").shape() == Shape{7, 8});
  CHECK(model.encoder->norm == nullptr);  // post-norm layers end in a norm already
  CHECK(model(ids({1, 2, 3}, 1), ids({4, 5}, 1)).shape() == Shape{1, 2, 10});
}
