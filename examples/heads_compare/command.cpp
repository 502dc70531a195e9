// heads_compare's command line: the options, their checks, and the whole invocation (plan,
// train or read the cache, aggregate, write the report), shared by the program (main.cpp)
// and the Python module (headgrad.study.heads_compare).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "../common/cli_checks.hpp"
#include "../common/device.hpp"
#include "../common/ranks_agree.hpp"
#include "aggregate.hpp"
#include "atomic_write.hpp"
#include "cache.hpp"
#include "command.hpp"
#include "folder_lock.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/threads.hpp"
#include "report.hpp"
#include "study.hpp"

namespace {

// The CPU's default cap on runs per ensemble (--ensemble-size).
constexpr std::int64_t kCpuEnsembleSize = 10;

std::string joined_command(int argc, char** argv) {
  std::string s = "heads_compare";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

std::string clock_text(double seconds) {
  char buf[32];
  const long s = static_cast<long>(seconds + 0.5);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

void validate(const heads_compare::StudyConfig& c) {
  using headgrad::ValueError;
  if (c.tasks.empty() || c.arms.empty() || c.heads.empty() || c.seeds.empty() || c.lrs.empty())
    throw ValueError(
        "heads_compare: --tasks, --arms, --heads, --seeds and --lrs must be non-empty");
  for (std::int64_t h : c.heads)
    if (h <= 0 || c.d_model % h != 0)
      throw ValueError("heads_compare: head count " + std::to_string(h) +
                       " does not divide d_model " + std::to_string(c.d_model) +
                       " (the fixed_width arm needs d = d_model / H)");
  for (double lr : c.lrs)
    if (!(lr > 0) || lr > 1)
      throw ValueError("heads_compare: learning rate " + std::to_string(lr) +
                       " must lie in (0, 1]");
  for (const auto& t : c.tasks) {
    if (t.steps < 1)
      throw ValueError("heads_compare: task " + t.name + " has " + std::to_string(t.steps) +
                       " steps; at least 1");
    heads_compare::RunSpec probe;
    probe.task = t;
    heads_compare::make_run_task(probe);  // its options and char_lm's corpus, before any run
  }
  if (c.jobs < 1) throw ValueError("heads_compare: --jobs must be at least 1");
}

// Rank 0 locks the output folder for the whole invocation (other ranks of an mpirun write
// only into the cache) and removes temporary files that killed writes left there; every
// rank learns whether the lock was taken, so a refused world ends as one.
std::unique_ptr<heads_compare::FolderLock> lock_out_dir(
    const std::string& dir, headgrad::distributed::ProcessGroup& group) {
  std::unique_ptr<heads_compare::FolderLock> lock;
  std::string refusal;
  if (group.rank() == 0) {
    try {
      lock = std::make_unique<heads_compare::FolderLock>(dir);
    } catch (const std::exception& e) {
      refusal = e.what();
    }
  }
  if (group.size() > 1) {
    headgrad::Tensor refused = headgrad::scalar_tensor(refusal.empty() ? 0 : 1, headgrad::kInt64);
    group.broadcast(refused, 0);
    if (group.rank() != 0 && refused.item<std::int64_t>() != 0)
      throw headgrad::Error("heads_compare: rank " + std::to_string(group.rank()) +
                            ": rank 0 could not lock the output folder '" + dir +
                            "' (its message says why)");
  }
  if (!refusal.empty()) throw headgrad::Error(refusal);
  if (lock) {
    const std::filesystem::path out(dir);
    for (const auto& folder : {out, out / "plots", out / "plots" / "data"})
      heads_compare::remove_stale_temp_files(folder);
  }
  return lock;
}

// The follow-up stages (study.hpp, followup_runs): the rates past the grid's edge, then the
// long budget; each stage's runs are trained (or read from the cache) and merged into
// `results` in the study's order. Every rank plans the same runs (execute_all gives every
// rank every result), except under --cached-only, where only rank 0 has results.
// The circuit stage (study.hpp, circuit_runs): best-rate runs cached before they recorded
// a Circuit are trained again and replace their cached results (in every arm that shares
// them). Training is deterministic: a retrained run whose final loss differs (beyond the
// archive's 7 digits) is named.
template <typename Progress>
void run_circuit_stage(const heads_compare::StudyConfig& c,
                       std::vector<heads_compare::RunResult>& results, const Progress& progress,
                       headgrad::distributed::ProcessGroup& group, bool quiet) {
  const auto again = heads_compare::circuit_runs(c, results);
  if (again.empty()) return;
  if (!quiet)
    std::fprintf(stderr,
                 "heads_compare: %zu best-rate runs trained again to record their circuit into "
                 "layer 0\n",
                 again.size());
  heads_compare::StudyConfig with_keys = c;
  for (const auto& spec : again) with_keys.circuit_keys.insert(spec.key(c));
  std::map<std::string, heads_compare::RunResult> fresh;
  for (auto& r : heads_compare::execute_all(with_keys, again, progress, group))
    fresh.emplace(r.spec.key(c), std::move(r));
  for (auto& r : results) {
    const auto it = fresh.find(r.spec.key(c));
    if (it == fresh.end()) continue;
    // Archived runs keep 7 significant digits (scripts/study_archive.py).
    if (std::abs(it->second.final_test_loss - r.final_test_loss) >
        1e-6 * std::max(1.0, std::abs(r.final_test_loss)))
      std::fprintf(stderr, "heads_compare: %s trained again ends at loss %.17g, not %.17g\n",
                   r.spec.name().c_str(), it->second.final_test_loss, r.final_test_loss);
    const heads_compare::RunSpec spec = r.spec;  // keep the arm it stands in
    r = it->second;
    r.spec = spec;
  }
}

template <typename Progress>
void run_followups(const heads_compare::StudyConfig& c,
                   std::vector<heads_compare::RunResult>& results, const Progress& progress,
                   headgrad::distributed::ProcessGroup& group, bool quiet) {
  if (c.cached_only && group.size() > 1) return;
  for (int stage = 1; stage <= 2; ++stage) {
    const auto more = heads_compare::followup_runs(c, results, stage);
    if (more.empty()) continue;
    if (!quiet)
      std::fprintf(
          stderr, "heads_compare: %zu more runs %s\n", more.size(),
          stage == 1 ? "at a rate past the grid's edge (models whose best rate is there)"
                     : ("at the long budget (" + std::to_string(c.long_budget) +
                        "x the steps) for the fixed_width and head_grid models at their best rates")
                           .c_str());
    auto extra = heads_compare::execute_all(c, more, progress, group);
    for (auto& r : extra) results.push_back(std::move(r));
    heads_compare::sort_results(c, results);
  }
  run_circuit_stage(c, results, progress, group, quiet);
}

// The command line's values before they become a StudyConfig (negative or zero = the
// preset's).
struct CommandLine {
  std::string preset = "default", device_text = "cpu", out_dir, cache_dir, corpus;
  std::vector<std::string> tasks, arms;
  std::vector<std::int64_t> heads;
  std::vector<double> lrs;
  std::int64_t seeds = 0, steps = 0;
  std::vector<std::int64_t> view_seeds;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quiet = false, cached_only = false, no_ensemble = false;
  std::int64_t long_budget = -1;       // -1: the preset's
  int extend_lrs = 0;                  // +1 --extend-lrs, -1 --no-extend-lrs, 0 the preset's
  std::int64_t ensemble_size = -1;     // -1: by device (see config_of)
  std::int64_t checkpoint_every = -1;  // -1: the preset's
};

// What the study trains: the preset's tasks, models, grid and seeds, and their overrides.
void add_design_options(CLI::App& app, CommandLine& o) {
  using headgrad::examples::integer_in;
  app.add_option("--preset", o.preset, "smoke (< 1 min), default (<= 10 min on 2 cores), full")
      ->capture_default_str();
  app.add_option("--tasks", o.tasks, "keep only these of the preset's tasks")->delimiter(',');
  app.add_option("--arms", o.arms, "fixed_width, fixed_head_dim, head_size, one_layer, head_grid")
      ->delimiter(',');
  app.add_option("--heads", o.heads, "head counts (override the preset's)")
      ->delimiter(',')
      ->check(integer_in(1, 4096));
  app.add_option("--lrs", o.lrs, "learning-rate grid (override the preset's)")
      ->delimiter(',')
      ->check(headgrad::examples::real_in(0, 1, headgrad::examples::Open::low));
  app.add_option("--seeds", o.seeds, "seeds per cell: 0 .. N-1 (override the preset's)")
      ->check(integer_in(1, 10000));
  app.add_option("--steps", o.steps, "training steps of every task (override the preset's)")
      ->check(integer_in(1, 1e9));
  app.add_flag("--extend-lrs,!--no-extend-lrs", o.extend_lrs,
               "train a model whose best rate is at the grid's edge one rate past it too "
               "(default: on in the full preset)");
  app.add_option(
         "--long-budget", o.long_budget,
         "train every fixed_width and head_grid model also at this many times its "
         "task's steps, at its best rate (0 = not; default: 3 in the full preset, 0 otherwise)")
      ->check(integer_in(0, 100));
  app.add_option("--corpus", o.corpus,
                 "char_lm's text: a UTF-8 file or folder (default the Debian fortunes "
                 "package's /usr/share/games/fortunes)")
      ->check(headgrad::examples::non_empty("name a UTF-8 file or folder, or leave --corpus "
                                            "out for " +
                                            headgrad::train::default_corpus()));
  app.add_option("--view-seeds", o.view_seeds,
                 "seeds whose runs view.html shows (default 0); runs of these seeds cached "
                 "without the view's patterns are trained again")
      ->delimiter(',')
      ->check(integer_in(0, 9999));
}

// How it runs and where it writes.
void add_run_options(CLI::App& app, CommandLine& o) {
  app.add_option("--jobs", o.jobs, "runs trained at once, one thread each (1 on a GPU)")
      ->check(headgrad::examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_flag("--no-ensemble", o.no_ensemble,
               "train one run at a time (the results are the same; the runs of one task and "
               "model otherwise train as one ensemble, several times faster on a GPU)");
  app.add_option("--ensemble-size", o.ensemble_size,
                 "at most this many runs per ensemble (0 = all the runs of one task and "
                 "model; default 10 on the CPU, where larger ensembles outgrow the caches, "
                 "0 on a GPU)")
      ->check(headgrad::examples::integer_in(0, 100000));
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "checkpoint each run every N steps into <cache>/partial and resume an "
                 "interrupted run from there, bitwise (0 = not; runs then train one at a time; "
                 "default: 1000 in the text_long preset, 0 otherwise)")
      ->check(headgrad::examples::integer_in(0, 1e9));
  headgrad::examples::add_device_option(app, o.device_text);
  app.add_option("--out", o.out_dir, "run folder (default runs/heads_compare[-<preset>])");
  app.add_option("--cache", o.cache_dir, "run cache folder (default <out>/cache)");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.add_flag("--cached-only", o.cached_only,
               "train nothing: report the runs already in the cache (a partial study states "
               "how many runs it lacks)");
}

// The preset's tasks narrowed to --tasks (in its order), with --steps and --corpus.
std::vector<heads_compare::TaskSetting> tasks_of(const CommandLine& o,
                                                 const heads_compare::StudyConfig& c) {
  std::vector<heads_compare::TaskSetting> kept = c.tasks;
  if (!o.tasks.empty()) {
    kept.clear();
    for (const auto& name : o.tasks) {
      auto it = std::find_if(c.tasks.begin(), c.tasks.end(),
                             [&](const auto& t) { return t.name == name; });
      if (it == c.tasks.end())
        throw headgrad::ValueError("heads_compare: task '" + name + "' is not in the " + o.preset +
                                   " preset");
      kept.push_back(*it);
    }
  }
  bool language = false;
  for (auto& t : kept) {
    if (o.steps > 0) t.steps = o.steps;
    if (!o.corpus.empty() && t.name == "char_lm") t.corpus = o.corpus, language = true;
  }
  if (!o.corpus.empty() && !language)
    throw headgrad::ValueError(
        "heads_compare: --corpus is char_lm's text, but the study has "
        "no char_lm task (--tasks, --preset)");
  return kept;
}

// The study's design: the preset with the command line's overrides.
heads_compare::StudyConfig design_of(const CommandLine& o) {
  headgrad::examples::check_no_duplicates(o.tasks, "--tasks");
  headgrad::examples::check_no_duplicates(o.arms, "--arms");
  headgrad::examples::check_no_duplicates(o.heads, "--heads");
  headgrad::examples::check_no_duplicates(o.lrs, "--lrs");
  headgrad::examples::check_no_duplicates(o.view_seeds, "--view-seeds");
  heads_compare::StudyConfig c = heads_compare::preset_config(o.preset);
  c.tasks = tasks_of(o, c);
  if (!o.arms.empty()) c.arms = o.arms;
  if (!o.heads.empty()) c.heads = o.heads;
  if (!o.lrs.empty()) c.lrs = o.lrs;
  if (o.seeds > 0) {
    c.seeds.clear();
    for (std::int64_t s = 0; s < o.seeds; ++s) c.seeds.push_back(static_cast<std::uint64_t>(s));
  }
  if (!o.view_seeds.empty()) c.view_seeds.clear();
  for (const std::int64_t s : o.view_seeds) {
    if (std::find(c.seeds.begin(), c.seeds.end(), static_cast<std::uint64_t>(s)) == c.seeds.end())
      throw headgrad::ValueError("heads_compare: --view-seeds " + std::to_string(s) +
                                 " is not one of the study's seeds (0 .. " +
                                 std::to_string(c.seeds.size() - 1) + ")");
    c.view_seeds.push_back(static_cast<std::uint64_t>(s));
  }
  if (o.extend_lrs != 0) c.extend_lrs = o.extend_lrs > 0;
  if (o.long_budget >= 0) c.long_budget = o.long_budget;
  return c;
}

// The design with how it runs: jobs, ensembles, folders, device.
heads_compare::StudyConfig config_of(const CommandLine& o) {
  heads_compare::StudyConfig c = design_of(o);
  c.jobs = o.jobs;
  if (o.checkpoint_every >= 0) c.checkpoint_every = o.checkpoint_every;
  // A checkpoint belongs to one run: runs that checkpoint train one at a time.
  c.ensemble = !o.no_ensemble && c.checkpoint_every == 0;
  c.out_dir = !o.out_dir.empty()      ? o.out_dir
              : o.preset == "default" ? std::string("runs/heads_compare")
                                      : "runs/heads_compare-" + o.preset;
  c.cache_dir = o.cache_dir;
  c.cached_only = o.cached_only;
  c.device = headgrad::examples::parse_device(o.device_text);
  if (c.device.is_cuda()) c.jobs = 1;  // runs would share the device's one stream
  // On the CPU an ensemble's throughput per model falls past about 10 members (the study
  // model's activations leave the caches: docs/performance.md, "Model ensembles"); a GPU
  // gains the more members it runs at once.
  c.ensemble_size = o.ensemble_size >= 0 ? o.ensemble_size
                    : c.device.is_cuda() ? 0
                                         : kCpuEnsembleSize;
  return c;
}

void create_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw headgrad::ValueError("heads_compare: cannot create the output folder '" + dir +
                               "': " + (ec ? ec.message() : "a file of that name is in the way") +
                               " (choose another --out)");
}

// Trains (or reads) every run and the follow-up stages' runs, with progress lines.
std::vector<heads_compare::RunResult> run_study(const heads_compare::StudyConfig& c,
                                                const std::vector<heads_compare::RunSpec>& runs,
                                                headgrad::distributed::ProcessGroup& group,
                                                bool quiet, heads_compare::Invocation& invocation) {
  double trained_seconds = 0;
  const auto progress = [&](const heads_compare::RunResult& r, std::size_t done, std::size_t total,
                            std::size_t trained) {
    if (r.cached) {
      ++invocation.cached;
    } else {
      ++invocation.trained;
      trained_seconds += r.seconds;
    }
    if (quiet || (r.cached && done != total)) return;
    const std::size_t left = total - done;
    const double eta = trained > 0 ? trained_seconds / static_cast<double>(trained) *
                                         static_cast<double>(left) / c.jobs
                                   : 0;
    std::fprintf(stderr,
                 "[%zu/%zu] %-58s acc %5.1f%% loss %.4f (%.1f s, inspection %.1f s)  left "
                 "%zu, ETA %s\n",
                 done, total, r.spec.name().c_str(), 100 * r.final_test_acc, r.final_test_loss,
                 r.seconds, r.inspect_seconds, left, clock_text(eta).c_str());
  };
  auto results = heads_compare::execute_all(c, runs, progress, group);
  run_followups(c, results, progress, group, quiet);
  return results;
}

// --cached-only: how many of the planned first-stage runs were missing (an error when all
// were). Counted by key, not as planned minus cached: the cached results also hold the
// follow-up stages (rates past the grid's edge, the long budget), which are not planned here.
void count_missing(const heads_compare::StudyConfig& c, const std::set<std::string>& planned,
                   const std::vector<heads_compare::RunResult>& results, bool quiet,
                   heads_compare::Invocation& invocation) {
  if (results.empty())
    throw headgrad::ValueError("heads_compare: --cached-only found none of the " +
                               std::to_string(planned.size()) + " planned runs in the cache");
  std::set<std::string> found;
  for (const auto& r : results) found.insert(r.spec.key(c));
  invocation.missing = 0;
  for (const auto& key : planned) invocation.missing += found.count(key) == 0 ? 1 : 0;
  if (!quiet && invocation.missing > 0)
    std::fprintf(stderr,
                 "heads_compare: --cached-only: %zu of the %zu first-stage runs are not in the "
                 "cache and are left out\n",
                 invocation.missing, planned.size());
}

// Rank 0: the statistics, tables, plots, summary.json, view.html and report.md.
void write_outputs(const heads_compare::StudyConfig& c,
                   const std::vector<heads_compare::RunResult>& results,
                   heads_compare::Invocation& invocation,
                   std::chrono::steady_clock::time_point start) {
  // Counted from the results, so runs other ranks trained count too.
  std::set<std::string> counted;
  invocation.trained = invocation.cached = 0;
  for (const auto& r : results)
    if (counted.insert(r.spec.key(c)).second) {
      invocation.run_seconds += r.seconds;
      ++(r.cached ? invocation.cached : invocation.trained);
    }
  const heads_compare::Study study = heads_compare::aggregate(c, results);
  heads_compare::write_tables(c, results);
  const auto plots = heads_compare::draw_plots(c, study);
  invocation.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  heads_compare::write_summary_json(c, study, results, invocation);
  const bool view = heads_compare::write_view_html(c, study);
  heads_compare::write_report_md(c, study, plots, invocation, view);
  std::printf("report: %s\n",
              (std::filesystem::absolute(c.out_dir) / "report.md").lexically_normal().c_str());
}

// The whole invocation after parsing: plan, train or read, report.
void run(const CommandLine& o, const CLI::App& app, int argc, char** argv) {
  heads_compare::StudyConfig c = config_of(o);
  bool quiet = o.quiet;
  // Under mpirun the runs are spread over the ranks (study.hpp, execute_all); rank 0
  // reports. Each rank trains one run at a time unless --jobs says otherwise.
  headgrad::distributed::ProcessGroup& group = headgrad::distributed::world();
  // Every rank plans one study (--jobs and --quiet may differ), or none starts.
  headgrad::examples::require_ranks_agree(
      group, "heads_compare",
      headgrad::examples::option_settings(
          app, {"--jobs", "--quiet", "--no-ensemble", "--ensemble-size"}));
  if (group.size() > 1 && app.count("--jobs") == 0) c.jobs = 1;
  if (group.rank() != 0) quiet = true;
  validate(c);
  headgrad::set_num_threads(1);  // one thread per run; runs go in parallel instead
  create_out_dir(c.out_dir);
  const auto lock = lock_out_dir(c.out_dir, group);
  const auto runs = heads_compare::plan_runs(c);
  std::set<std::string> distinct_runs;  // arms share models (H = 4, d = 16, E = 64, ...)
  for (const auto& r : runs) distinct_runs.insert(r.key(c));
  // The ranks share one cache folder: rank 0 reads the runs the others trained from it.
  headgrad::examples::require_ranks_agree(
      group, "heads_compare",
      {headgrad::examples::folder_shared_setting(
          group, "the cache folder", heads_compare::cache_dir_of(c),
          "give every rank the same --out and --cache, a folder all ranks see")});
  if (!quiet)
    std::fprintf(
        stderr,
        "heads_compare: preset %s, %zu training runs (%zu arm cells, %zu shared "
        "between arms), %d at a time%s; cache %s\n",
        c.preset.c_str(), distinct_runs.size(), runs.size(), runs.size() - distinct_runs.size(),
        c.jobs,
        group.size() > 1 ? (" on each of " + std::to_string(group.size()) + " ranks").c_str() : "",
        (c.cache_dir.empty() ? c.out_dir + "/cache" : c.cache_dir).c_str());
  const auto start = std::chrono::steady_clock::now();
  heads_compare::Invocation invocation;
  invocation.command = joined_command(argc, argv);
  const auto results = run_study(c, runs, group, quiet, invocation);
  if (group.rank() != 0) return;  // rank 0 writes the report
  if (c.cached_only) count_missing(c, distinct_runs, results, quiet, invocation);
  write_outputs(c, results, invocation, start);
}

}  // namespace

int heads_compare::run_command_line(int argc, char** argv, bool rethrow) {
  CommandLine options;
  CLI::App app{
      "Single-head vs multi-head attention: an LR-swept, seed-replicated study, "
      "inspected head by head."};
  add_design_options(app, options);
  add_run_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rethrow && e.get_exit_code() != 0)
      throw headgrad::ValueError(std::string("heads_compare: ") + e.what());
    return app.exit(e);
  }
  try {
    run(options, app, argc, argv);
  } catch (const std::exception& e) {
    if (rethrow) throw;
    const std::string what = e.what();  // most messages already name the program
    std::fprintf(stderr, "%s%s\n",
                 what.rfind("heads_compare: ", 0) == 0 ? "" : "heads_compare: ", what.c_str());
    return 1;
  }
  return 0;
}
