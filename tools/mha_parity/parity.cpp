// Reading, checking and running a MultiheadAttention parity case; see parity.hpp for the
// case layout and shapes.
#include "parity.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/train/npy.hpp"

namespace headgrad::parity {

namespace fs = std::filesystem;

namespace {

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Every parameter name a MultiheadAttention may have, to spot stray parameter files.
constexpr std::array<const char*, 9> kAllParameterNames = {
    "in_proj_weight", "q_proj_weight", "k_proj_weight",   "v_proj_weight", "in_proj_bias",
    "bias_k",         "bias_v",        "out_proj.weight", "out_proj.bias"};

const char* const kRequiredKeys[] = {
    "embed_dim",   "num_heads",     "kdim",        "vdim",         "bias",
    "add_bias_kv", "add_zero_attn", "batch_first", "need_weights", "average_attn_weights",
    "is_causal",   "dtype"};

nn::MultiheadAttentionOptions module_options(const CaseConfig& c) {
  return nn::MultiheadAttentionOptions(c.embed_dim, c.num_heads)
      .with_dropout(0.0)
      .with_bias(c.bias)
      .with_add_bias_kv(c.add_bias_kv)
      .with_add_zero_attn(c.add_zero_attn)
      .with_kdim(c.kdim)
      .with_vdim(c.vdim)
      .with_batch_first(c.batch_first);
}

std::shared_ptr<nn::MultiheadAttention> make_module(const CaseConfig& c) {
  auto module = std::make_shared<nn::MultiheadAttention>(module_options(c));
  if (c.dtype != kFloat32) module->to(c.dtype);
  return module;
}

// Loads `name`.npy from the case directory and checks its dtype is the case's.
Tensor read_input(const fs::path& dir, const std::string& name, DType dtype) {
  const fs::path file = dir / (name + ".npy");
  Tensor t = read_npy(file);
  if (t.dtype() != dtype)
    throw CaseError(
        file, "dtype " + to_string(t.dtype()) + ", but the case's dtype is " + to_string(dtype));
  return t;
}

// A mask: bool, or floating in the case's dtype.
Tensor read_mask(const fs::path& file, DType dtype) {
  Tensor t = read_npy(file);
  if (t.dtype() != kBool && t.dtype() != dtype)
    throw CaseError(file, "dtype " + to_string(t.dtype()) + ": a mask must be bool or " +
                              to_string(dtype) + " (the case's dtype)");
  return t;
}

void expect_shape(const fs::path& file, const Tensor& t, const Shape& expected,
                  const std::string& meaning) {
  if (t.shape() != expected)
    throw CaseError(file, "shape " + shape_str(t.shape()) + ", expected " + shape_str(expected) +
                              " " + meaning);
}

}  // namespace

CaseError::CaseError(const fs::path& file, const std::string& what)
    : Error(one_line(file.string() + ": " + what)), file_(file) {}

namespace {

// config.json parsed, with every required key present and no unknown one.
nlohmann::json parse_config(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw CaseError(file, "missing file (or not readable)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CaseError(file, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw CaseError(file, "the top level must be a JSON object");
  for (const char* key : kRequiredKeys)
    if (!j.contains(key)) throw CaseError(file, std::string("missing key \"") + key + "\"");
  for (const auto& item : j.items()) {
    const bool known = std::any_of(std::begin(kRequiredKeys), std::end(kRequiredKeys),
                                   [&](const char* k) { return item.key() == k; });
    if (!known && item.key() != "self_attention")
      throw CaseError(file, "unknown key \"" + item.key() + "\"");
  }
  return j;
}

}  // namespace

CaseConfig read_config(const fs::path& file) {
  const nlohmann::json j = parse_config(file);
  auto positive_int = [&](const char* key) -> std::int64_t {
    const auto& v = j.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
      throw CaseError(
          file, std::string("key \"") + key + "\" must be a positive integer, not " + v.dump());
    return v.get<std::int64_t>();
  };
  auto optional_dim = [&](const char* key) -> std::int64_t {
    return j.at(key).is_null() ? 0 : positive_int(key);
  };
  auto boolean = [&](const char* key) -> bool {
    const auto& v = j.at(key);
    if (!v.is_boolean())
      throw CaseError(file,
                      std::string("key \"") + key + "\" must be true or false, not " + v.dump());
    return v.get<bool>();
  };

  CaseConfig c;
  c.embed_dim = positive_int("embed_dim");
  c.num_heads = positive_int("num_heads");
  c.kdim = optional_dim("kdim");
  c.vdim = optional_dim("vdim");
  c.bias = boolean("bias");
  c.add_bias_kv = boolean("add_bias_kv");
  c.add_zero_attn = boolean("add_zero_attn");
  c.batch_first = boolean("batch_first");
  c.need_weights = boolean("need_weights");
  c.average_attn_weights = boolean("average_attn_weights");
  c.is_causal = boolean("is_causal");
  const auto& dtype = j.at("dtype");
  if (dtype == "float32")
    c.dtype = kFloat32;
  else if (dtype == "float64")
    c.dtype = kFloat64;
  else
    throw CaseError(file, "key \"dtype\" must be \"float32\" or \"float64\", not " + dtype.dump());
  if (j.contains("self_attention")) c.self_attention = boolean("self_attention");

  try {
    module_options(c).validate("MultiheadAttention");
  } catch (const Error& e) {
    throw CaseError(file, e.what());
  }
  if (c.self_attention && !module_options(c).packed_in_proj())
    throw CaseError(file, "self_attention needs kdim and vdim equal to embed_dim (or null)");
  return c;
}

Tensor read_npy(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) throw CaseError(file, "missing file (or not readable)");
  Tensor t;
  try {
    t = train::load_npy(file.string());
  } catch (const train::IOError& e) {
    // e names the file too; the case error names it once.
    std::string why = e.what();
    const std::string prefix = "load_npy: '" + file.string() + "': ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw CaseError(file, "not a valid .npy file: " + why);
  }
  if (t.dtype() == kInt64)
    throw CaseError(file,
                    "unsupported dtype '<i8' (int64); expected '<f4' float32, '<f8' "
                    "float64 or '|b1' bool");
  return t;
}

void write_npy(const fs::path& file, const Tensor& tensor) {
  if (tensor.dtype() != kFloat32 && tensor.dtype() != kFloat64 && tensor.dtype() != kBool)
    throw CaseError(file, "cannot write dtype " + to_string(tensor.dtype()));
  try {
    train::save_npy(file.string(), tensor);
  } catch (const Error& e) {
    throw CaseError(file, std::string("cannot write: ") + e.what());
  }
}

namespace {

// The optional key_padding_mask.npy (S) or (N, S) and attn_mask.npy (L, S) or (N*H, L, S).
void load_masks(const fs::path& dir, bool unbatched, std::int64_t N, std::int64_t L, std::int64_t S,
                ParityCase& c) {
  const CaseConfig& cfg = c.config;
  const std::int64_t H = cfg.num_heads;
  const fs::path kpm_file = dir / "key_padding_mask.npy";
  if (fs::exists(kpm_file)) {
    c.key_padding_mask = read_mask(kpm_file, cfg.dtype);
    expect_shape(kpm_file, c.key_padding_mask, unbatched ? Shape{S} : Shape{N, S},
                 unbatched ? "(S)" : "(N, S)");
  }
  const fs::path mask_file = dir / "attn_mask.npy";
  if (fs::exists(mask_file)) {
    c.attn_mask = read_mask(mask_file, cfg.dtype);
    if (c.attn_mask.dim() == 3)
      expect_shape(mask_file, c.attn_mask, {N * H, L, S}, "(N*H, L, S)");
    else
      expect_shape(mask_file, c.attn_mask, {L, S}, "(L, S) or (N*H, L, S)");
  }
}

// Exactly the parameters the configuration's module has, each <name>.npy of its shape.
void load_parameters(const fs::path& dir, ParityCase& c) {
  const CaseConfig& cfg = c.config;
  const auto module = make_module(cfg);
  std::set<std::string> names;
  for (const auto& [name, p] : module->named_parameters()) {
    names.insert(name);
    const fs::path file = dir / (name + ".npy");
    if (!fs::exists(file))
      throw CaseError(file, "missing file: the module has parameter " + name + " of shape " +
                                shape_str(p.shape()));
    Tensor value = read_input(dir, name, cfg.dtype);
    expect_shape(file, value, p.shape(), "(parameter " + name + ")");
    c.parameters.insert(name, value);
  }
  for (const char* name : kAllParameterNames) {
    const fs::path file = dir / (std::string(name) + ".npy");
    if (!names.count(name) && fs::exists(file))
      throw CaseError(file,
                      std::string("unexpected file: this configuration has no parameter ") + name);
  }
}

}  // namespace

ParityCase load_case(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw CaseError(dir, "not a directory");
  ParityCase c;
  c.dir = dir;
  c.config = read_config(dir / "config.json");
  const CaseConfig& cfg = c.config;
  const nn::MultiheadAttentionOptions options = module_options(cfg);
  const std::int64_t E = cfg.embed_dim;
  const std::int64_t kdim = options.key_dim(), vdim = options.value_dim();

  // query: (L, N, E), (N, L, E) when batch_first, (L, E) unbatched.
  c.query = read_input(dir, "query", cfg.dtype);
  const fs::path query_file = dir / "query.npy";
  const Shape& qs = c.query.shape();
  if (qs.size() != 2 && qs.size() != 3)
    throw CaseError(query_file,
                    "shape " + shape_str(qs) + ": expected 3 dims (batched) or 2 (unbatched)");
  const bool unbatched = qs.size() == 2;
  const bool n_first = cfg.batch_first && !unbatched;
  const std::int64_t L = unbatched ? qs[0] : (n_first ? qs[1] : qs[0]);
  const std::int64_t N = unbatched ? 1 : (n_first ? qs[0] : qs[1]);
  auto layout = [&](std::int64_t length, std::int64_t dim) -> Shape {
    if (unbatched) return {length, dim};
    return n_first ? Shape{N, length, dim} : Shape{length, N, dim};
  };
  const char* layout_name =
      unbatched ? "(unbatched)" : (n_first ? "(N, length, dim)" : "(length, N, dim)");
  expect_shape(query_file, c.query, layout(L, E),
               std::string("(embed_dim ") + std::to_string(E) + ", layout " + layout_name + ")");

  std::int64_t S = L;
  if (cfg.self_attention) {
    c.key = c.value = c.query;
  } else {
    c.key = read_input(dir, "key", cfg.dtype);
    const fs::path key_file = dir / "key.npy";
    if (c.key.dim() != c.query.dim())
      throw CaseError(key_file, "shape " + shape_str(c.key.shape()) + " has " +
                                    std::to_string(c.key.dim()) + " dims but query has " +
                                    std::to_string(c.query.dim()));
    S = c.key.size(unbatched ? 0 : (n_first ? 1 : 0));
    expect_shape(key_file, c.key, layout(S, kdim),
                 "(kdim " + std::to_string(kdim) + ", batch " + std::to_string(N) + ", layout " +
                     layout_name + ")");
    c.value = read_input(dir, "value", cfg.dtype);
    expect_shape(dir / "value.npy", c.value, layout(S, vdim),
                 "(like key, with vdim " + std::to_string(vdim) + ", layout " + layout_name + ")");
  }
  c.grad_output = read_input(dir, "grad_output", cfg.dtype);
  expect_shape(dir / "grad_output.npy", c.grad_output, layout(L, E), "(the output's shape)");

  load_masks(dir, unbatched, N, L, S, c);
  load_parameters(dir, c);
  return c;
}

Results run_case(const ParityCase& pc) {
  const CaseConfig& cfg = pc.config;
  const auto module = make_module(cfg);
  module->load_state_dict(pc.parameters, /*strict=*/true);
  module->train(true);

  Tensor query = pc.query.clone().detach().requires_grad_(true);
  Tensor key = query, value = query;
  if (!cfg.self_attention) {
    key = pc.key.clone().detach().requires_grad_(true);
    value = pc.value.clone().detach().requires_grad_(true);
  }
  nn::MultiheadAttentionArgs args;
  args.with_need_weights(cfg.need_weights)
      .with_average_attn_weights(cfg.average_attn_weights)
      .with_is_causal(cfg.is_causal);
  if (pc.key_padding_mask.defined()) args.with_key_padding_mask(pc.key_padding_mask);
  if (pc.attn_mask.defined()) args.with_attn_mask(pc.attn_mask);

  const nn::AttentionOutput out = module->forward(query, key, value, args);
  (out.output * pc.grad_output).sum().backward();

  // A gradient the graph never reached is zero (PyTorch would report zeros there too).
  auto grad_of = [](const Tensor& t) { return t.grad().defined() ? t.grad() : zeros_like(t); };
  Results results;
  results.emplace_back("output", out.output.detach());
  if (cfg.need_weights) {
    if (!out.weights.defined())
      throw Error("MultiheadAttention returned no weights although need_weights is true");
    results.emplace_back("attn_weights", out.weights.detach());
  }
  results.emplace_back("grad_query", grad_of(query));
  results.emplace_back("grad_key", grad_of(key));
  results.emplace_back("grad_value", grad_of(value));
  for (const auto& [name, p] : module->named_parameters())
    results.emplace_back("grad_" + name, grad_of(p));
  return results;
}

void write_results(const Results& results, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir))
    throw CaseError(
        out_dir, "cannot create the output directory" + (ec ? ": " + ec.message() : std::string()));
  for (const auto& [name, tensor] : results) write_npy(out_dir / (name + ".npy"), tensor);
}

Results run_case_dir(const fs::path& case_dir, const fs::path& out_dir) {
  Results results = run_case(load_case(case_dir));
  write_results(results, out_dir);
  return results;
}

}  // namespace headgrad::parity
