// The interventions analysis of a recall model (see analysis.hpp).
#include "analysis.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/process.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/logit_attribution.hpp"
#include "headgrad/inspect/mechanism.hpp"
#include "headgrad/inspect/recall_patching.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/train/atomic_write.hpp"
#include "headgrad/train/npy.hpp"
#include "headgrad/train/npz.hpp"

namespace patching_study {

namespace fs = std::filesystem;
namespace hg = headgrad;
namespace inspect = headgrad::inspect;
using hg::Tensor;

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

// Whole or not at all; IOError with the reason (strerror) otherwise.
void write_text(const fs::path& path, const std::string& text) {
  hg::train::write_file_atomically(path, text, "patching");
}

// gnuplot's quoting of a path or a title: single quotes, with ' doubled (gnuplot expands
// nothing inside them).
std::string quoted(const std::string& text) {
  std::string s = "'";
  for (char c : text) s += c == '\'' ? std::string("''") : std::string(1, c);
  return s + "'";
}

// True when `path` holds a whole PNG: it ends with the IEND chunk.
bool complete_png(const fs::path& path) {
  static const char iend[8] = {'I', 'E', 'N', 'D', '\xAE', '\x42', '\x60', '\x82'};
  std::ifstream in(path, std::ios::binary);
  char tail[8] = {};
  return in.seekg(-8, std::ios::end) && in.read(tail, 8) && std::equal(tail, tail + 8, iend);
}

// Runs gnuplot on `script` with its output going to a temporary file, renamed over `png`
// once whole: a failed drawing leaves the previous PNG. No shell reads the paths.
bool run_gnuplot(const fs::path& script, const fs::path& png) {
  const fs::path tmp = hg::train::temp_path_for(png);
  bool drawn = false;
  try {
    drawn =
        hg::run_program({"gnuplot", "-e", "png_output = " + quoted(tmp.string()), script.string()},
                        hg::ProgramOptions()
                            .with_stdout_to(hg::Redirect::discard())
                            .with_stderr_to(hg::Redirect::discard())) == 0 &&
        complete_png(tmp);
  } catch (const hg::Error&) {
    drawn = false;
  }
  std::error_code ec;
  if (drawn) fs::rename(tmp, png, ec);
  if (!drawn || ec) fs::remove(tmp, ec);
  return drawn && fs::exists(png);
}

// "layer,head,value" (or with position) rows, row-major over the grid.
std::string grid_csv(const inspect::PatchingGrid& grid) {
  std::ostringstream os;
  for (const std::string& d : grid.dims) os << d << ",";
  os << "value\n";
  std::vector<std::int64_t> index(grid.shape.size(), 0);
  for (double v : grid.values) {
    for (std::int64_t i : index) os << i << ",";
    os << number(v) << "\n";
    for (std::size_t k = index.size(); k-- > 0;) {
      if (++index[k] < grid.shape[k]) break;
      index[k] = 0;
    }
  }
  return os.str();
}

// A grid's rows as a gnuplot matrix: 2-D as is, 3-D with (layer, head) rows.
std::string matrix_text(const inspect::PatchingGrid& grid) {
  const std::int64_t columns = grid.shape.back();
  std::ostringstream os;
  for (std::size_t i = 0; i < grid.values.size(); ++i)
    os << number(grid.values[i])
       << ((static_cast<std::int64_t>(i) + 1) % columns == 0 ? "\n" : " ");
  return os.str();
}

// Induction scores at the scored positions of the prompts patched (the batch's rows that
// corrupt_recall kept), so that they describe the prompts the grids describe.
std::vector<std::vector<double>> induction_scores(hg::nn::GPT& model,
                                                  const inspect::CorruptedPrompts& prompts,
                                                  const hg::train::Batch& batch) {
  hg::NoGradGuard no_grad;
  const hg::Device device = model.lm_head->weight.device();
  inspect::Capture capture(model, {"pattern"}, /*retain_grads=*/false);
  {
    auto scope = capture.activate();
    model.forward(prompts.clean.to(device), prompts.key_padding_mask.defined()
                                                ? prompts.key_padding_mask.to(device)
                                                : Tensor());
  }
  std::vector<Tensor> patterns;
  for (const std::string& layer : capture.layer_names())
    patterns.push_back(capture.get(layer + ".pattern"));
  const Tensor targets = hg::index_select(batch.targets.to(hg::Device::cpu()), 0, prompts.kept);
  const Tensor scored = hg::ne(targets, hg::full_like(targets, hg::train::kIgnoreIndex));
  return inspect::mechanism_scores(patterns, prompts.clean, prompts.key_padding_mask, scored)
      .induction_scored;
}

}  // namespace

