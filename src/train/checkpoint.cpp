// Checkpoints (model + optimizer + trainer entries in one .npz) and Generator states as
// tensors (see train/checkpoint.hpp).
#include "headgrad/train/checkpoint.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <locale>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/warning.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/optim/optimizer.hpp"

namespace headgrad::train {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// "" when every value of a floating tensor is finite, else the first bad value and where.
std::string first_non_finite(const Tensor& t) {
  if (!is_floating(t.dtype())) return {};
  const std::vector<double> v = t.to(Device::cpu()).to(kFloat64).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      return std::to_string(v[i]) + " at flat index " + std::to_string(i) +
             " (a model checkpoint must hold finite values)";
  return {};
}

// Problems loading `entries` into `model`, with Module::load_state_dict's strict rules
// (every name present, none unexpected, equal shapes, floating vs integer kinds equal).
std::vector<std::string> model_problems(const nn::Module& model, const nn::StateDict& entries) {
  auto targets = model.named_parameters();
  for (auto& b : model.named_buffers()) targets.push_back(b);
  std::vector<std::string> problems, missing, unexpected;
  nn::StateDict known;
  for (const auto& [name, t] : targets) {
    known.insert(name, t);
    const Tensor* src = entries.find(name);
    if (!src)
      missing.push_back(name);
    else if (!src->defined())
      problems.push_back("'" + name + "' is undefined");
    else if (src->shape() != t.shape())
      problems.push_back("'" + name + "' has shape " + shape_str(src->shape()) +
                         ", the model expects " + shape_str(t.shape()));
    else if (is_floating(src->dtype()) != is_floating(t.dtype()))
      problems.push_back("'" + name + "' has dtype " + to_string(src->dtype()) +
                         ", the model holds " + to_string(t.dtype()));
    else if (const std::string bad = first_non_finite(*src); !bad.empty())
      problems.push_back("'" + name + "' holds " + bad);
  }
  for (const auto& [name, t] : entries)
    if (!known.contains(name)) unexpected.push_back(name);
  if (!missing.empty()) problems.push_back("missing model entries: " + join(missing));
  if (!unexpected.empty()) problems.push_back("unexpected entries: " + join(unexpected));
  return problems;
}

// A copy of every tensor of `state` that shares no storage with it.
nn::StateDict deep_copy(const nn::StateDict& state) {
  NoGradGuard no_grad;
  nn::StateDict out;
  for (const auto& [key, t] : state) out.insert(key, t.defined() ? t.detach().clone() : t);
  return out;
}

// One attention layer's heads, as the archive comment records them.
struct LayerHeads {
  std::string layer;  // dotted path in the model, "" for the model itself
  std::int64_t heads = 0, head_dim = 0;
  bool operator==(const LayerHeads&) const = default;
};

std::vector<LayerHeads> layer_heads(const nn::Module& model) {
  std::vector<LayerHeads> out;
  for (const auto& [name, module] : model.named_modules())
    if (const auto* layer = dynamic_cast<const nn::AttentionLayer*>(module.get()))
      out.push_back({name, layer->options().num_heads, layer->options().head_dim()});
  return out;
}

// The layout a file records; nullopt when its comment is not headgrad's (numpy's files,
// older headgrad files, anything unparseable: nothing to compare).
std::optional<std::vector<LayerHeads>> recorded_heads(const std::string& comment) {
  if (comment.empty()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(comment, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("headgrad") || !j["headgrad"].is_object()) return std::nullopt;
  const nlohmann::json& attention = j["headgrad"].value("attention", nlohmann::json());
  if (!attention.is_array()) return std::nullopt;
  std::vector<LayerHeads> out;
  for (const auto& l : attention) {
    if (!l.is_object() || !l.value("layer", nlohmann::json()).is_string() ||
        !l.value("heads", nlohmann::json()).is_number_integer() ||
        !l.value("head_dim", nlohmann::json()).is_number_integer())
      return std::nullopt;
    out.push_back({l["layer"].get<std::string>(), l["heads"].get<std::int64_t>(),
                   l["head_dim"].get<std::int64_t>()});
  }
  return out;
}

std::string heads_text(const LayerHeads& l) {
  return std::to_string(l.heads) + (l.heads == 1 ? " head" : " heads") + " of dimension " +
         std::to_string(l.head_dim);
}

std::string layer_text(const std::string& name) {
  return name.empty() ? std::string("the model") : name;
}

// How the recorded layout differs from the model's, "" when it does not (or none is
// recorded).
std::string heads_difference(const std::string& comment, const nn::Module& model) {
  const auto saved = recorded_heads(comment);
  if (!saved) return {};
  const std::vector<LayerHeads> now = layer_heads(model);
  if (*saved == now) return {};
  if (saved->size() != now.size())
    return std::to_string(saved->size()) + " attention layers in the file, " +
           std::to_string(now.size()) + " in the model";
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const LayerHeads& s = (*saved)[i];
    const LayerHeads& m = now[i];
    if (s.layer != m.layer)
      lines.push_back("attention layer " + std::to_string(i) + " is " + layer_text(s.layer) +
                      " in the file, " + layer_text(m.layer) + " in the model");
    else if (s.heads != m.heads || s.head_dim != m.head_dim)
      lines.push_back(layer_text(m.layer) + ": " + heads_text(s) + " in the file, " +
                      heads_text(m) + " in the model");
  }
  return join(lines);
}

constexpr std::int64_t kGeneratorTag = 0x68676E31;  // "hgn1": format 1 of generator_state
constexpr std::int64_t kGeneratorHeader = 5;        // tag, seed, has_spare, spare, count

}  // namespace

