// heads_compare's run cache and scheduler (see study.hpp): every finished run is one JSON
// file <cache_dir>/<key>.json holding its configuration text and its results, written
// atomically (a temporary file renamed into place), so an interrupted study loses only the
// runs that were in flight and a rerun reuses every run whose configuration is unchanged.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cache.hpp"
#include "headgrad/core/error.hpp"

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

}  // namespace

std::string result_to_json(const RunResult& r, const std::string& config_text) {
  json curve = json::array();
  for (const EvalPoint& p : r.curve)
    curve.push_back({{"step", p.step},
                     {"train_loss", number(p.train_loss)},
                     {"train_accuracy", number(p.train_accuracy)},
                     {"loss", number(p.loss)},
                     {"accuracy", number(p.accuracy)},
                     {"previous_token", matrix(p.previous_token)},
                     {"induction", matrix(p.induction)},
                     {"induction_all", matrix(p.induction_all)},
                     {"grad_z", matrix(p.grad_z)}});
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
                  {"seconds", r.seconds},
                  {"inspect_seconds", r.inspect_seconds}};
  return j.dump();
}

RunResult result_from_json(const std::string& text, const RunSpec& spec) {
  const json j = json::parse(text);
  RunResult r;
  r.spec = spec;
  r.params = j.at("params").get<std::int64_t>();
  r.attention_params = j.at("attention_params").get<std::int64_t>();
  r.head_params = j.at("head_params").get<std::vector<std::int64_t>>();
  for (const auto& p : j.at("curve"))
    r.curve.push_back({p.at("step").get<std::int64_t>(), number_of(p.at("train_loss")),
                       number_of(p.at("train_accuracy")), number_of(p.at("loss")),
                       number_of(p.at("accuracy")), matrix_of(p.at("previous_token")),
                       matrix_of(p.at("induction")), matrix_of(p.at("induction_all")),
                       matrix_of(p.at("grad_z"))});
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
  r.seconds = j.at("seconds").get<double>();
  r.inspect_seconds = j.at("inspect_seconds").get<double>();
  r.cached = true;
  return r;
}

std::string cache_dir_of(const StudyConfig& config) {
  return config.cache_dir.empty() ? (fs::path(config.out_dir) / "cache").string()
                                  : config.cache_dir;
}

std::optional<RunResult> read_cached(const StudyConfig& config, const RunSpec& spec) {
  const fs::path path = fs::path(cache_dir_of(config)) / (spec.key(config) + ".json");
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json head = json::parse(text.str());
    // A hash collision or an edited file: the stored configuration must be this run's.
    if (head.at("config").get<std::string>() != spec.config_text(config)) return std::nullopt;
    return result_from_json(text.str(), spec);
  } catch (const std::exception&) {
    return std::nullopt;  // a truncated or foreign file: the run is trained again
  }
}

void write_cached(const StudyConfig& config, const RunResult& result) {
  const fs::path dir(cache_dir_of(config));
  fs::create_directories(dir);
  const std::string key = result.spec.key(config);
  std::ostringstream tmp_name;
  tmp_name << key << ".json.tmp." << std::this_thread::get_id();
  const fs::path tmp = dir / tmp_name.str();
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << result_to_json(result, result.spec.config_text(config)) << "\n";
    if (!out) throw headgrad::Error("heads_compare: cannot write the cache file " + tmp.string());
  }
  fs::rename(tmp, dir / (key + ".json"));
}

namespace {

// The runs in `todo` as rank 0 sees them, on every rank (ranks that read the cache a moment
// apart could otherwise disagree on what is left).
std::vector<std::size_t> agreed_todo(const std::vector<std::size_t>& todo,
                                     headgrad::distributed::ProcessGroup& group) {
  if (group.size() == 1) return todo;
  headgrad::Tensor count =
      headgrad::scalar_tensor(static_cast<double>(todo.size()), headgrad::kInt64);
  group.broadcast(count, 0);
  std::vector<std::int64_t> mine(todo.begin(), todo.end());
  mine.resize(static_cast<std::size_t>(count.item<std::int64_t>()));
  headgrad::Tensor list =
      headgrad::from_vector<std::int64_t>(mine, {static_cast<std::int64_t>(mine.size())});
  group.broadcast(list, 0);
  const auto agreed = list.to_vector<std::int64_t>();
  return {agreed.begin(), agreed.end()};
}

// A name for this invocation's claims, the same on every rank: claims of an earlier,
// interrupted study never block this one.
std::string claim_session(headgrad::distributed::ProcessGroup& group) {
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  headgrad::Tensor id =
      headgrad::scalar_tensor(static_cast<double>((static_cast<std::uint64_t>(now) ^
                                                   (std::random_device{}() * 2654435761ull)) &
                                                  ((std::uint64_t{1} << 52) - 1)),
                              headgrad::kInt64);
  group.broadcast(id, 0);
  return std::to_string(id.item<std::int64_t>());
}

// True for the one caller (any rank, any thread) that creates the run's claim file.
bool claim(const StudyConfig& config, const RunSpec& spec, const std::string& session) {
  const fs::path dir(cache_dir_of(config));
  fs::create_directories(dir);
  const fs::path path = dir / (spec.key(config) + ".claim-" + session);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw headgrad::Error("heads_compare: cannot create the claim file " + path.string() + ": " +
                          std::strerror(errno));
  }
  ::close(fd);
  return true;
}

}  // namespace