RecallPatching recall_patching(hg::nn::GPT& model, const hg::train::Task& task,
                               const hg::train::Batch& batch,
                               inspect::RecallCorruption corruption) {
  RecallPatching out;
  out.prompts = inspect::corrupt_recall(task, batch, corruption);
  const inspect::CorruptedPrompts& p = out.prompts;
  const hg::Device device = model.lm_head->weight.device();
  const Tensor mask = p.key_padding_mask.defined() ? p.key_padding_mask.to(device) : Tensor();
  const Tensor position = p.position.to(device), answer = p.answer.to(device),
               wrong = p.wrong.to(device);
  out.run = [&model, mask](const Tensor& x) { return model.forward(x, mask); };
  out.metric = [position, answer, wrong](const Tensor& logits) {
    return inspect::logit_difference(logits, position, answer, wrong);
  };
  out.masked = mask.defined();
  out.patching = std::make_unique<inspect::Patching>(model, p.clean.to(device),
                                                     p.corrupted.to(device), out.metric, mask);
  return out;
}

RecallAnalysis analyse_recall(hg::nn::GPT& model, const hg::train::Task& task,
                              const hg::train::Batch& batch, const AnalysisOptions& options) {
  const RecallPatching setup = recall_patching(model, task, batch, options.corruption);
  const inspect::CorruptedPrompts& p = setup.prompts;
  const inspect::Patching& patching = *setup.patching;
  const hg::Device device = model.lm_head->weight.device();
  const Tensor clean = p.clean.to(device);

  RecallAnalysis a;
  a.task = task.name();
  a.corruption = options.corruption;
  a.prompts = p;
  a.examples = p.clean.size(0);
  a.dropped = p.dropped;
  a.clean_metric = patching.clean_metric();
  a.corrupted_metric = patching.corrupted_metric();
  a.induction = induction_scores(model, p, batch);
  a.heads = patching.by_head("z");
  a.restoring = patching.fewest_heads_restoring(options.restore_fraction);
  if (options.positions) {
    a.head_positions = patching.by_head_position("z");
    a.residual = patching.by_position("resid_pre");
  }
  if (options.ablations) {
    a.attribution = patching.attribution_by_head("z");
    // Mean ablation averages over the clean prompts; resample takes another clean prompt.
    for (inspect::Ablation kind :
         {inspect::Ablation::zero, inspect::Ablation::mean, inspect::Ablation::resample})
      a.ablations.push_back(inspect::ablate_heads(model, setup.run, clean, clean, setup.metric,
                                                  kind, "z", options.seed));
    const std::int64_t last = a.heads.shape[0] - 1;
    if (last > 0) {
      a.path_receiver = {last, 0};
      for (std::int64_t h = 1; h < a.heads.shape[1]; ++h)
        if (a.heads.at(last, h) > a.heads.at(last, a.path_receiver.head)) a.path_receiver.head = h;
      for (const char* via : {"q", "k", "v"})
        a.paths.push_back(patching.path_patching(a.path_receiver, via));
    }
    if (model.options().norm_first && !setup.masked)
      a.logit_attribution = inspect::direct_logit_attribution(
          model, clean, p.position.to(device), p.answer.to(device), p.wrong.to(device));
  }
  return a;
}

