// The attention viewer (view.hpp): the checks, the JSON the page reads, and the page itself
// (src/inspect/attention_view.html, embedded at build time as kAttentionViewTemplate).
#include "headgrad/inspect/view.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attention_view_template.hpp"  // generated: kAttentionViewTemplate
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/train/npz.hpp"
#include "train/atomic_file.hpp"

namespace headgrad::inspect {
namespace {

using json = nlohmann::json;

constexpr double kQuantisationScale = 65535.0;  // patterns as uint16: q / 65535

std::string base64(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t{bytes[i]} << 16) |
                            (i + 1 < bytes.size() ? std::uint32_t{bytes[i + 1]} << 8 : 0) |
                            (i + 2 < bytes.size() ? std::uint32_t{bytes[i + 2]} : 0);
    out += digits[(n >> 18) & 63];
    out += digits[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[n & 63] : '=';
  }
  return out;
}

std::vector<std::uint8_t> unbase64(const std::string& text) {
  auto value = [&](char c) -> std::uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<std::uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<std::uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<std::uint32_t>(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    throw ValueError("decode_patterns: '" + std::string(1, c) + "' is not a base64 digit");
  };
  if (text.size() % 4 != 0)
    throw ValueError("decode_patterns: base64 text of " + std::to_string(text.size()) +
                     " characters (a multiple of 4 expected)");
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const int pad = (text[i + 3] == '=') + (text[i + 2] == '=');
    if (pad > 0 && i + 4 != text.size())
      throw ValueError("decode_patterns: '=' padding before the end of the text");
    std::uint32_t n = value(text[i]) << 18 | value(text[i + 1]) << 12;
    if (pad < 2) n |= value(text[i + 2]) << 6;
    if (pad < 1) n |= value(text[i + 3]);
    out.push_back(static_cast<std::uint8_t>(n >> 16));
    if (pad < 2) out.push_back(static_cast<std::uint8_t>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<std::uint8_t>(n & 0xff));
  }
  return out;
}

std::string where(const ViewGroup& g, const ViewModel* m = nullptr) {
  std::string s = "attention view: group '" + g.name + "'";
  if (m != nullptr) s += ", model '" + m->name + "'";
  return s;
}

void check_scores(const ViewGroup& g, const ViewModel& m) {
  for (const ViewScore& s : m.scores) {
    bool ok = static_cast<std::int64_t>(s.values.size()) == m.layers;
    for (const auto& row : s.values) ok = ok && static_cast<std::int64_t>(row.size()) == m.heads;
    if (!ok)
      throw ValueError(where(g, &m) + ": score '" + s.key + "' must be " +
                       std::to_string(m.layers) + " layers x " + std::to_string(m.heads) +
                       " heads");
  }
}

void check_model(const ViewGroup& g, const ViewModel& m) {
  if (m.layers < 1 || m.heads < 1)
    throw ValueError(where(g, &m) + ": needs at least 1 layer and 1 head, got " +
                     std::to_string(m.layers) + " x " + std::to_string(m.heads));
  const auto expected = static_cast<std::size_t>(g.examples.size()) *
                        static_cast<std::size_t>(m.layers * m.heads * g.length * g.length);
  if (m.patterns.size() != expected)
    throw ValueError(where(g, &m) + ": patterns hold " + std::to_string(m.patterns.size()) +
                     " values; " + std::to_string(g.examples.size()) + " examples x " +
                     std::to_string(m.layers) + " layers x " + std::to_string(m.heads) +
                     " heads x " + std::to_string(g.length) + " x " + std::to_string(g.length) +
                     " = " + std::to_string(expected) + " expected");
  for (const float p : m.patterns)
    if (!(p >= 0.0f && p <= 1.0f))  // NaN fails too
      throw ValueError(where(g, &m) + ": a pattern value " + std::to_string(p) +
                       " lies outside [0, 1] (softmax weights expected)");
  check_scores(g, m);
}

