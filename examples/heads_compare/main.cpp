// heads_compare: the single-head vs multi-head study, headgrad's main job.
//
// Trains toy GPTs that differ only in the number of heads per layer at a fixed d_model
// (the head dimension shrinks as heads are added) on synthetic tasks where a token must
// be found among several positions, over several seeds; optionally the depth control
// (one layer of 8 heads against 8 layers of 1 head). Then, head by head: gradient norms
// over training, importance, pruning curves and attention patterns. Writes a run folder
// with report.md, summary.json, metrics.csv and PNG plots, and prints where the report is.
//
//   heads_compare                                  # the default study, a few minutes
//   heads_compare --tasks associative_recall --heads 1,8 --seeds 0,1 --steps 600
//   heads_compare --depth-control --out runs/depth
//   heads_compare --device cuda                    # every run on the first GPU, one at a time
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "../common/device.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/threads.hpp"
#include "report.hpp"
#include "study.hpp"

namespace {

std::string joined_command(int argc, char** argv) {
  std::string s = "heads_compare";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  heads_compare::StudyConfig c;
  c.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c.out_dir = "runs/heads_compare";
  bool quiet = false;
  std::string device_text = "cpu";
  CLI::App app{"Single-head vs multi-head attention: train, inspect head by head, report."};
  app.add_option("--tasks", c.tasks, "sequence tasks (associative_recall, sort, copy, reverse)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--heads", c.heads, "head counts per layer (each must divide d_model)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--seeds", c.seeds, "seeds (init and data)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--steps", c.steps, "training steps per run")->capture_default_str();
  app.add_option("--d-model", c.d_model, "model width, fixed across head counts")
      ->capture_default_str();
  app.add_option("--layers", c.layers, "transformer layers")->capture_default_str();
  app.add_option("--length", c.length, "task length")->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "batch size")->capture_default_str();
  app.add_option("--lr", c.lr, "peak learning rate (AdamW, cosine)")->capture_default_str();
  app.add_option("--warmup", c.warmup, "warm-up steps")->capture_default_str();
  app.add_option("--eval-every", c.eval_every, "evaluate every N steps")->capture_default_str();
  app.add_option("--threshold", c.threshold, "validation accuracy for steps-to-threshold")
      ->capture_default_str();
  app.add_flag("--depth-control", c.depth_control,
               "also train 1 layer x 8 heads against 8 layers x 1 head");
  app.add_option("--jobs", c.jobs, "runs trained at once, one thread each (1 on a GPU)")
      ->capture_default_str();
  headgrad::examples::add_device_option(app, device_text);
  app.add_option("--out", c.out_dir, "run folder")->capture_default_str();
  app.add_flag("--quiet", quiet, "no progress lines");
  CLI11_PARSE(app, argc, argv);

  try {
    c.device = headgrad::examples::parse_device(device_text);
    // On a GPU the runs go one after the other: they would share the device's one stream.
    if (c.device.is_cuda()) c.jobs = 1;
    for (std::int64_t h : c.heads)
      if (h <= 0 || c.d_model % h != 0)
        throw headgrad::ValueError("heads_compare: --heads " + std::to_string(h) +
                                   " does not divide --d-model " + std::to_string(c.d_model));
    if (c.steps < 1 || c.seeds.empty() || c.tasks.empty() || c.heads.empty())
      throw headgrad::ValueError(
          "heads_compare: --steps must be at least 1 and --tasks, --heads, --seeds non-empty");
    if (c.depth_control && c.d_model % 8 != 0)
      throw headgrad::ValueError("heads_compare: --depth-control needs d_model divisible by 8");
    headgrad::set_num_threads(1);  // one thread per run; runs go in parallel instead
    std::filesystem::create_directories(c.out_dir);
    const std::string command = joined_command(argc, argv);
    const auto runs = heads_compare::plan_runs(c);
    if (!quiet)
      std::fprintf(stderr,
                   "heads_compare: %zu runs (%zu tasks x %zu models x %zu seeds), %d at a time\n",
                   runs.size(), c.tasks.size(), runs.size() / c.tasks.size() / c.seeds.size(),
                   c.seeds.size(), c.jobs);
    const auto start = std::chrono::steady_clock::now();
    const auto results = heads_compare::execute_all(
        c, runs, [&](const heads_compare::RunResult& r, std::size_t done, std::size_t total) {
          if (!quiet)
            std::fprintf(stderr, "[%zu/%zu] %-36s val acc %5.1f%%  loss %.4f  (%.1f s)\n", done,
                         total, r.spec.name().c_str(), 100 * r.final_accuracy, r.final_loss,
                         r.seconds);
        });
    const auto groups = heads_compare::group_runs(c, results);
    heads_compare::write_tables(c, results);
    const auto plots = heads_compare::draw_plots(c, groups);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    heads_compare::write_summary_json(c, groups, command, seconds);
    heads_compare::write_report_md(c, groups, plots, command, seconds);
    std::printf("report: %s\n",
                (std::filesystem::absolute(c.out_dir) / "report.md").lexically_normal().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heads_compare: %s\n", e.what());
    return 1;
  }
  return 0;
}
