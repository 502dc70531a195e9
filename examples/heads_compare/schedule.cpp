// heads_compare's scheduler (see execute_all in study.hpp): every run read from the cache
// when a valid file holds it, otherwise trained (config.jobs at a time, spread over the
// ranks of an mpirun by claims; the runs of one model as one ensemble unless --no-ensemble)
// and written to the cache as soon as each finishes.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "cache.hpp"
#include "claims.hpp"
#include "headgrad/core/error.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

using OnDone = std::function<void(const RunResult&, std::size_t, std::size_t, std::size_t)>;

// The plan's runs once each: runs of one configuration in two arms (e.g. fixed_width H=4
// and fixed_head_dim d=16, H=4 at E=64) are trained once; the others copy the first.
struct Plan {
  std::vector<std::size_t> unique;                          // first occurrences
  std::vector<std::pair<std::size_t, std::size_t>> copies;  // (copy, original)
};

Plan plan_of(const StudyConfig& config, const std::vector<RunSpec>& runs) {
  Plan plan;
  std::map<std::string, std::size_t> first_of_key;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto [it, added] = first_of_key.emplace(runs[i].key(config), i);
    if (added)
      plan.unique.push_back(i);
    else
      plan.copies.emplace_back(i, it->second);
  }
  return plan;
}

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

void say_removed(const StudyConfig& config, const StaleFiles& stale) {
  if (stale.temporary + stale.claims == 0) return;
  std::fprintf(stderr,
               "heads_compare: removed from the cache folder %s %d temporary file(s) of "
               "interrupted writes and %d claim(s) of runs whose process ended\n",
               cache_dir_of(config).c_str(), stale.temporary, stale.claims);
}

// Reads every unique run from the cache: fills `results` and returns the runs to train.
// A file that fails its checks is named on stderr and its run trained again.
std::vector<std::size_t> read_cache(const StudyConfig& config, const std::vector<RunSpec>& runs,
                                    const Plan& plan, std::vector<RunResult>& results,
                                    const OnDone& on_done) {
  std::vector<std::size_t> todo;
  std::size_t done = 0, unchecked = 0;
  for (std::size_t i : plan.unique) {
    CachedRun cached = read_cached(config, runs[i]);
    if (!cached.problem.empty())
      std::fprintf(
          stderr, "heads_compare: cache file %s: %s; %s\n", cached.path.c_str(),
          cached.problem.c_str(),
          config.cached_only ? "left out (--cached-only trains nothing)" : "retraining this run");
    if (!cached.result) {
      todo.push_back(i);
      continue;
    }
    unchecked += cached.unchecked;
    results[i] = std::move(*cached.result);
    if (on_done) on_done(results[i], ++done, plan.unique.size(), 0);
  }
  if (unchecked > 0)
    std::fprintf(stderr,
                 "heads_compare: %zu cache file(s) in %s carry no checksum (restored by "
                 "scripts/study_archive.py, or written by an earlier heads_compare): their "
                 "values were checked, a changed digit cannot be\n",
                 unchecked, cache_dir_of(config).c_str());
  return todo;
}

// The work items of `todo`: with config.ensemble, the runs of one task and one model (any
// learning rates and seeds) form one item, trained as one ensemble (at most
// config.ensemble_size runs, 0 = no limit); otherwise one run per item. Plan order.
std::vector<std::vector<std::size_t>> work_items(const StudyConfig& config,
                                                 const std::vector<RunSpec>& runs,
                                                 const std::vector<std::size_t>& todo) {
  std::vector<std::vector<std::size_t>> items;
  std::map<std::string, std::size_t> item_of;
  for (std::size_t i : todo) {
    if (!config.ensemble) {
      items.push_back({i});
      continue;
    }
    const RunSpec& r = runs[i];
    const std::string key = r.task.name + "/" + std::to_string(r.task.steps) + "/" +
                            std::to_string(r.model.layers) + "/" + std::to_string(r.model.heads) +
                            "/" + std::to_string(r.model.head_dim) + "/" +
                            std::to_string(r.model.d_model);
    const auto it = item_of.find(key);
    if (it != item_of.end() &&
        (config.ensemble_size <= 0 ||
         items[it->second].size() < static_cast<std::size_t>(config.ensemble_size))) {
      items[it->second].push_back(i);
      continue;
    }
    item_of[key] = items.size();
    items.push_back({i});
  }
  return items;
}