bool draw_heatmap(const inspect::PatchingGrid& grid, const fs::path& png,
                  const std::string& title) {
  if (hg::find_program("gnuplot").empty()) return false;
  const fs::path data = fs::path(png).replace_extension(".dat");
  const fs::path script = fs::path(png).replace_extension(".gp");
  write_text(data, matrix_text(grid));
  const std::int64_t rows = grid.values.size() / grid.shape.back(), columns = grid.shape.back();
  // Row labels: layers (2-D grids) or "L<l> h<h>" (3-D grids), row 0 at the top.
  std::ostringstream ytics;
  ytics << "set ytics (";
  for (std::int64_t r = 0; r < rows; ++r) {
    ytics << (r ? ", " : "") << "'L" << (grid.dims.size() == 3 ? r / grid.shape[1] : r);
    if (grid.dims.size() == 3) ytics << " h" << r % grid.shape[1];
    ytics << "' " << r;
  }
  ytics << ")\n";
  // `gnuplot <name>.gp` alone redraws the PNG beside the script; run_gnuplot sets
  // png_output to a temporary file first.
  std::ostringstream gp;
  gp << "set terminal pngcairo noenhanced size " << std::max<std::int64_t>(480, 60 * columns + 200)
     << "," << std::max<std::int64_t>(320, 28 * rows + 160) << "\n"
     << "if (!exists('png_output')) png_output = " << quoted(png.string()) << "\n"
     << "set output png_output\n"
     << "set title " << quoted(title) << "\n"
     << "set xlabel '" << (grid.dims.back() == "position" ? "position" : "head") << "'\n"
     << ytics.str() << "set yrange [" << rows - 0.5 << ":-0.5]\nset xrange [-0.5:" << columns - 0.5
     << "]\nset xtics 1\n"
     << "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\n"
     << "set cbrange [-1:1]\nset cblabel 'normalised logit difference'\n"
     << "plot " << quoted(data.string()) << " matrix with image notitle\nunset output\n";
  write_text(script, gp.str());
  return run_gnuplot(script, png);
}

namespace {

// The folder write_analysis writes to and the files written there so far.
struct Output {
  const fs::path& dir;
  std::vector<std::string> written;
};

// Writes <stem>.npy and <stem>.csv of a grid; nothing for an empty grid.
void write_grid(Output& out, const inspect::PatchingGrid& grid, const std::string& stem) {
  if (grid.values.empty()) return;
  hg::train::save_npy((out.dir / (stem + ".npy")).string(), grid.tensor());
  write_text(out.dir / (stem + ".csv"), grid_csv(grid));
  out.written.push_back(stem + ".npy");
  out.written.push_back(stem + ".csv");
}

// Writes prompts_<name>.npy of each defined tensor of the prompts.
void write_prompts(Output& out, const inspect::CorruptedPrompts& p) {
  const std::pair<const char*, const Tensor*> prompts[] = {
      {"clean", &p.clean},       {"corrupted", &p.corrupted},
      {"position", &p.position}, {"answer", &p.answer},
      {"wrong", &p.wrong},       {"key_padding_mask", &p.key_padding_mask}};
  for (const auto& [name, t] : prompts)
    if (t->defined()) {
      const std::string file = std::string("prompts_") + name + ".npy";
      hg::train::save_npy((out.dir / file).string(), *t);
      out.written.push_back(file);
    }
}

// Writes ablation.csv: each ablation's metric per head, also normalised; nothing without
// ablations.
void write_ablation_csv(Output& out, const RecallAnalysis& a) {
  if (a.ablations.empty()) return;
  std::ostringstream os;
  os << "ablation,layer,head,metric,normalised,baseline\n";
  const double gap = a.clean_metric - a.corrupted_metric;
  for (const auto& t : a.ablations)
    for (std::int64_t l = 0; l < t.metric.shape[0]; ++l)
      for (std::int64_t h = 0; h < t.metric.shape[1]; ++h) {
        const double m = t.metric.at(l, h);
        os << inspect::to_string(t.kind) << "," << l << "," << h << "," << number(m) << ","
           << number((m - a.corrupted_metric) / gap) << "," << number(t.baseline) << "\n";
      }
  write_text(out.dir / "ablation.csv", os.str());
  out.written.push_back("ablation.csv");
}

// Writes heads.csv: each head's induction score and z patching effect; nothing without
// induction scores.
void write_heads_csv(Output& out, const RecallAnalysis& a) {
  if (a.induction.empty()) return;
  std::ostringstream os;
  os << "layer,head,induction_scored,patching_z\n";
  for (std::size_t l = 0; l < a.induction.size(); ++l)
    for (std::size_t h = 0; h < a.induction[l].size(); ++h)
      os << l << "," << h << "," << number(a.induction[l][h]) << ","
         << number(a.heads.at(static_cast<std::int64_t>(l), static_cast<std::int64_t>(h))) << "\n";
  write_text(out.dir / "heads.csv", os.str());
  out.written.push_back("heads.csv");
}

// The (layer, head) a direct logit attribution label names: "layers.<l>.self_attn.head<h>"
// gives both, "layers.<l>.*" the layer only (head -1), other labels neither (-1, -1).
std::pair<std::int64_t, std::int64_t> layer_and_head(const std::string& label) {
  std::int64_t layer = -1, head = -1;
  if (label.rfind("layers.", 0) == 0) {
    layer = std::stoll(label.substr(7));
    const std::size_t at = label.find(".head");
    if (at != std::string::npos) head = std::stoll(label.substr(at + 5));
  }
  return {layer, head};
}

// Writes logit_attribution.csv: every component's direct logit attribution (the embedding,
// each head, each layer's attention bias and MLP, the final norm's bias), then their sum and
// the model's own logit difference; layer and head are empty where a component has none.
void write_logit_attribution_csv(Output& out, const RecallAnalysis& a) {
  if (a.logit_attribution.labels.empty()) return;
  const auto cell = [](std::int64_t i) { return i < 0 ? std::string() : std::to_string(i); };
  std::ostringstream os;
  os << "component,layer,head,direct_logit_attribution\n";
  for (std::size_t k = 0; k < a.logit_attribution.labels.size(); ++k) {
    const auto [layer, head] = layer_and_head(a.logit_attribution.labels[k]);
    os << a.logit_attribution.labels[k] << "," << cell(layer) << "," << cell(head) << ","
       << number(a.logit_attribution.values[k]) << "\n";
  }
  os << "sum,,," << number(a.logit_attribution.sum()) << "\n"
     << "logit_difference,,," << number(a.logit_attribution.logit_difference) << "\n";
  write_text(out.dir / "logit_attribution.csv", os.str());
  out.written.push_back("logit_attribution.csv");
}

// The content of summary.json: the run, the per-head z patching effects, the metrics and
// the fewest heads that restore the logit difference.
nlohmann::json summary_of(const RecallAnalysis& a) {
  nlohmann::json summary;
  summary["task"] = a.task;
  summary["corruption"] = inspect::to_string(a.corruption);
  summary["examples"] = a.examples;
  summary["dropped"] = a.dropped;
  summary["induction_scored"] = a.induction;
  summary["patching_heads"] = nlohmann::json::array();
  for (std::int64_t l = 0; l < a.heads.shape[0]; ++l) {
    std::vector<double> row;
    for (std::int64_t h = 0; h < a.heads.shape[1]; ++h) row.push_back(a.heads.at(l, h));
    summary["patching_heads"].push_back(row);
  }
  summary["clean_logit_difference"] = a.clean_metric;
  summary["corrupted_logit_difference"] = a.corrupted_metric;
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& id : a.restoring.heads) heads.push_back({id.layer, id.head});
  if (!a.paths.empty())
    summary["path_patching_receiver"] = {a.path_receiver.layer, a.path_receiver.head};
  summary["fewest_heads_restoring"] = {{"heads", heads}, {"restored", a.restoring.restored}};
  return summary;
}