void check_group(const ViewGroup& g) {
  if (g.length < 1 || g.examples.empty() || g.models.empty())
    throw ValueError(where(g) +
                     ": needs a length >= 1, at least one example and one model (got T = " +
                     std::to_string(g.length) + ", " + std::to_string(g.examples.size()) +
                     " examples, " + std::to_string(g.models.size()) + " models)");
  for (std::size_t e = 0; e < g.examples.size(); ++e)
    if (static_cast<std::int64_t>(g.examples[e].size()) != g.length)
      throw ValueError(where(g) + ": example " + std::to_string(e) + " has " +
                       std::to_string(g.examples[e].size()) +
                       " token labels; T = " + std::to_string(g.length) + " expected");
  if (g.model_a >= g.models.size() || g.model_b >= g.models.size())
    throw ValueError(where(g) + ": model_a " + std::to_string(g.model_a) + " and model_b " +
                     std::to_string(g.model_b) + " must index its " +
                     std::to_string(g.models.size()) + " models");
  for (const ViewModel& m : g.models) check_model(g, m);
}

json score_json(const ViewScore& s) {
  json values = json::array();
  for (const auto& row : s.values) {
    json r = json::array();
    for (const double v : row) r.push_back(std::isfinite(v) ? json(v) : json(nullptr));
    values.push_back(r);
  }
  return {{"key", s.key}, {"label", s.label}, {"values", values}};
}

json group_json(const ViewGroup& g) {
  json examples = json::array();
  for (const auto& labels : g.examples) {
    json tokens = json::array(), roles = json::array();
    for (const auto& l : labels) {
      tokens.push_back(l.text);
      roles.push_back(l.role);
    }
    examples.push_back({{"tokens", tokens}, {"roles", roles}});
  }
  json models = json::array();
  for (const ViewModel& m : g.models) {
    json scores = json::array();
    for (const ViewScore& s : m.scores) scores.push_back(score_json(s));
    models.push_back({{"name", m.name},
                      {"layers", m.layers},
                      {"heads", m.heads},
                      {"patterns", encode_patterns(m.patterns)},
                      {"scores", scores}});
  }
  return {{"name", g.name},
          {"T", g.length},
          {"examples", examples},
          {"models", models},
          {"pair", {g.model_a, g.model_b}}};
}

