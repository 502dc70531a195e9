// headgrad.inspect's attention view (python/headgrad/inspect.py's AttentionView builds the
// groups): the page's HTML and its atomic write, from Python lists, dicts and NumPy arrays.
#include "common.hpp"
#include "headgrad/inspect/view.hpp"

namespace headgrad::python {
namespace {

// Token labels: each a string (role "symbol") or a (text, role) pair.
std::vector<train::TokenLabel> to_labels(const py::handle& row) {
  std::vector<train::TokenLabel> out;
  for (const auto& item : row) {
    if (py::isinstance<py::str>(item)) {
      out.push_back({item.cast<std::string>(), "symbol"});
    } else {
      const auto pair = item.cast<py::sequence>();
      if (pair.size() != 2)
        throw ValueError("attention view: a token label is a string or a (text, role) pair");
      out.push_back({pair[0].cast<std::string>(), pair[1].cast<std::string>()});
    }
  }
  return out;
}

// {"name", "patterns": (N, L, H, T, T) array, "scores": [(key, label, (L, H) array)]}.
inspect::ViewModel to_model(const py::dict& d) {
  inspect::ViewModel m;
  m.name = d["name"].cast<std::string>();
  const auto p =
      py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(d["patterns"]);
  if (!p || p.ndim() != 5)
    throw ValueError("attention view: model '" + m.name +
                     "': patterns must be a (examples, layers, heads, T, T) array");
  m.layers = p.shape(1);
  m.heads = p.shape(2);
  m.patterns.assign(p.data(), p.data() + p.size());
  if (d.contains("scores"))
    for (const auto& s : d["scores"]) {
      const auto t = s.cast<py::sequence>();
      inspect::ViewScore score{t[0].cast<std::string>(), t[1].cast<std::string>(), {}};
      score.values = t[2].cast<std::vector<std::vector<double>>>();
      m.scores.push_back(std::move(score));
    }
  return m;
}

inspect::AttentionView to_view(const std::string& title, const std::string& note,
                               const py::list& groups) {
  inspect::AttentionView v;
  v.title = title;
  v.note = note;
  for (const auto& item : groups) {
    const auto d = item.cast<py::dict>();
    inspect::ViewGroup g;
    g.name = d["name"].cast<std::string>();
    for (const auto& row : d["examples"]) g.examples.push_back(to_labels(row));
    g.length = g.examples.empty() ? 0 : static_cast<std::int64_t>(g.examples[0].size());
    for (const auto& m : d["models"]) g.models.push_back(to_model(m.cast<py::dict>()));
    g.model_a = d.contains("model_a") ? d["model_a"].cast<std::size_t>() : 0;
    g.model_b = d.contains("model_b") ? d["model_b"].cast<std::size_t>() : g.models.size() - 1;
    v.groups.push_back(std::move(g));
  }
  return v;
}

}  // namespace

void bind_view(py::module_& m) {
  m.def(
      "attention_view_html",
      [](const std::string& title, const std::string& note, const py::list& groups) {
        return inspect::attention_view_html(to_view(title, note, groups));
      },
      py::arg("title"), py::arg("note"), py::arg("groups"),
      "The attention view's page (use headgrad.inspect.AttentionView)");
  m.def(
      "write_attention_view",
      [](const std::string& path, const std::string& title, const std::string& note,
         const py::list& groups) {
        inspect::write_attention_view(path, to_view(title, note, groups));
      },
      py::arg("path"), py::arg("title"), py::arg("note"), py::arg("groups"),
      "Writes the attention view's page atomically (use headgrad.inspect.AttentionView)");
}

}  // namespace headgrad::python