// Draws patching_heads.png and (with positions) patching_head_positions.png, keeping those
// that gnuplot drew; each PNG's data (.dat, the grid as a matrix) and gnuplot script (.gp:
// `gnuplot patching_heads.gp` redraws it) lie beside it.
void draw_heatmaps(Output& out, const RecallAnalysis& a) {
  const auto drawn = [&out](const std::string& stem) {
    for (const char* extension : {".png", ".dat", ".gp"}) out.written.push_back(stem + extension);
  };
  if (draw_heatmap(a.heads, out.dir / "patching_heads.png",
                   "z patching per head (" + a.task + ", n = " + std::to_string(a.examples) + ")"))
    drawn("patching_heads");
  if (!a.head_positions.values.empty() &&
      draw_heatmap(a.head_positions, out.dir / "patching_head_positions.png",
                   "z patching per head and position (" + a.task + ")"))
    drawn("patching_head_positions");
}

}  // namespace

std::vector<std::string> write_analysis(const RecallAnalysis& a, const fs::path& dir) {
  // Temporary files of an earlier run killed mid-write; a live writer's are kept.
  hg::train::remove_stale_temp_files(dir);
  Output out{dir, {}};
  write_prompts(out, a.prompts);
  write_grid(out, a.heads, "patching_heads");
  write_grid(out, a.head_positions, "patching_head_positions");
  write_grid(out, a.residual, "patching_residual");
  write_grid(out, a.attribution, "attribution_heads");
  for (std::size_t i = 0; i < a.paths.size(); ++i)
    write_grid(out, a.paths[i], std::string("path_patching_") + "qkv"[i]);
  write_ablation_csv(out, a);
  write_heads_csv(out, a);
  write_logit_attribution_csv(out, a);
  write_text(dir / "summary.json", summary_of(a).dump(2) + "\n");
  out.written.push_back("summary.json");
  draw_heatmaps(out, a);
  return out.written;
}

}  // namespace patching_study