// Trains the runs of `todo` on config.jobs threads (under mpirun: those this rank claims),
// as ensembles unless --no-ensemble, and caches each run as soon as it is done; returns the
// ones this rank trained. The first failure is rethrown.
std::vector<std::size_t> train(const StudyConfig& config, const std::vector<RunSpec>& runs,
                               const std::vector<std::size_t>& todo, const std::string& session,
                               std::vector<RunResult>& results, std::size_t done, std::size_t total,
                               const OnDone& on_done) {
  const std::vector<std::vector<std::size_t>> items = work_items(config, runs, todo);
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::size_t> mine;
  const fs::path dir(cache_dir_of(config));
  auto finished = [&](std::size_t i, RunResult result) {
    results[i] = std::move(result);
    write_cached(config, results[i]);
    PartialRun(config, results[i].spec).remove();  // its checkpoint, once the run is cached
    std::lock_guard<std::mutex> lock(mutex);
    mine.push_back(i);
    if (on_done) on_done(results[i], ++done, total, mine.size());
  };
  auto worker = [&] {
    for (std::size_t t = next++; t < items.size(); t = next++) {
      try {
        std::vector<std::size_t> claimed;
        for (std::size_t i : items[t])
          if (session.empty() || claim(dir, runs[i].key(config), session)) claimed.push_back(i);
        if (claimed.empty()) continue;
        if (!config.ensemble) {
          finished(claimed[0], execute_run(config, runs[claimed[0]]));
          continue;
        }
        std::vector<RunSpec> specs;
        for (std::size_t i : claimed) specs.push_back(runs[i]);
        execute_ensemble(config, specs,
                         [&](std::size_t k, RunResult r) { finished(claimed[k], std::move(r)); });
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = items.size();
        return;
      }
    }
  };
  const int jobs = std::max(1, std::min<int>(config.jobs, static_cast<int>(items.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return mine;
}

// Rank 0, after every rank is done: the results other ranks trained, from the cache.
void collect(const StudyConfig& config, const std::vector<RunSpec>& runs,
             const std::vector<std::size_t>& todo, const std::vector<std::size_t>& mine,
             std::vector<RunResult>& results) {
  for (std::size_t i : todo) {
    if (std::find(mine.begin(), mine.end(), i) != mine.end()) continue;
    CachedRun cached = read_cached(config, runs[i]);
    if (!cached.result) {
      const std::string why =
          cached.problem.empty() ? "is not there" : "cannot be used: " + cached.problem;
      throw headgrad::Error("heads_compare: run " + runs[i].name() +
                            " was trained by another rank, but its cache file " + cached.path +
                            " " + why + " (do all ranks share the cache folder? --cache)");
    }
    results[i] = std::move(*cached.result);
    results[i].cached = false;  // trained in this invocation, by another rank
  }
}

// Fills the copies of shared runs and, with --cached-only, drops the runs left out.
void finish(const StudyConfig& config, const std::vector<RunSpec>& runs, const Plan& plan,
            std::vector<RunResult>& results) {
  // A run left out has an empty task name; its copies are left out with it.
  auto present = [&](std::size_t i) { return !results[i].spec.task.name.empty(); };
  for (const auto& [copy, original] : plan.copies) {
    if (!present(original)) continue;
    results[copy] = results[original];
    results[copy].spec = runs[copy];  // the arm it is listed under
  }
  if (config.cached_only)
    results.erase(std::remove_if(results.begin(), results.end(),
                                 [](const RunResult& r) { return r.spec.task.name.empty(); }),
                  results.end());
}

}  // namespace

std::vector<RunResult> execute_all(const StudyConfig& config, const std::vector<RunSpec>& runs,
                                   const OnDone& on_done,
                                   headgrad::distributed::ProcessGroup& group) {
  const bool distributed = group.size() > 1, speaks = group.rank() == 0;
  if (distributed && config.cached_only && !speaks) return {};
  std::vector<RunResult> results(runs.size());
  const Plan plan = plan_of(config, runs);
  // Rank 0 reads the cache for all (the other ranks take its list of runs to train).
  std::vector<std::size_t> todo = plan.unique;
  if (speaks) {
    say_removed(config, remove_stale_cache_files(config));
    todo = read_cache(config, runs, plan, results, on_done);
  }
  if (config.cached_only) todo.clear();  // left out: results[i] stays empty
  if (distributed) todo = agreed_todo(todo, group);
  const std::string session = distributed ? claim_session(group) : "";
  const std::size_t cached = plan.unique.size() - todo.size();
  const auto mine =
      train(config, runs, todo, session, results, speaks ? cached : 0, plan.unique.size(), on_done);
  if (distributed) {
    // Every rank's runs are in the cache once all have passed this point; a long run on
    // another rank may keep this one waiting for a while.
    const double timeout = group.timeout_seconds();
    group.set_timeout_seconds(7 * 24 * 3600.0);
    group.barrier();
    group.set_timeout_seconds(timeout);
    if (!speaks) {
      // Every result, from the cache, so that every rank plans the same follow-up runs.
      read_cache(config, runs, plan, results, {});
      finish(config, runs, plan, results);
      return results;
    }
    collect(config, runs, todo, mine, results);
    remove_session_claims(cache_dir_of(config), session);
  }
  finish(config, runs, plan, results);
  return results;
}

}  // namespace heads_compare