// Tensors on a GPU are copied to the CPU by save_npz; loading copies the file's (CPU)
// values into the model's and the optimizer's tensors on whatever device they are.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const nn::StateDict& trainer_state) {
  nn::StateDict entries;
  auto add = [&](const std::string& key, const Tensor& t, const char* what) {
    if (entries.contains(key))
      throw ValueError("save_checkpoint: '" + path + "': " + what + " entry '" + key +
                       "' collides with another entry");
    entries.insert(key, t);
  };
  for (const auto& [name, t] : model.state_dict()) {
    if (name.find('/') != std::string::npos)
      throw ValueError("save_checkpoint: '" + path + "': model entry '" + name +
                       "' holds a '/', which the archive reserves for optimizer/ and trainer/");
    add(name, t, "model");
  }
  if (optimizer)
    for (const auto& [key, t] : optimizer->state_dict())
      add(kOptimizerPrefix + key, t, "optimizer");
  for (const auto& [key, t] : trainer_state) add(kTrainerPrefix + key, t, "trainer");
  save_npz(path, entries, attention_layout_comment(model));
}

std::string attention_layout_comment(const nn::Module& model) {
  const std::vector<LayerHeads> layers = layer_heads(model);
  if (layers.empty()) return {};
  nlohmann::ordered_json attention = nlohmann::ordered_json::array();
  for (const LayerHeads& l : layers)
    attention.push_back({{"layer", l.layer}, {"heads", l.heads}, {"head_dim", l.head_dim}});
  nlohmann::ordered_json j;
  j["headgrad"]["attention"] = attention;
  return j.dump();
}

nn::StateDict load_checkpoint(const std::string& path, nn::Module& model,
                              optim::Optimizer* optimizer, const LoadOptions& options) {
  return detail::apply_checkpoint_as("load_checkpoint", read_npz(path), path, model, optimizer,
                                     options);
}

nn::StateDict apply_checkpoint(const NpzFile& file, const std::string& path, nn::Module& model,
                               optim::Optimizer* optimizer, const LoadOptions& options) {
  return detail::apply_checkpoint_as("load_checkpoint", file, path, model, optimizer, options);
}

nn::StateDict apply_checkpoint(const nn::StateDict& entries, const std::string& path,
                               nn::Module& model, optim::Optimizer* optimizer) {
  return detail::apply_checkpoint_as("load_checkpoint", NpzFile{entries, {}}, path, model,
                                     optimizer, {});
}