// JSON safe inside <script>: every '<' escaped, so no "</script>" or "<!--" can appear.
std::string script_json(const json& data) {
  const std::string text = data.dump();
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The template with its two markers replaced, both found in the template itself (so a
// title or a name that spells a marker is never taken for one).
std::string filled(const std::string& title, const std::string& data) {
  const std::string page = kAttentionViewTemplate;
  const std::string title_marker = "HEADGRAD_VIEW_TITLE",
                    data_marker = "/*HEADGRAD_VIEW_DATA*/null";
  const auto t = page.find(title_marker), d = page.find(data_marker);
  if (t == std::string::npos || d == std::string::npos || t > d)
    throw Error("attention view: the page template lacks its markers (a build problem)");
  return page.substr(0, t) + title +
         page.substr(t + title_marker.size(), d - t - title_marker.size()) + data +
         page.substr(d + data_marker.size());
}

// Restores a module's training mode when the capture ends, also on an exception.
class EvalScope {
 public:
  explicit EvalScope(nn::Module& m) : module_(m), was_training_(m.is_training()) { m.eval(); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;
  ~EvalScope() { module_.train(was_training_); }

 private:
  nn::Module& module_;
  bool was_training_;
};

}  // namespace

std::string attention_view_html(const AttentionView& view) {
  if (view.groups.empty())
    throw ValueError("attention view: no group to show (add a ViewGroup with its models)");
  for (const ViewGroup& g : view.groups) check_group(g);
  json groups = json::array();
  for (const ViewGroup& g : view.groups) groups.push_back(group_json(g));
  const json data = {{"title", view.title},
                     {"note", view.note},
                     {"scale", kQuantisationScale},
                     {"groups", groups}};
  return filled(html_escaped(view.title), script_json(data));
}

void write_attention_view(const std::filesystem::path& path, const AttentionView& view) {
  const std::string page = attention_view_html(view);  // checked before the file is touched
  train::detail::AtomicFile file(path, "write_attention_view", path.string());
  file.write(page.data(), page.size());
  file.commit();
}

ViewModel capture_view_model(nn::Module& model, const train::ForwardFn& forward,
                             const train::Batch& batch, const std::string& name) {
  const auto layers = attention_layers(model);
  if (layers.empty())
    throw ValueError("capture_view_model: model '" + name + "' has no attention layer");
  Capture capture(model, {"pattern"}, false);
  {
    EvalScope eval(model);
    NoGradGuard no_grad;
    auto scope = capture.activate();
    forward(batch.to(model.device()));
  }
  ViewModel out;
  out.name = name;
  out.layers = static_cast<std::int64_t>(layers.size());
  std::vector<std::vector<float>> per_layer;  // (N, H, T, T) each, on the CPU
  std::int64_t n = 0, t = 0;
  for (const auto& layer : layers) {
    const Tensor p = capture.get(layer.name + ".pattern").to(Device::cpu()).to(kFloat32);
    if (per_layer.empty()) {
      n = p.size(0);
      out.heads = p.size(1);
      t = p.size(2);
    }
    if (p.size(1) != out.heads || p.size(2) != t || p.size(3) != t || p.size(0) != n)
      throw ValueError("capture_view_model: model '" + name + "': layer '" + layer.name +
                       "' has a pattern of shape " + shape_str(p.shape()) +
                       "; every layer must be (" + std::to_string(n) + ", " +
                       std::to_string(out.heads) + ", " + std::to_string(t) + ", " +
                       std::to_string(t) + ") (self-attention, the same heads)");
    per_layer.push_back(p.to_vector<float>());
  }
  const std::int64_t block = t * t;
  out.patterns.reserve(static_cast<std::size_t>(n * out.layers * out.heads * block));
  for (std::int64_t e = 0; e < n; ++e)
    for (const auto& values : per_layer)
      for (std::int64_t h = 0; h < out.heads; ++h) {
        const auto first = values.begin() + (e * out.heads + h) * block;
        out.patterns.insert(out.patterns.end(), first, first + block);
      }
  return out;
}

std::string encode_patterns(const std::vector<float>& patterns) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(patterns.size() * 2);
  for (const float p : patterns) {
    const double clamped = std::clamp(double{p}, 0.0, 1.0);
    const auto q = static_cast<std::uint16_t>(std::lround(clamped * kQuantisationScale));
    bytes.push_back(static_cast<std::uint8_t>(q & 0xff));
    bytes.push_back(static_cast<std::uint8_t>(q >> 8));
  }
  return base64(bytes);
}

std::vector<float> decode_patterns(const std::string& text) {
  const std::vector<std::uint8_t> bytes = unbase64(text);
  if (bytes.size() % 2 != 0)
    throw ValueError("decode_patterns: " + std::to_string(bytes.size()) +
                     " bytes do not make 16-bit values");
  std::vector<float> out(bytes.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>((bytes[2 * i] | bytes[2 * i + 1] << 8) / kQuantisationScale);
  return out;
}

std::vector<std::vector<train::TokenLabel>> view_examples(const train::Task& task,
                                                          const train::Batch& batch) {
  if (!batch.tokens.defined() || batch.tokens.dim() != 2)
    throw ValueError("view_examples: task '" + task.name() +
                     "' gave no (N, T) token batch (regression tasks have no tokens to show)");
  const std::int64_t n = batch.tokens.size(0), t = batch.tokens.size(1);
  const auto ids = batch.tokens.to(Device::cpu()).to_vector<std::int64_t>();
  std::vector<std::vector<train::TokenLabel>> out;
  for (std::int64_t e = 0; e < n; ++e)
    out.push_back(task.token_labels({ids.begin() + e * t, ids.begin() + (e + 1) * t}));
  return out;
}

}  // namespace headgrad::inspect
