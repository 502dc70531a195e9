// TransformerEncoderLayer / TransformerDecoderLayer against PyTorch 1.13: every case under
// tests/reference/transformer_cases (written by generate_transformer_cases.py: float64,
// pre- and post-norm, relu and gelu, masks and key padding, both layouts) is loaded by
// state_dict name and compared in output, input gradients and every parameter gradient
// (max|a-b| <= 1e-10 * max(1, max|expected|)); the per-head layers against the same cases
// after a weight conversion. Also: torch's parameter names and order, the per-head layout
// against the fused one, the stacks against their layers applied by hand, dropout and
// errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/transformer.hpp"
#include "helpers.hpp"

namespace fs = std::filesystem;
namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;

namespace {

const fs::path kCasesDir =
    fs::path(__FILE__).parent_path().parent_path() / "reference" / "transformer_cases";

template <typename T>
Tensor from_npy(xt::detail::npy_file& npy) {
  const xt::xarray<T> values = npy.cast<T>(false);
  Tensor t = hg::empty(Shape(npy.m_shape.begin(), npy.m_shape.end()),
                       std::is_same_v<T, bool> ? hg::kBool : hg::kFloat64);
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

// A float64 ('<f8') or bool ('|b1') .npy file.
Tensor read_npy(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << file.string());
  xt::detail::npy_file npy = xt::detail::load_npy_file(in);
  if (npy.m_typestring == "<f8") return from_npy<double>(npy);
  REQUIRE_MESSAGE(npy.m_typestring == "|b1", file.string() << ": dtype " << npy.m_typestring);
  return from_npy<bool>(npy);
}

Tensor read_optional(const fs::path& dir, const std::string& name) {
  const fs::path file = dir / (name + ".npy");
  return fs::exists(file) ? read_npy(file) : Tensor();
}

double scaled_error(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.shape() == expected.shape());
  double scale = 1.0;
  for (double v : expected.to_vector<double>()) scale = std::max(scale, std::abs(v));
  return max_abs_diff(actual, expected) / scale;
}

nn::TransformerLayerOptions case_options(const nlohmann::json& c) {
  return nn::TransformerLayerOptions(c.at("d_model"), c.at("nhead"))
      .with_dim_feedforward(c.at("dim_feedforward"))
      .with_dropout(0.0)
      .with_activation(c.at("activation") == "gelu" ? nn::Activation::gelu : nn::Activation::relu)
      .with_layer_norm_eps(c.at("layer_norm_eps"))
      .with_batch_first(c.at("batch_first"))
      .with_norm_first(c.at("norm_first"));
}

// The state dict of `fused_layer` with each attention layer's entries in the per-head
// layout (HeadwiseMultiheadAttention::from_fused).
nn::StateDict to_per_head_state(const nn::Module& fused_layer,
                                const std::vector<std::string>& attention_names) {
  nn::StateDict out;
  for (const auto& [name, t] : fused_layer.state_dict()) {
    const auto dot = name.find('.');
    if (std::find(attention_names.begin(), attention_names.end(), name.substr(0, dot)) ==
        attention_names.end())
      out.insert(name, t);
  }
  for (const auto& [child_name, child] : fused_layer.named_children()) {
    if (std::find(attention_names.begin(), attention_names.end(), child_name) ==
        attention_names.end())
      continue;
    auto fused = std::dynamic_pointer_cast<nn::MultiheadAttention>(child);
    REQUIRE(fused);
    for (const auto& [name, t] : nn::HeadwiseMultiheadAttention::from_fused(*fused)->state_dict())
      out.insert(child_name + "." + name, t);
  }
  return out;
}

// The gradient of a fused attention parameter assembled from the per-head gradients:
// in_proj_weight = rows of W_q (heads in order), then W_k, then W_v; the same for the bias.
Tensor fused_grad_from_heads(const nn::HeadwiseMultiheadAttention& layer, const std::string& name) {
  if (name == "out_proj.weight") return layer.out_proj->weight.grad();
  if (name == "out_proj.bias") return layer.out_proj->bias.grad();
  std::vector<Tensor> parts;
  for (const char* proj : {"q_proj", "k_proj", "v_proj"})
    for (const auto& head : *layer.heads) {
      const auto& lin = std::string(proj) == "q_proj"   ? head->q_proj
                        : std::string(proj) == "k_proj" ? head->k_proj
                                                        : head->v_proj;
      parts.push_back(name == "in_proj_weight" ? lin->weight.grad() : lin->bias.grad());
    }
  return hg::concat(parts, 0);
}

struct CaseRun {
  Tensor output;
  std::vector<std::pair<std::string, Tensor>> input_grads;
};

