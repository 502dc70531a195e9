// heads_compare's run cache (see cache.hpp): every finished run is one JSON file
// <cache_dir>/<key>.json holding its configuration text, its results and a checksum,
// written atomically (a temporary file renamed into place), so an interrupted study loses
// only the runs that were in flight and a rerun reuses every run whose configuration is
// unchanged and whose file passes its checks.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "atomic_write.hpp"
#include "cache.hpp"

#include "claims.hpp"
#include "headgrad/inspect/view.hpp"

namespace heads_compare {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json optional_json(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::optional<std::int64_t> optional_of(const json& j) {
  return j.is_null() ? std::nullopt : std::optional<std::int64_t>(j.get<std::int64_t>());
}

// NaN and infinities are not JSON numbers: they are stored as null and read back as NaN.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double number_of(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}
json numbers(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}
std::vector<double> numbers_of(const json& j) {
  std::vector<double> v;
  for (const auto& x : j) v.push_back(number_of(x));
  return v;
}
json matrix(const std::vector<std::vector<double>>& m) {
  json a = json::array();
  for (const auto& row : m) a.push_back(numbers(row));
  return a;
}
std::vector<std::vector<double>> matrix_of(const json& j) {
  std::vector<std::vector<double>> m;
  for (const auto& row : j) m.push_back(numbers_of(row));
  return m;
}

json curve_json(const PruningCurve& c) {
  return {{"loss", numbers(c.loss)}, {"accuracy", numbers(c.accuracy)}};
}
PruningCurve curve_of(const json& j) {
  return {numbers_of(j.at("loss")), numbers_of(j.at("accuracy"))};
}

json point_json(const EvalPoint& p) {
  return {{"step", p.step},
          {"train_loss", number(p.train_loss)},
          {"train_accuracy", number(p.train_accuracy)},
          {"loss", number(p.loss)},
          {"accuracy", number(p.accuracy)},
          {"previous_token", matrix(p.previous_token)},
          {"induction", matrix(p.induction)},
          {"induction_all", matrix(p.induction_all)},
          {"grad_z", matrix(p.grad_z)},
          {"icl", number(p.icl)},
          {"grad_q", matrix(p.grad_q)},
          {"grad_k", matrix(p.grad_k)},
          {"grad_v", matrix(p.grad_v)},
          {"grad_o", matrix(p.grad_o)},
          {"grad_cos", matrix(p.grad_cos)},
          {"split_cos", matrix(p.split_cos)},
          {"split_ratio", matrix(p.split_ratio)}};
}

EvalPoint point_of(const json& p) {
  EvalPoint e;
  e.step = p.at("step").get<std::int64_t>();
  e.train_loss = number_of(p.at("train_loss"));
  e.train_accuracy = number_of(p.at("train_accuracy"));
  e.loss = number_of(p.at("loss"));
  e.accuracy = number_of(p.at("accuracy"));
  e.previous_token = matrix_of(p.at("previous_token"));
  e.induction = matrix_of(p.at("induction"));
  e.induction_all = matrix_of(p.at("induction_all"));
  e.grad_z = matrix_of(p.at("grad_z"));
  // Written since char_lm and the gradient question (entries written before have none).
  if (p.contains("icl")) e.icl = number_of(p.at("icl"));
  for (auto [key, field] :
       {std::pair{"grad_q", &e.grad_q}, std::pair{"grad_k", &e.grad_k},
        std::pair{"grad_v", &e.grad_v}, std::pair{"grad_o", &e.grad_o},
        std::pair{"grad_cos", &e.grad_cos}, std::pair{"split_cos", &e.split_cos},
        std::pair{"split_ratio", &e.split_ratio}})
    if (p.contains(key)) *field = matrix_of(p.at(key));
  return e;
}

json circuit_json(const Circuit& c) {
  json paths = json::object();
  const char* via[] = {"q", "k", "v"};
  for (std::size_t i = 0; i < c.paths.size() && i < 3; ++i) paths[via[i]] = matrix(c.paths[i]);
  return {{"corruption", c.corruption}, {"prompts", c.prompts},
          {"clean", number(c.clean)},   {"corrupted", number(c.corrupted)},
          {"heads", matrix(c.heads)},   {"paths", paths}};
}

Circuit circuit_of(const json& j) {
  Circuit c;
  c.corruption = j.at("corruption").get<std::string>();
  c.prompts = j.at("prompts").get<std::int64_t>();
  c.clean = number_of(j.at("clean"));
  c.corrupted = number_of(j.at("corrupted"));
  c.heads = matrix_of(j.at("heads"));
  const json& paths = j.at("paths");
  for (const char* via : {"q", "k", "v"})
    if (paths.contains(via)) c.paths.push_back(matrix_of(paths.at(via)));
  return c;
}

}  // namespace

std::string result_to_json(const RunResult& r, const std::string& config_text) {
  json curve = json::array();
  for (const EvalPoint& p : r.curve) curve.push_back(point_json(p));
  json patterns = json::array();
  for (const auto& layer : r.patterns) patterns.push_back(matrix(layer));
  const auto& b = r.random;
  const json band = {{"orders", b.orders},
                     {"mean_accuracy", numbers(b.mean_accuracy)},
                     {"low_accuracy", numbers(b.low_accuracy)},
                     {"high_accuracy", numbers(b.high_accuracy)},
                     {"mean_loss", numbers(b.mean_loss)},
                     {"low_loss", numbers(b.low_loss)},
                     {"high_loss", numbers(b.high_loss)}};
  const json j = {{"config", config_text},
                  {"params", r.params},
                  {"attention_params", r.attention_params},
                  {"head_params", r.head_params},
                  {"curve", curve},
                  {"initial", point_json(r.initial)},
                  {"final_point", point_json(r.final_point)},
                  {"final_val_loss", number(r.final_val_loss)},
                  {"final_val_acc", number(r.final_val_acc)},
                  {"final_test_loss", number(r.final_test_loss)},
                  {"final_test_acc", number(r.final_test_acc)},
                  {"solved_step", optional_json(r.solved_step)},
                  {"phase_step", optional_json(r.phase_step)},
                  {"importance_raw", matrix(r.importance_raw)},
                  {"importance_normalized", matrix(r.importance_normalized)},
                  {"by_importance", curve_json(r.by_importance)},
                  {"greedy", curve_json(r.greedy)},
                  {"random", band},
                  {"patterns", patterns},
                  {"sample_tokens", r.sample_tokens},
                  {"patching", matrix(r.patching)},
                  {"patching_prompts", r.patching_prompts},
                  {"patching_clean", number(r.patching_clean)},
                  {"patching_corrupted", number(r.patching_corrupted)},
                  {"restoring_heads", r.restoring_heads},
                  {"restoring_fraction", number(r.restoring_fraction)},
                  {"seconds", r.seconds},
                  {"inspect_seconds", r.inspect_seconds}};
  json file = j;
  if (r.circuit.recorded()) file["circuit"] = circuit_json(r.circuit);
  if (!r.view_patterns.empty())  // the view's patterns, as the page stores them
    file["view"] = {{"length", r.view_length},
                    {"tokens", r.view_tokens},
                    {"patterns", headgrad::inspect::encode_patterns(r.view_patterns)}};
  file["checksum"] = hash_hex(file.dump());
  return file.dump();
}

namespace {

RunResult result_of(const json& j, const RunSpec& spec) {
  RunResult r;
  r.spec = spec;
  r.params = j.at("params").get<std::int64_t>();
  r.attention_params = j.at("attention_params").get<std::int64_t>();
  r.head_params = j.at("head_params").get<std::vector<std::int64_t>>();
  for (const auto& p : j.at("curve")) r.curve.push_back(point_of(p));
  if (j.contains("initial")) r.initial = point_of(j.at("initial"));
  if (j.contains("final_point")) r.final_point = point_of(j.at("final_point"));
  r.final_val_loss = number_of(j.at("final_val_loss"));
  r.final_val_acc = number_of(j.at("final_val_acc"));
  r.final_test_loss = number_of(j.at("final_test_loss"));
  r.final_test_acc = number_of(j.at("final_test_acc"));
  r.solved_step = optional_of(j.at("solved_step"));
  r.phase_step = optional_of(j.at("phase_step"));
  r.importance_raw = matrix_of(j.at("importance_raw"));
  r.importance_normalized = matrix_of(j.at("importance_normalized"));
  r.by_importance = curve_of(j.at("by_importance"));
  r.greedy = curve_of(j.at("greedy"));
  const json& b = j.at("random");
  r.random.orders = b.at("orders").get<std::int64_t>();
  r.random.mean_accuracy = numbers_of(b.at("mean_accuracy"));
  r.random.low_accuracy = numbers_of(b.at("low_accuracy"));
  r.random.high_accuracy = numbers_of(b.at("high_accuracy"));
  r.random.mean_loss = numbers_of(b.at("mean_loss"));
  r.random.low_loss = numbers_of(b.at("low_loss"));
  r.random.high_loss = numbers_of(b.at("high_loss"));
  for (std::size_t k = 0; k < r.random.mean_accuracy.size(); ++k)
    r.random.removed.push_back(static_cast<std::int64_t>(k));
  for (const auto& layer : j.at("patterns")) r.patterns.push_back(matrix_of(layer));
  r.sample_tokens = j.at("sample_tokens").get<std::vector<std::int64_t>>();
  r.patching = matrix_of(j.at("patching"));
  r.patching_prompts = j.at("patching_prompts").get<std::int64_t>();
  r.patching_clean = number_of(j.at("patching_clean"));
  r.patching_corrupted = number_of(j.at("patching_corrupted"));
  r.restoring_heads = j.at("restoring_heads").get<std::int64_t>();
  r.restoring_fraction = number_of(j.at("restoring_fraction"));
  r.seconds = j.at("seconds").get<double>();
  if (j.contains("circuit")) r.circuit = circuit_of(j.at("circuit"));
  if (j.contains("view")) {
    const json& v = j.at("view");
    r.view_length = v.at("length").get<std::int64_t>();
    r.view_tokens = v.at("tokens").get<std::vector<std::int64_t>>();
    r.view_patterns = headgrad::inspect::decode_patterns(v.at("patterns").get<std::string>());
  }
  r.inspect_seconds = j.at("inspect_seconds").get<double>();
  r.cached = true;
  return r;
}

}  // namespace

std::string cache_dir_of(const StudyConfig& config) {
  return config.cache_dir.empty() ? (fs::path(config.out_dir) / "cache").string()
                                  : config.cache_dir;
}

namespace {

// Why the parsed file `j` (values already checked) cannot stand for its run ("" when it
// can): a checksum that does not match the rest of the file. `unchecked` is set for a file
// without one.
std::string checksum_problem(json& j, bool& unchecked) {
  unchecked = !j.contains("checksum");
  if (unchecked) return "";
  const std::string stored = j.at("checksum").get<std::string>();
  j.erase("checksum");
  const std::string computed = hash_hex(j.dump());
  if (stored == computed) return "";
  return "its checksum " + stored + " does not match its content (" + computed +
         "): it was edited or damaged";
}

// What is wrong with the file's text for `spec`'s run, "" when nothing: sets `result`.
std::string problem_of(const std::string& text, const StudyConfig& config, const RunSpec& spec,
                       CachedRun& cached) {
  json j = json::parse(text);
  if (!j.is_object()) return "it is not a JSON object";
  // A hash collision or an edited file: the stored configuration must be this run's.
  if (j.at("config").get<std::string>() != spec.config_text(config))
    return "it holds another run's configuration";
  RunResult result = result_of(j, spec);
  // The values first, so that an edit out of range is named; then the checksum, which
  // catches edits within range (a changed digit).
  if (std::string problem = check_cached_run(result, config); !problem.empty()) return problem;
  if (std::string problem = checksum_problem(j, cached.unchecked); !problem.empty()) return problem;
  cached.result = std::move(result);
  return "";
}

}  // namespace

CachedRun read_cached(const StudyConfig& config, const RunSpec& spec) {
  CachedRun cached;
  cached.path = (fs::path(cache_dir_of(config)) / (spec.key(config) + ".json")).string();
  std::ifstream in(cached.path);
  if (!in) return cached;
  std::stringstream text;
  text << in.rdbuf();
  try {
    cached.problem = problem_of(text.str(), config, spec, cached);
  } catch (const std::exception& e) {
    cached.problem = std::string("it cannot be read as a cached run: ") + e.what();
  }
  // A run of a --view-seeds seed cached before it recorded the view's patterns (an older
  // cache, or another seed list) is trained again to record them; --cached-only trains
  // nothing, so there it is used as it is (and view.html leaves it out).
  if (cached.problem.empty() && cached.result && !cached.result->sample_tokens.empty() &&
      cached.result->view_patterns.empty() && records_view(config, spec) && !config.cached_only)
    cached.problem = "it lacks the patterns view.html shows (its seed is in --view-seeds)";
  if (cached.problem.empty() && cached.result && !cached.result->circuit.recorded() &&
      config.circuit_keys.count(spec.key(config)) && !config.cached_only)
    cached.problem = "it lacks the circuit into layer 0 (its model's best-rate runs record one)";
  if (!cached.problem.empty()) cached.result.reset();
  return cached;
}

void write_cached(const StudyConfig& config, const RunResult& result) {
  const fs::path dir(cache_dir_of(config));
  fs::create_directories(dir);
  write_file_atomically(dir / (result.spec.key(config) + ".json"),
                        result_to_json(result, result.spec.config_text(config)) + "\n");
}

PartialRun::PartialRun(const StudyConfig& config, const RunSpec& spec)
    : config_(config),
      spec_(spec),
      dir_((fs::path(cache_dir_of(config)) / "partial" / spec.key(config)).string()) {}

std::optional<RunResult> PartialRun::load() const {
  std::ifstream in(fs::path(dir_) / "partial.json");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json j = json::parse(text.str());
    if (j.at("config").get<std::string>() != spec_.config_text(config_)) return std::nullopt;
    RunResult r = result_of(j, spec_);
    r.cached = false;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged file: the run starts over
  }
}

void PartialRun::save(const RunResult& result) const {
  fs::create_directories(dir_);
  write_file_atomically(fs::path(dir_) / "partial.json",
                        result_to_json(result, spec_.config_text(config_)) + "\n");
}

void PartialRun::remove() const {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

StaleFiles remove_stale_cache_files(const StudyConfig& config) {
  const fs::path dir(cache_dir_of(config));
  return {remove_stale_temp_files(dir), remove_stale_claims(dir)};
}

}  // namespace heads_compare
