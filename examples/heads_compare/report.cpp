// heads_compare's tables, summary.json and report.md (see report.hpp).
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace heads_compare {

namespace fs = std::filesystem;

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) {
    s.mean = s.stddev = s.min = s.max = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.stddev = values.size() > 1 ? std::sqrt(sq / static_cast<double>(values.size() - 1)) : 0.0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

// Built with a stream: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string here.
std::string Group::label(bool with_layers) const {
  std::ostringstream s;
  if (control || with_layers)
    s << "L" << layers << " x H" << heads;
  else
    s << "H=" << heads;
  return s.str();
}

std::vector<Group> group_runs(const StudyConfig& config, const std::vector<RunResult>& results) {
  std::vector<Group> groups;
  for (const RunResult& r : results) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.task == r.spec.task && g.layers == r.spec.layers && g.heads == r.spec.heads &&
             g.control == r.spec.control;
    });
    if (it == groups.end()) {
      groups.push_back({r.spec.task, r.spec.layers, r.spec.heads, r.spec.control, {}});
      it = groups.end() - 1;
    }
    it->runs.push_back(&r);
  }
  (void)config;
  return groups;
}

namespace {

std::ofstream open_out(const fs::path& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("heads_compare: cannot write " + path.string());
  out.precision(9);
  return out;
}

std::string run_columns(const RunSpec& s) {
  return s.task + "," + std::to_string(s.layers) + "," + std::to_string(s.heads) + "," +
         std::to_string(s.seed);
}

std::string fmt(const char* format, double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Accuracy after removing half of the heads (rounded down), or NaN.
double half_pruned(const std::vector<headgrad::inspect::PruningPoint>& curve) {
  if (curve.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  return curve[(curve.size() - 1) / 2].accuracy;
}

struct GroupStats {
  Spread loss, accuracy, steps, pruned_importance, pruned_random;
  std::size_t reached = 0;
};

GroupStats stats_of(const Group& g) {
  std::vector<double> loss, acc, steps, pi, pr;
  GroupStats st;
  for (const RunResult* r : g.runs) {
    loss.push_back(r->final_loss);
    acc.push_back(r->final_accuracy);
    if (r->steps_to_threshold >= 0) {
      steps.push_back(static_cast<double>(r->steps_to_threshold));
      ++st.reached;
    }
    if (g.heads * g.layers > 1) {
      pi.push_back(half_pruned(r->pruning_by_importance));
      pr.push_back(half_pruned(r->pruning_random));
    }
  }
  st.loss = spread_of(loss);
  st.accuracy = spread_of(acc);
  st.steps = spread_of(steps);
  st.pruned_importance = spread_of(pi);
  st.pruned_random = spread_of(pr);
  return st;
}

nlohmann::json spread_json(const Spread& s) {
  if (s.count == 0) return nullptr;
  return {{"mean", s.mean}, {"std", s.stddev}, {"min", s.min}, {"max", s.max}, {"n", s.count}};
}

}  // namespace

void write_tables(const StudyConfig& config, const std::vector<RunResult>& results) {
  const fs::path dir(config.out_dir);
  auto metrics = open_out(dir / "metrics.csv");
  metrics << "task,layers,heads,seed,step,split,loss,accuracy\n";
  auto grads = open_out(dir / "head_grads.csv");
  grads << "task,layers,heads,seed,step,layer,head,w_q,w_k,w_v,w_o,z\n";
  auto importance = open_out(dir / "importance.csv");
  importance << "task,layers,heads,seed,layer,head,raw,normalized\n";
  auto pruning = open_out(dir / "pruning.csv");
  pruning << "task,layers,heads,seed,order,removed,loss,accuracy\n";
  for (const RunResult& r : results) {
    const std::string run = run_columns(r.spec);
    for (const CurvePoint& p : r.curve) {
      metrics << run << "," << p.step << ",train," << p.train_loss << "," << p.train_accuracy
              << "\n";
      metrics << run << "," << p.step << ",validation," << p.val_loss << "," << p.val_accuracy
              << "\n";
    }
    for (const GradStep& g : r.grads)
      for (const auto& h : g.heads)
        grads << run << "," << g.step << "," << h.layer << "," << h.head << "," << h.w_q << ","
              << h.w_k << "," << h.w_v << "," << h.w_o << "," << h.z << "\n";
    for (std::size_t l = 0; l < r.importance.raw.size(); ++l)
      for (std::size_t h = 0; h < r.importance.raw[l].size(); ++h)
        importance << run << "," << l << "," << h << "," << r.importance.raw[l][h] << ","
                   << r.importance.normalized[l][h] << "\n";
    for (const auto& [order, curve] :
         {std::pair{"importance", &r.pruning_by_importance}, {"random", &r.pruning_random}})
      for (const auto& p : *curve)
        pruning << run << "," << order << "," << p.removed << "," << p.loss << "," << p.accuracy
                << "\n";
  }
}

void write_summary_json(const StudyConfig& config, const std::vector<Group>& groups,
                        const std::string& command_line, double seconds) {
  nlohmann::json j;
  j["command"] = command_line;
  j["seconds"] = seconds;
  if (!config.device.is_cpu()) j["device"] = config.device.str();  // absent = cpu
  j["config"] = {{"tasks", config.tasks},
                 {"heads", config.heads},
                 {"seeds", config.seeds},
                 {"steps", config.steps},
                 {"d_model", config.d_model},
                 {"layers", config.layers},
                 {"length", config.length},
                 {"batch_size", config.batch_size},
                 {"lr", config.lr},
                 {"warmup", config.warmup},
                 {"weight_decay", config.weight_decay},
                 {"clip", config.clip},
                 {"eval_every", config.eval_every},
                 {"eval_batches", config.eval_batches},
                 {"inspect_batches", config.inspect_batches},
                 {"threshold", config.threshold},
                 {"depth_control", config.depth_control}};
  for (const Group& g : groups) {
    const GroupStats st = stats_of(g);
    nlohmann::json runs = nlohmann::json::array();
    for (const RunResult* r : g.runs)
      runs.push_back(
          {{"seed", r->spec.seed},
           {"final_loss", r->final_loss},
           {"final_accuracy", r->final_accuracy},
           {"steps_to_threshold", r->steps_to_threshold >= 0 ? nlohmann::json(r->steps_to_threshold)
                                                             : nlohmann::json(nullptr)},
           {"importance_normalized", r->importance.normalized},
           {"seconds", r->seconds}});
    j["groups"].push_back(
        {{"task", g.task},
         {"layers", g.layers},
         {"heads", g.heads},
         {"head_dim", config.d_model / g.heads},
         {"depth_control", g.control},
         {"final_loss", spread_json(st.loss)},
         {"final_accuracy", spread_json(st.accuracy)},
         {"steps_to_threshold", spread_json(st.steps)},
         {"runs_reaching_threshold", st.reached},
         {"accuracy_half_heads_pruned_by_importance", spread_json(st.pruned_importance)},
         {"accuracy_half_heads_pruned_randomly", spread_json(st.pruned_random)},
         {"runs", runs}});
  }
  auto out = open_out(fs::path(config.out_dir) / "summary.json");
  out << j.dump(2) << "\n";
}

void write_report_md(const StudyConfig& config, const std::vector<Group>& groups,
                     const std::vector<std::string>& plots, const std::string& command_line,
                     double seconds) {
  std::ostringstream md;
  md << "# heads_compare: one head against many\n\n"
     << "Command: `" << command_line << "`  \n"
     << "Wall time: " << fmt("%.0f", seconds) << " s with " << config.jobs
     << " run(s) at a time, one thread each"
     << (config.device.is_cpu() ? std::string() : ", on " + config.device.str()) << ".\n\n"
     << "Decoder-only GPTs (d_model " << config.d_model << ", pre-norm, GELU, no dropout) "
     << "trained with AdamW (lr " << config.lr << ", cosine, " << config.warmup
     << " warm-up steps, clip " << config.clip << ") for " << config.steps << " steps of "
     << config.batch_size << " examples, task length " << config.length
     << ". Within a task, runs with the same seed and layer count start from the same weights "
     << "and see the same batches; they differ only in how each layer's E = " << config.d_model
     << " dimensions are split into heads. Validation: " << config.eval_batches << " batches of "
     << config.batch_size << " held-out examples every " << config.eval_every
     << " steps. Mean ± sample std over " << config.seeds.size()
     << " seeds, [min, max] in brackets.\n";
  std::string current;
  for (const Group& g : groups) {
    if (g.task != current) {
      current = g.task;
      md << "\n## " << g.task << "\n\n"
         << "| model | head dim | final val loss | final val accuracy | steps to "
         << fmt("%.0f", 100 * config.threshold) << "% | accuracy, half the heads pruned: "
         << "by importance / at random |\n|---|---|---|---|---|---|\n";
    }
    const GroupStats st = stats_of(g);
    md << "| ";
    if (g.control)
      md << g.label();
    else
      md << "L" << g.layers << " x " << g.label();
    md << " | " << config.d_model / g.heads << " | " << fmt("%.4f", st.loss.mean) << " ± "
       << fmt("%.4f", st.loss.stddev) << " | " << fmt("%.1f%%", 100 * st.accuracy.mean) << " ± "
       << fmt("%.1f", 100 * st.accuracy.stddev) << " [" << fmt("%.1f", 100 * st.accuracy.min)
       << ", " << fmt("%.1f", 100 * st.accuracy.max) << "] | ";
    if (st.reached > 0)
      md << fmt("%.0f", st.steps.mean) << " ± " << fmt("%.0f", st.steps.stddev) << " ("
         << st.reached << "/" << g.runs.size() << " runs)";
    else
      md << "not reached (0/" << g.runs.size() << ")";
    md << " | ";
    if (st.pruned_importance.count > 0)
      md << fmt("%.1f%%", 100 * st.pruned_importance.mean) << " / "
         << fmt("%.1f%%", 100 * st.pruned_random.mean);
    else
      md << "-";
    md << " |\n";
  }
  md << "\nSteps to threshold count only the runs that reached it; the number that did is in "
        "parentheses. Pruning removes heads one at a time, least important first (Michel et "
        "al. 2019: mean |dL/dgate| per example, normalized per layer, pruned globally) or in a "
        "random order, and evaluates on "
     << config.inspect_batches << " validation batches.\n";
  md << "\n## Plots\n\n";
  if (plots.empty()) md << "No plots were drawn (gnuplot missing or failed; see stderr).\n";
  for (const std::string& p : plots)
    md << "![" << fs::path(p).stem().string() << "](" << p << ")\n\n";
  md << "## Files\n\n"
     << "- `metrics.csv`: train (mean over the steps since the last evaluation) and validation "
        "loss and accuracy of every run at every evaluation.\n"
     << "- `head_grads.csv`: every step's gradient norms of each head's blocks of W_q, W_k, W_v "
        "(rows), W_o (columns) and of its output z.\n"
     << "- `importance.csv`, `pruning.csv`: head importance and both pruning curves per run.\n"
     << "- `summary.json`: this table with every run's numbers.\n"
     << "- `runs/<run>/`: each run's own metrics and final checkpoint (`checkpoint.npz`).\n"
     << "- `plots/`: the PNGs, their gnuplot scripts and data.\n";
  auto out = open_out(fs::path(config.out_dir) / "report.md");
  out << md.str();
}

}  // namespace heads_compare