std::vector<RunResult> execute_all(
    const StudyConfig& config, const std::vector<RunSpec>& runs,
    const std::function<void(const RunResult&, std::size_t, std::size_t, std::size_t)>& on_done,
    headgrad::distributed::ProcessGroup& group) {
  const bool distributed = group.size() > 1;
  if (distributed && config.cached_only && group.rank() != 0) return {};
  std::vector<RunResult> results(runs.size());
  std::vector<std::size_t> todo;
  // Runs of one configuration in two arms (e.g. fixed_width H=4 and fixed_head_dim d=16,
  // H=4 at E=64) are trained once: the first occurrence trains, the others copy it.
  std::map<std::string, std::size_t> first_of_key;
  std::vector<std::pair<std::size_t, std::size_t>> copies;
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string key = runs[i].key(config);
    if (auto it = first_of_key.find(key); it != first_of_key.end()) {
      copies.emplace_back(i, it->second);
      continue;
    }
    first_of_key[key] = i;
    unique.push_back(i);
  }
  const std::size_t total = unique.size();
  std::size_t done = 0, trained = 0;
  for (std::size_t i : unique) {
    if (auto cached = read_cached(config, runs[i])) {
      results[i] = std::move(*cached);
      if (on_done) on_done(results[i], ++done, total, trained);
    } else {
      todo.push_back(i);
    }
  }
  if (config.cached_only) todo.clear();  // left out: results[i] stays empty
  if (distributed) todo = agreed_todo(todo, group);
  const std::string session = distributed ? claim_session(group) : "";
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::size_t> mine;  // what this rank trained
  auto worker = [&] {
    for (std::size_t t = next++; t < todo.size(); t = next++) {
      const std::size_t i = todo[t];
      try {
        if (distributed && !claim(config, runs[i], session)) continue;  // another rank's
        results[i] = execute_run(config, runs[i]);
        write_cached(config, results[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = todo.size();
        return;
      }
      std::lock_guard<std::mutex> lock(mutex);
      mine.push_back(i);
      ++trained;
      if (on_done) on_done(results[i], ++done, total, trained);
    }
  };
  const int jobs = std::max(1, std::min<int>(config.jobs, static_cast<int>(todo.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  if (distributed) {
    // Every rank's runs are in the cache once all have passed this point; a long run on
    // another rank may keep this one waiting for a while.
    const double timeout = group.timeout_seconds();
    group.set_timeout_seconds(7 * 24 * 3600.0);
    group.barrier();
    group.set_timeout_seconds(timeout);
    if (group.rank() != 0) return {};
    for (std::size_t i : todo) {
      if (std::find(mine.begin(), mine.end(), i) != mine.end()) continue;
      auto cached = read_cached(config, runs[i]);
      if (!cached)
        throw headgrad::Error("heads_compare: run " + runs[i].name() +
                              " was trained by another rank, but its cache file cannot be read "
                              "(do all ranks share the cache folder? --cache-dir)");
      results[i] = std::move(*cached);
      results[i].cached = false;  // trained in this invocation, by another rank
    }
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cache_dir_of(config), ec))
      if (entry.path().filename().string().find(".claim-" + session) != std::string::npos)
        fs::remove(entry.path(), ec);
  }
  // A run left out has an empty task name; its copies are left out with it.
  auto present = [&](std::size_t i) { return !results[i].spec.task.name.empty(); };
  for (const auto& [copy, original] : copies) {
    if (!present(original)) continue;
    const RunSpec spec = runs[copy];
    results[copy] = results[original];
    results[copy].spec = spec;  // the arm it is listed under
  }
  if (config.cached_only)
    results.erase(std::remove_if(results.begin(), results.end(),
                                 [](const RunResult& r) { return r.spec.task.name.empty(); }),
                  results.end());
  return results;
}

}  // namespace heads_compare