// Runs the layer on a case's inputs and masks, backward of sum(output * grad_output).
CaseRun run_case(const fs::path& dir, const nlohmann::json& config, const nn::Module& layer) {
  const bool encoder = config.at("layer") == "encoder";
  CaseRun run;
  Tensor grad_output = read_npy(dir / "grad_output.npy");
  if (encoder) {
    Tensor src = read_npy(dir / "src.npy").requires_grad_(true);
    const auto& l = dynamic_cast<const nn::TransformerEncoderLayer&>(layer);
    run.output = l(src, read_optional(dir, "src_mask"), read_optional(dir, "src_key_padding_mask"),
                   config.at("is_causal"));
    run.output.backward(grad_output);
    run.input_grads = {{"src", src.grad()}};
  } else {
    Tensor tgt = read_npy(dir / "tgt.npy").requires_grad_(true);
    Tensor memory = read_npy(dir / "memory.npy").requires_grad_(true);
    const auto& l = dynamic_cast<const nn::TransformerDecoderLayer&>(layer);
    run.output = l(tgt, memory, read_optional(dir, "tgt_mask"), read_optional(dir, "memory_mask"),
                   read_optional(dir, "tgt_key_padding_mask"),
                   read_optional(dir, "memory_key_padding_mask"), config.at("tgt_is_causal"));
    run.output.backward(grad_output);
    run.input_grads = {{"tgt", tgt.grad()}, {"memory", memory.grad()}};
  }
  return run;
}

std::shared_ptr<nn::Module> make_layer(const nlohmann::json& config, bool per_head) {
  const auto options = case_options(config).with_per_head(per_head);
  hg::Generator gen(7);
  std::shared_ptr<nn::Module> layer;
  if (config.at("layer") == "encoder")
    layer = std::make_shared<nn::TransformerEncoderLayer>(options, &gen);
  else
    layer = std::make_shared<nn::TransformerDecoderLayer>(options, &gen);
  layer->to(hg::kFloat64);
  return layer;
}

