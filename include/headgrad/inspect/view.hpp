// inspect::AttentionView: an interactive viewer of attention patterns as ONE self-contained
// HTML file (the data as JSON, the code as inline JS and CSS: no CDN, no network request,
// no server), which opens from disk in any browser.
//
//   inspect::AttentionView view;
//   view.title = "copy task: H = 1 against H = 8";
//   inspect::ViewGroup group;                 // models that share the same examples
//   group.name = "copy";
//   group.examples = ...;                     // token labels, task.token_labels(ids)
//   group.models.push_back(inspect::capture_view_model(model_a, forward, batch, "H = 1"));
//   group.models.push_back(inspect::capture_view_model(model_b, forward, batch, "H = 8"));
//   view.groups.push_back(group);
//   inspect::write_attention_view("view.html", view);
//
// The page shows one group (a task picker switches) on one example (an example picker),
// two models side by side (panels A and B, each with a model picker) on the same tokens:
// per panel a token strip, a layer x head grid of every head's pattern (click one to
// enlarge it as a table of values with the tokens on its axes), each head's scores
// (induction, previous-token, importance, gradient norm, patching: whatever the models
// carry), linear and log colour scales. Hovering a token highlights what it attends to and
// what attends to it, in both panels. docs/inspect.md describes each control.
//
// Patterns are stored quantised to 16 bits (value = round(p * 65535) / 65535, a step of
// 1.5e-5), base64-encoded: a 2-layer, 8-head model on 16 examples of 19 tokens takes
// about 120 KB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

namespace headgrad::nn {
class Module;
}

namespace headgrad::inspect {

// One number per head, shown under the head: `values` is [layer][head], NaN = not
// available. Keys with a fixed meaning (the study's): induction, previous_token,
// importance, grad_norm, patching; any other key is shown with its label.
struct ViewScore {
  std::string key;    // e.g. "induction"
  std::string label;  // e.g. "induction" (shown)
  std::vector<std::vector<double>> values;
};

// One model's patterns on a group's examples.
struct ViewModel {
  std::string name;  // shown in the pickers and the panel title
  std::int64_t layers = 0, heads = 0;
  // [example][layer][head][query][key], each head T x T (T = the group's length), values
  // in [0, 1] (a row of a softmax pattern).
  std::vector<float> patterns;
  std::vector<ViewScore> scores;
};

// Models that share the same examples (one task).
struct ViewGroup {
  std::string name;
  std::int64_t length = 0;                               // T
  std::vector<std::vector<train::TokenLabel>> examples;  // [example][position], T labels each
  std::vector<ViewModel> models;
  std::size_t model_a = 0, model_b = 0;  // the pair shown first
};

struct AttentionView {
  std::string title = "headgrad: attention patterns";
  std::string note;  // a line under the title (what the models are, how they were chosen)
  std::vector<ViewGroup> groups;
};

// The page's HTML. Checks the view first (ValueError naming the group, the model and the
// size that disagrees): at least one group with one example and one model, T labels per
// example, patterns of examples x layers x heads x T x T values in [0, 1] (NaN is refused),
// scores of layers x heads, model_a and model_b among the models.
std::string attention_view_html(const AttentionView& view);

// Writes attention_view_html(view) to `path` atomically (a temporary file renamed over it;
// train::IOError naming the file on failure, leaving any earlier file in place).
void write_attention_view(const std::filesystem::path& path, const AttentionView& view);

// Every attention head's pattern of `model` on `batch` (eval mode, no grad; the model's
// mode is restored), through inspect::Capture: `forward(batch)` must run the model once.
// Heads are the attention layers in model order (attention_layers); every layer must have
// the same number of heads (ValueError otherwise), and the patterns must be square
// (self-attention, T = batch length). The batch may live on any device.
ViewModel capture_view_model(nn::Module& model, const train::ForwardFn& forward,
                             const train::Batch& batch, const std::string& name);

// How the page stores patterns: round(p * 65535) as little-endian uint16, base64. decode
// gives back q / 65535 (so decode(encode(p)) is p within 1/131070, and encoding that
// again is exact); it throws ValueError on text that is not such base64.
std::string encode_patterns(const std::vector<float>& patterns);
std::vector<float> decode_patterns(const std::string& text);

// Labels for every example of a batch's tokens (task.token_labels per row).
std::vector<std::vector<train::TokenLabel>> view_examples(const train::Task& task,
                                                          const train::Batch& batch);

}  // namespace headgrad::inspect
