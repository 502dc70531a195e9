// headgrad.inspect's attention view (python/headgrad/inspect.py's AttentionView builds the
// groups): the page's HTML and its atomic write, from Python lists, dicts and NumPy arrays.
#include "common.hpp"
#include "headgrad/inspect/view.hpp"

namespace headgrad::python {
namespace {

// One label's text or role: a str that UTF-8 can write (the page is UTF-8).
std::string label_text(const py::handle& value, const std::string& where) {
  if (py::isinstance<py::bytes>(value))
    throw ValueError(where + ": the label " + py::repr(value).cast<std::string>() +
                     " is bytes; labels are str (decode it first: label.decode())");
  if (!py::isinstance<py::str>(value))
    throw ValueError(where + ": a label is a str or a (text, role) pair of str, got " +
                     py::str(py::type::of(value).attr("__name__")).cast<std::string>() + " " +
                     py::repr(value).cast<std::string>());
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    throw ValueError(where + ": the label " + py::repr(value).cast<std::string>() +
                     " is not valid text: it holds a lone surrogate, which UTF-8 cannot write "
                     "(bytes decoded with errors='surrogateescape'?); replace it, e.g. "
                     "label.encode('utf-8', 'replace').decode()");
  }
  return std::string(utf8, static_cast<std::size_t>(size));
}

// Token labels of one example: each a str (role "symbol") or a (text, role) pair of str.
// `where` places the example in messages.
std::vector<train::TokenLabel> to_labels(const py::handle& row, const std::string& where) {
  if (!py::isinstance<py::sequence>(row) || py::isinstance<py::str>(row) ||
      py::isinstance<py::bytes>(row))
    throw ValueError(where +
                     ": the labels of an example are a list of str or (text, role) pairs, "
                     "got " +
                     py::str(py::type::of(row).attr("__name__")).cast<std::string>());
  std::vector<train::TokenLabel> out;
  for (const auto& item : row) {
    const std::string at = where + ", token " + std::to_string(out.size());
    if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
      const auto pair = item.cast<py::sequence>();
      if (pair.size() != 2)
        throw ValueError(at + ": a label is a str or a (text, role) pair, got a sequence of " +
                         std::to_string(pair.size()));
      out.push_back({label_text(pair[0], at), label_text(pair[1], at)});
    } else {
      out.push_back({label_text(item, at), "symbol"});
    }
  }
  return out;
}

// Every example's labels, checked against the patterns' `examples` x `length` tokens.
std::vector<std::vector<train::TokenLabel>> checked_labels(const py::handle& labels,
                                                           std::int64_t examples,
                                                           std::int64_t length,
                                                           const std::string& where) {
  const std::string expected =
      std::to_string(examples) + " example(s) of " + std::to_string(length) + " tokens";
  if (!py::isinstance<py::sequence>(labels) || py::isinstance<py::str>(labels))
    throw ValueError(where + ": labels must be a list with one list of labels per example (" +
                     expected + "), got " +
                     py::str(py::type::of(labels).attr("__name__")).cast<std::string>());
  const auto rows = labels.cast<py::sequence>();
  if (static_cast<std::int64_t>(rows.size()) != examples)
    throw ValueError(where + ": labels must hold one list of labels per example (" + expected +
                     "), got " + std::to_string(rows.size()) + " list(s)");
  std::vector<std::vector<train::TokenLabel>> out;
  for (const auto& row : rows) {
    const std::string at = where + ", example " + std::to_string(out.size());
    out.push_back(to_labels(row, at));
    if (static_cast<std::int64_t>(out.back().size()) != length)
      throw ValueError(at + ": " + std::to_string(out.back().size()) + " labels for " +
                       std::to_string(length) + " tokens (one label per token)");
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
    for (const auto& row : d["examples"])
      g.examples.push_back(to_labels(row, "attention view: group '" + g.name + "', example " +
                                              std::to_string(g.examples.size())));
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
      "attention_view_labels",
      [](const py::object& labels, std::int64_t examples, std::int64_t length,
         const std::string& where) {
        py::list out;
        for (const auto& row : checked_labels(labels, examples, length, where)) {
          py::list r;
          for (const auto& l : row) r.append(py::make_tuple(l.text, l.role));
          out.append(r);
        }
        return out;
      },
      py::arg("labels"), py::arg("examples"), py::arg("length"), py::arg("where"),
      "The attention view's token labels as (text, role) pairs, checked: one list of `length` "
      "labels per example, each a str or a (text, role) pair of str that UTF-8 can write");
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