std::vector<fs::path> case_dirs() {
  std::vector<fs::path> dirs;
  if (fs::is_directory(kCasesDir))
    for (const auto& e : fs::directory_iterator(kCasesDir))
      if (fs::exists(e.path() / "config.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

nlohmann::json read_config(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  return nlohmann::json::parse(in);
}

const std::set<std::string> kInputFiles = {"src",
                                           "tgt",
                                           "memory",
                                           "grad_output",
                                           "src_mask",
                                           "src_key_padding_mask",
                                           "tgt_mask",
                                           "memory_mask",
                                           "tgt_key_padding_mask",
                                           "memory_key_padding_mask"};

}  // namespace

TEST_CASE("transformer layers match PyTorch 1.13 in outputs and every gradient") {
  const auto dirs = case_dirs();
  INFO("cases directory: " << kCasesDir.string());
  REQUIRE(dirs.size() == 8);  // an empty or truncated directory must not pass
  double worst = 0;
  for (const fs::path& dir : dirs) {
    CAPTURE(dir.filename().string());
    const nlohmann::json config = read_config(dir);
    auto layer = make_layer(config, false);

    // Torch's state_dict names are exactly the parameter files of the case.
    std::set<std::string> torch_names;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".npy" && !kInputFiles.count(e.path().stem().string()))
        torch_names.insert(e.path().stem().string());
    const auto keys = layer->state_dict().keys();
    CHECK(std::set<std::string>(keys.begin(), keys.end()) == torch_names);

    nn::StateDict state;
    for (const std::string& k : keys) state.insert(k, read_npy(dir / (k + ".npy")));
    layer->load_state_dict(state);

    const CaseRun run = run_case(dir, config, *layer);
    const fs::path expected = dir / "expected";
    auto check = [&](const std::string& name, const Tensor& actual) {
      CAPTURE(name);
      REQUIRE(actual.defined());
      const double e = scaled_error(actual, read_npy(expected / (name + ".npy")));
      worst = std::max(worst, e);
      CHECK(e <= 1e-10);
    };
    check("output", run.output);
    for (const auto& [name, g] : run.input_grads) check("grad_" + name, g);
    for (const auto& [name, p] : layer->named_parameters()) check("grad_" + name, p.grad());
  }
  MESSAGE("worst error / max(1, max|expected|): " << worst);
}

TEST_CASE("per-head transformer layers match PyTorch 1.13 after converting the weights") {
  const auto dirs = case_dirs();
  REQUIRE(!dirs.empty());
  for (const fs::path& dir : dirs) {
    CAPTURE(dir.filename().string());
    const nlohmann::json config = read_config(dir);
    const bool encoder = config.at("layer") == "encoder";
    const std::vector<std::string> attention_names =
        encoder ? std::vector<std::string>{"self_attn"}
                : std::vector<std::string>{"self_attn", "multihead_attn"};
    auto fused = make_layer(config, false);
    nn::StateDict state;
    for (const std::string& k : fused->state_dict().keys())
      state.insert(k, read_npy(dir / (k + ".npy")));
    fused->load_state_dict(state);
    auto per_head = make_layer(config, true);
    per_head->load_state_dict(to_per_head_state(*fused, attention_names));

    const CaseRun run = run_case(dir, config, *per_head);
    const fs::path expected = dir / "expected";
    CHECK(scaled_error(run.output, read_npy(expected / "output.npy")) <= 1e-10);
    for (const auto& [name, g] : run.input_grads)
      CHECK(scaled_error(g, read_npy(expected / ("grad_" + name + ".npy"))) <= 1e-10);
    for (const auto& [name, child] : per_head->named_children()) {
      if (std::find(attention_names.begin(), attention_names.end(), name) !=
          attention_names.end()) {
        const auto& heads = dynamic_cast<const nn::HeadwiseMultiheadAttention&>(*child);
        for (const char* p :
             {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}) {
          CAPTURE(name + "." + p);
          const Tensor want = read_npy(expected / ("grad_" + name + "." + p + ".npy"));
          CHECK(scaled_error(fused_grad_from_heads(heads, p), want) <= 1e-10);
        }
      } else {
        for (const auto& [pname, t] : child->named_parameters()) {
          CAPTURE(name + "." + pname);
          const Tensor want = read_npy(expected / ("grad_" + name + "." + pname + ".npy"));
          CHECK(scaled_error(t.grad(), want) <= 1e-10);
        }
      }
    }
  }
}

TEST_CASE("encoder and decoder layers use PyTorch's parameter names in PyTorch's order") {
  const auto options = nn::TransformerLayerOptions(8, 2).with_dim_feedforward(16);
  nn::TransformerEncoderLayer enc(options);
  const std::vector<std::string> attn = {"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                         "out_proj.bias"};
  std::vector<std::string> want;
  for (const auto& a : attn) want.push_back("self_attn." + a);
  for (const char* n : {"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"})
    want.push_back(n);
  CHECK(enc.state_dict().keys() == want);
  CHECK(enc.parameter("linear1.weight").shape() == Shape{16, 8});
  CHECK(enc.parameter("linear2.weight").shape() == Shape{8, 16});

  nn::TransformerDecoderLayer dec(options);
  want.clear();
  for (const char* m : {"self_attn.", "multihead_attn."})
    for (const auto& a : attn) want.push_back(m + a);
  for (const char* n :
       {"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
        "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"})
    want.push_back(n);
  CHECK(dec.state_dict().keys() == want);

  nn::TransformerEncoderLayer no_bias(nn::TransformerLayerOptions(8, 2).with_bias(false));
  CHECK(no_bias.state_dict().keys() == std::vector<std::string>{"self_attn.in_proj_weight",
                                                                "self_attn.out_proj.weight",
                                                                "linear1.weight", "linear2.weight",
                                                                "norm1.weight", "norm2.weight"});

  nn::TransformerEncoderLayer heads(nn::TransformerLayerOptions(8, 2).with_per_head(true));
  CHECK(heads.parameter("self_attn.heads.1.q_proj.weight").shape() == Shape{4, 8});
  CHECK(std::dynamic_pointer_cast<nn::HeadwiseMultiheadAttention>(heads.self_attn) != nullptr);
}

TEST_CASE("a per-head layer built from the same generator equals the fused layer") {
  for (bool norm_first : {false, true}) {
    CAPTURE(norm_first);
    const auto options = nn::TransformerLayerOptions(8, 2)
                             .with_dim_feedforward(12)
                             .with_dropout(0.0)
                             .with_batch_first(true)
                             .with_norm_first(norm_first);
    hg::Generator g1(3), g2(3);
    nn::TransformerDecoderLayer fused(options, &g1);
    nn::TransformerDecoderLayer heads(nn::TransformerLayerOptions(options).with_per_head(true),
                                      &g2);
    hg::Generator data(11);
    Tensor tgt = hg::randn({2, 4, 8}, {}, &data);
    Tensor memory = hg::randn({2, 5, 8}, {}, &data);
    Tensor a = fused(tgt, memory, {}, {}, {}, {}, true);
    Tensor b = heads(tgt, memory, {}, {}, {}, {}, true);
    CHECK(max_abs_diff(a, b) <= 1e-5);
  }
}

TEST_CASE("transformer layers keep the layout and shape of their input") {
  hg::Generator gen(5);
  Tensor seq_first = hg::randn({6, 3, 8}, {}, &gen);
  Tensor unbatched = hg::randn({6, 8}, {}, &gen);
  nn::TransformerEncoderLayer enc(
      nn::TransformerLayerOptions(8, 4).with_dim_feedforward(16).with_dropout(0.0));
  CHECK(enc(seq_first).shape() == Shape{6, 3, 8});
  CHECK(enc(unbatched).shape() == Shape{6, 8});
  // The unbatched input is the batch of one.
  Tensor one = enc(hg::unsqueeze(unbatched, 1));
  CHECK(max_abs_diff(hg::squeeze(one, 1), enc(unbatched)) <= 1e-5);

  nn::TransformerDecoderLayer dec(
      nn::TransformerLayerOptions(8, 4).with_dim_feedforward(16).with_batch_first(true));
  Tensor tgt = hg::randn({3, 4, 8}, {}, &gen);
  Tensor memory = hg::randn({3, 7, 8}, {}, &gen);
  CHECK(dec(tgt, memory).shape() == Shape{3, 4, 8});
}

TEST_CASE("encoder and decoder stacks apply their layers in turn and then the final norm") {
  const auto options = nn::TransformerLayerOptions(8, 2)
                           .with_dim_feedforward(16)
                           .with_batch_first(true)
                           .with_dropout(0);
  hg::Generator gen(9);
  nn::TransformerEncoder encoder(options, 3, /*final_norm=*/true, &gen);
  const auto keys = encoder.state_dict().keys();
  CHECK(keys.front() == "layers.0.self_attn.in_proj_weight");
  CHECK(std::count(keys.begin(), keys.end(), "layers.2.norm2.bias") == 1);
  CHECK(keys.back() == "norm.bias");
  // Layers are initialized one after the other, so they differ.
  CHECK(max_abs_diff(encoder.parameter("layers.0.linear1.weight"),
                     encoder.parameter("layers.1.linear1.weight")) > 0.01);

  Tensor x = hg::randn({2, 5, 8}, {}, &gen);
  Tensor pad = hg::from_vector<bool>({false, false, false, false, false,  //
                                      false, false, false, true, true},
                                     {2, 5});
  Tensor by_hand = x;
  for (const auto& layer : *encoder.layers) by_hand = (*layer)(by_hand, {}, pad, true);
  by_hand = (*encoder.norm)(by_hand);
  CHECK(max_abs_diff(encoder(x, {}, pad, true), by_hand) == 0.0);

  nn::TransformerDecoder decoder(options, 2, /*final_norm=*/false, &gen);
  CHECK(decoder.norm == nullptr);
  CHECK(decoder.num_layers() == 2);
  Tensor tgt = hg::randn({2, 3, 8}, {}, &gen);
  Tensor y = tgt;
  for (const auto& layer : *decoder.layers) y = (*layer)(y, x, {}, {}, {}, pad, true);
  CHECK(max_abs_diff(decoder(tgt, x, {}, {}, {}, pad, true), y) == 0.0);
}

TEST_CASE("transformer dropout is active in training only and follows its generator") {
  const auto options = nn::TransformerLayerOptions(8, 2).with_dim_feedforward(16).with_dropout(0.3);
  nn::TransformerEncoderLayer layer(options);
  hg::Generator data(1);
  Tensor x = hg::randn({4, 2, 8}, {}, &data);
  hg::Generator d1(42), d2(42);
  layer.set_dropout_generator(&d1);
  Tensor a = layer(x);
  layer.set_dropout_generator(&d2);
  Tensor b = layer(x);
  CHECK(max_abs_diff(a, b) == 0.0);  // same draws
  Tensor c = layer(x);
  CHECK(max_abs_diff(b, c) > 1e-3);  // fresh draws
  layer.eval();
  CHECK(max_abs_diff(layer(x), layer(x)) == 0.0);
  CHECK(max_abs_diff(layer(x), a) > 1e-3);
}

TEST_CASE("transformer layer options are validated with the layer's name") {
  CHECK(HG_ERROR_MESSAGE(nn::TransformerEncoderLayer(nn::TransformerLayerOptions(10, 3)))
            .find("TransformerEncoderLayer: d_model 10 is not divisible by nhead 3") !=
        std::string::npos);
  CHECK(HG_ERROR_MESSAGE(
            nn::TransformerDecoderLayer(nn::TransformerLayerOptions(8, 2).with_dim_feedforward(0)))
            .find("TransformerDecoderLayer: dim_feedforward") != std::string::npos);
}