nn::StateDict detail::apply_checkpoint_as(const std::string& who, const NpzFile& file,
                                          const std::string& path, nn::Module& model,
                                          optim::Optimizer* optimizer, const LoadOptions& options) {
  const nn::StateDict& entries = file.entries;
  nn::StateDict model_entries, optimizer_entries, trainer_entries;
  const std::size_t optimizer_len = std::string(kOptimizerPrefix).size();
  const std::size_t trainer_len = std::string(kTrainerPrefix).size();
  for (const auto& [key, t] : entries) {
    if (starts_with(key, kOptimizerPrefix))
      optimizer_entries.insert(key.substr(optimizer_len), t);
    else if (starts_with(key, kTrainerPrefix))
      trainer_entries.insert(key.substr(trainer_len), t);
    else
      model_entries.insert(key, t);
  }

  const std::string where = who + ": '" + path + "': ";
  const std::string heads_differ = heads_difference(file.comment, model);
  std::vector<std::string> problems = model_problems(model, model_entries);
  if (optimizer && optimizer_entries.empty())
    problems.push_back("the file holds no optimizer state (no 'optimizer/' entries)");
  if (!problems.empty())
    throw ValueError(where + "nothing was loaded: " + join(problems) +
                     (heads_differ.empty()
                          ? std::string()
                          : " (the file was saved from another model: " + heads_differ + ")"));

  // The optimizer checks its own entries and loads all or nothing; the model's were
  // checked above, so its load cannot fail on them. Should it fail anyway, the optimizer
  // gets its previous state back.
  nn::StateDict optimizer_before;
  if (optimizer) {
    optimizer_before = deep_copy(optimizer->state_dict());
    try {
      optimizer->load_state_dict(optimizer_entries);
    } catch (const Error& e) {
      throw ValueError(where + "nothing was loaded: optimizer state: " + e.what());
    }
  }
  try {
    model.load_state_dict(model_entries);
  } catch (const Error& e) {
    if (optimizer) optimizer->load_state_dict(optimizer_before);
    throw ValueError(where + "nothing was loaded: " + e.what());
  }
  if (!heads_differ.empty() && options.warn_on_attention_mismatch)
    warn(where +
         "the file was saved from a model whose attention heads differ from this "
         "model's: " +
         heads_differ +
         ". Every shape agrees, so every weight was loaded, but the heads now split the "
         "projections differently. If that is intended, load with "
         "LoadOptions().with_warn_on_attention_mismatch(false).");
  return trainer_entries;
}

Tensor generator_state(const Generator& g) {
  const std::optional<double> spare = g.spare_normal();
  const bool has_spare = spare.has_value();
  const double next = spare.value_or(0.0);

  std::ostringstream text;
  text.imbue(std::locale::classic());
  text << g.engine();
  std::vector<std::int64_t> words;
  std::istringstream in(text.str());
  in.imbue(std::locale::classic());
  std::uint64_t word = 0;
  while (in >> word) words.push_back(static_cast<std::int64_t>(word));

  std::vector<std::int64_t> state = {
      kGeneratorTag, static_cast<std::int64_t>(g.initial_seed()), has_spare ? 1 : 0,
      has_spare ? std::bit_cast<std::int64_t>(next) : 0, static_cast<std::int64_t>(words.size())};
  state.insert(state.end(), words.begin(), words.end());
  Tensor out = empty({static_cast<std::int64_t>(state.size())}, kInt64);
  std::copy(state.begin(), state.end(), out.data<std::int64_t>());
  return out;
}

void set_generator_state(Generator& g, const Tensor& state_in) {
  auto fail = [](const std::string& why) { return ValueError("set_generator_state: " + why); };
  if (!state_in.defined()) throw fail("the state is undefined");
  if (state_in.dtype() != kInt64 || state_in.dim() != 1)
    throw fail("expected a 1-d int64 tensor from generator_state, got " + state_in.describe());
  // The words are read on the CPU (a state moved to a GPU is copied back first).
  const Tensor state = state_in.device().is_cpu() ? state_in : state_in.to(Device::cpu());
  const std::int64_t n = state.numel();
  const std::int64_t* w = state.data<std::int64_t>();
  if (n < kGeneratorHeader || w[0] != kGeneratorTag)
    throw fail("not a state from generator_state (its format tag is missing)");
  if (w[2] != 0 && w[2] != 1) throw fail("the cached-normal flag is " + std::to_string(w[2]));
  if (w[4] != n - kGeneratorHeader)
    throw fail("the state says " + std::to_string(w[4]) + " engine words, it holds " +
               std::to_string(n - kGeneratorHeader));
  // libstdc++ writes the 312 state words and then the position in them, which must be
  // in range: reading it unchecked would index past the state.
  constexpr std::int64_t kWords = std::mt19937_64::state_size;
  if (w[4] == kWords + 1 && (w[n - 1] < 0 || w[n - 1] > kWords))
    throw fail("the engine position " + std::to_string(w[n - 1]) + " is out of range");

  std::ostringstream text;
  text.imbue(std::locale::classic());
  for (std::int64_t i = kGeneratorHeader; i < n; ++i)
    text << static_cast<std::uint64_t>(w[i]) << ' ';
  std::istringstream in(text.str());
  in.imbue(std::locale::classic());
  std::mt19937_64 engine;
  in >> engine;
  std::string rest;
  if (in.fail() || (in >> rest)) throw fail("the engine words do not form a std::mt19937_64 state");

  g.manual_seed(static_cast<std::uint64_t>(w[1]));
  g.set_engine(engine);
  if (w[2] == 1) g.set_spare_normal(std::bit_cast<double>(w[3]));
}

}  // namespace headgrad::train
