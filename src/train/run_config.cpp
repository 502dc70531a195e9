// RunConfig: a run's identity and settings as text, JSON round trip, and the comparison a
// resume makes (see train/run_config.hpp).
#include "headgrad/train/run_config.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "headgrad/core/error.hpp"

namespace headgrad::train {

namespace {

const char* kind_name(RunConfig::Kind kind) {
  return kind == RunConfig::Kind::identity ? "identity" : "setting";
}

}  // namespace

std::string RunConfig::double_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

RunConfig& RunConfig::set(const std::string& name, std::string value, Kind kind) {
  if (name.empty()) throw ValueError("RunConfig: a field name is empty");
  for (Field& f : fields)
    if (f.name == name) {
      f.value = std::move(value);
      f.kind = kind;
      return *this;
    }
  fields.push_back({name, std::move(value), kind});
  return *this;
}

const RunConfig::Field* RunConfig::find(const std::string& name) const {
  for (const Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::string RunConfig::to_json() const {
  nlohmann::ordered_json j;
  j["fields"] = nlohmann::ordered_json::array();
  for (const Field& f : fields)
    j["fields"].push_back({{"name", f.name}, {"value", f.value}, {"kind", kind_name(f.kind)}});
  j["command_line"] = command_line;
  return j.dump();
}

RunConfig RunConfig::from_json(const std::string& json) {
  auto bad = [](const std::string& why) {
    return ValueError("RunConfig: the recorded configuration is malformed: " + why);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("fields") || !j["fields"].is_array())
    throw bad("no \"fields\" array");
  RunConfig out;
  for (const auto& f : j["fields"]) {
    if (!f.is_object() || !f.contains("name") || !f.contains("value") || !f.contains("kind") ||
        !f["name"].is_string() || !f["value"].is_string() || !f["kind"].is_string())
      throw bad("a field lacks a string name, value or kind");
    const std::string kind = f["kind"];
    if (kind != "identity" && kind != "setting") throw bad("unknown kind '" + kind + "'");
    const std::string name = f["name"];
    if (name.empty() || out.find(name)) throw bad("an empty or repeated field name '" + name + "'");
    out.fields.push_back({name, f["value"], kind == "identity" ? Kind::identity : Kind::setting});
  }
  if (j.contains("command_line") && j["command_line"].is_string())
    out.command_line = j["command_line"];
  return out;
}

ConfigComparison compare_configs(const RunConfig& saved, const RunConfig& now) {
  ConfigComparison out;
  std::vector<std::string> names;
  for (const auto& f : saved.fields) names.push_back(f.name);
  for (const auto& f : now.fields)
    if (!saved.find(f.name)) names.push_back(f.name);
  for (const std::string& name : names) {
    const RunConfig::Field* a = saved.find(name);
    const RunConfig::Field* b = now.find(name);
    const std::string was = a ? a->value : "(absent)", is = b ? b->value : "(absent)";
    if (was == is) continue;
    const bool identity =
        (a && a->kind == RunConfig::Kind::identity) || (b && b->kind == RunConfig::Kind::identity);
    const std::string diff = name + ": " + was + " in the checkpoint, " + is + " now";
    if (identity) {
      out.refused.push_back(diff +
                            " (it defines the run: resume with the same value, or start "
                            "this run in another folder)");
    } else if (b && now.explicit_settings.contains(name)) {
      out.overridden.push_back(diff + " (given explicitly: " + is + " is used)");
      out.overridden_names.push_back(name);
    } else {
      out.refused.push_back(diff + " (a setting: give it explicitly to override the checkpoint)");
    }
  }
  return out;
}

Tensor text_tensor(const std::string& text) {
  Tensor t = empty({static_cast<std::int64_t>(text.size())}, TensorOptions(kInt64));
  auto* p = t.data<std::int64_t>();
  for (std::size_t i = 0; i < text.size(); ++i) p[i] = static_cast<unsigned char>(text[i]);
  return t;
}

std::string tensor_text(const Tensor& t, const std::string& what) {
  if (!t.defined() || t.dtype() != kInt64 || t.dim() != 1)
    throw ValueError(what + " must be a 1-d int64 tensor of bytes, got " +
                     (t.defined() ? t.describe() : std::string("an undefined tensor")));
  const std::vector<std::int64_t> bytes = t.to(Device::cpu()).to_vector<std::int64_t>();
  std::string out(bytes.size(), '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] < 0 || bytes[i] > 255)
      throw ValueError(what + " holds " + std::to_string(bytes[i]) + " at index " +
                       std::to_string(i) + ", not a byte");
    out[i] = static_cast<char>(bytes[i]);
  }
  return out;
}

}  // namespace headgrad::train
