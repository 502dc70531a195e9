// headgrad.inspect: Capture (recorded hook points, a context manager giving NumPy arrays),
// Hooks with Python hooks, run_with_cache, activation / path / attribution patching,
// ablation, direct logit attribution, the logit lens, importance, pruning and mechanism
// scores.
#include "docs/inspect.hpp"
#include "common.hpp"

namespace headgrad::python {
namespace {

using inspect::HeadId;

HeadId to_head(const py::handle& h) {
  const auto t = h.cast<py::sequence>();
  if (t.size() != 2) throw ValueError("a head is a (layer, head) pair");
  return HeadId{t[0].cast<std::int64_t>(), t[1].cast<std::int64_t>()};
}
std::vector<HeadId> to_heads(const py::handle& heads) {
  std::vector<HeadId> out;
  for (const auto& h : heads) out.push_back(to_head(h));
  return out;
}
py::list heads_list(const std::vector<HeadId>& heads) {
  py::list out;
  for (const auto& h : heads) out.append(py::make_tuple(h.layer, h.head));
  return out;
}

// --- with-blocks ---------------------------------------------------------------------------
// __enter__ opens a scope on the calling thread; __exit__ ends it, or raises (changing
// nothing) when blocks end out of order or on another thread (nn/handler_scope.hpp).
template <typename Holder, typename Handler>
Holder& enter_block(Holder& holder, Handler* handler, const char* what) {
  if (holder.scope && holder.scope->active())
    throw ValueError(std::string(what) + ": already active (its with-blocks do not nest; use " +
                     "a second " + what + " for a nested block)");
  holder.scope = std::make_unique<typename Handler::Scope>(handler);
  return holder;
}

template <typename Holder>
void exit_block(Holder& holder) {
  if (!holder.scope) return;
  holder.scope->end();
  holder.scope.reset();
}

// --- Capture -------------------------------------------------------------------------------
struct PyCapture {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<inspect::Capture> capture;
  std::unique_ptr<inspect::Capture::Scope> scope;
};

py::array detached_numpy(const Tensor& t) {
  const Tensor d = t.detach();
  return to_numpy(d.device().is_cpu() ? d : d.to(Device::cpu()));
}

void bind_capture(py::module_& m) {
  py::class_<PyCapture>(
      m, "Capture",
      "with Capture(model, points) as cap: ... records the model's hook points (by default the "
      "attention layers' q, k, v, scores, pattern, z and result) as '<module path>.<point>'; "
      "points: own names ('pattern') or full names ('layers.0.self_attn.pattern'), [] for every "
      "point")
      .def(py::init([](const std::shared_ptr<nn::Module>& model,
                       const std::optional<std::vector<std::string>>& points, bool retain_grads) {
             auto c = std::make_unique<PyCapture>();
             c->model = model;
             c->capture = std::make_unique<inspect::Capture>(
                 *model, points ? *points : inspect::head_points(), retain_grads);
             return c;
           }),
           py::arg("model"), py::arg("points") = py::none(), py::arg("retain_grads") = true,
           docs::capture_init)
      .def(
          "__enter__",
          [](PyCapture& c) -> PyCapture& { return enter_block(c, c.capture.get(), "Capture"); },
          py::return_value_policy::reference)
      .def("__exit__", [](PyCapture& c, const py::args&) { exit_block(c); })
      .def(
          "get",
          [](const PyCapture& c, const std::string& name) {
            return detached_numpy(c.capture->get(name));
          },
          py::arg("name"), docs::capture_get)
      .def("__getitem__",
           [](const PyCapture& c, const std::string& name) {
             return detached_numpy(c.capture->get(name));
           })
      .def(
          "grad",
          [](const PyCapture& c, const std::string& name) {
            return detached_numpy(c.capture->grad(name));
          },
          py::arg("name"), docs::capture_grad)
      .def(
          "tensor",
          [](const PyCapture& c, const std::string& name) { return c.capture->get(name); },
          py::arg("name"), docs::capture_tensor)
      .def(
          "names", [](const PyCapture& c) { return c.capture->names(); }, docs::capture_names)
      .def(
          "layer_names", [](const PyCapture& c) { return c.capture->layer_names(); },
          docs::capture_layer_names)
      .def("__contains__",
           [](const PyCapture& c, const std::string& n) { return c.capture->contains(n); })
      .def(
          "clear", [](PyCapture& c) { c.capture->clear(); }, docs::capture_clear);
  m.def(
      "head_points", [] { return inspect::head_points(); }, docs::head_points);
}

// --- hook points ------------------------------------------------------------------------
struct PyHooks {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<inspect::Hooks> hooks;
  std::unique_ptr<inspect::Hooks::Scope> scope;
  bool warned_inactive = false;
};

// Hooks run only inside `with hooks:`; adding them outside one is usually a forgotten block,
// so the first such add of each Hooks warns.
void warn_if_inactive(PyHooks& h, const std::string& name) {
  if (h.warned_inactive || h.hooks->active_on_this_thread()) return;
  h.warned_inactive = true;
  const std::string message =
      "Hooks.add('" + name + "'): this Hooks is not active, and its hooks run only inside " +
      "`with hooks:`; open the block before running the model (this warning shows once per " +
      "Hooks)";
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

inspect::HookFn hook_fn(py::function fn) {
  PyRef ref(std::move(fn));
  return [ref](const Tensor& value, const inspect::HookContext& context) {
    py::gil_scoped_acquire gil;
    return returned_tensor(ref.get()(value, context), "a hook");
  };
}

// The model's forward on one input: `run(input)` when given, GPT's own forward, or
// model(input) through Python.
inspect::ModelRun model_run(const py::object& model, const py::object& run) {
  if (!run.is_none()) {
    PyRef ref(run);
    return [ref](const Tensor& input) {
      py::gil_scoped_acquire gil;
      return returned_tensor(ref.get()(input), "run");
    };
  }
  if (py::isinstance<nn::GPT>(model)) {
    auto gpt = model.cast<std::shared_ptr<nn::GPT>>();
    return [gpt](const Tensor& input) { return gpt->forward(input); };
  }
  PyRef ref(model);
  return [ref](const Tensor& input) {
    py::gil_scoped_acquire gil;
    return returned_tensor(ref.get()(input), "the model");
  };
}

// logit_difference at fixed positions and answers, as a metric object (native, no Python
// call per run).
struct LogitDifference {
  Tensor position, answer, wrong;
  Tensor operator()(const Tensor& logits) const {
    return inspect::logit_difference(logits, position, answer, wrong);
  }
};

inspect::LogitsMetric logits_metric(const py::object& metric) {
  if (py::isinstance<LogitDifference>(metric)) return metric.cast<LogitDifference>();
  PyRef ref(metric);
  return [ref](const Tensor& logits) {
    py::gil_scoped_acquire gil;
    return returned_tensor(ref.get()(logits), "the metric");
  };
}

// HookContext: where a hook runs.
void bind_hook_context(py::module_& m) {
  py::class_<inspect::HookContext>(m, "HookContext",
                                   "Where a hook runs: name, module, point, layer, head")
      .def_readonly("name", &inspect::HookContext::name, docs::hook_context_name)
      .def_readonly("module", &inspect::HookContext::module, docs::hook_context_module)
      .def_readonly("point", &inspect::HookContext::point, docs::hook_context_point)
      .def_readonly("per_head", &inspect::HookContext::per_head, docs::hook_context_per_head)
      .def_readonly("layer", &inspect::HookContext::layer, docs::hook_context_layer)
      .def_readonly("head", &inspect::HookContext::head, docs::hook_context_head)
      .def("__repr__", [](const inspect::HookContext& c) {
        return "HookContext(name='" + c.name + "', head=" + std::to_string(c.head) + ")";
      });
}

// Hooks: Python hooks on a model's hook points, active in a with-block.
void bind_hooks(py::module_& m) {
  py::class_<PyHooks>(m, "Hooks",
                      "with Hooks(model) as hooks: hooks.add('layers.0.self_attn.z', fn, head=3); "
                      "fn(value, context) -> replacement or None")
      .def(py::init([](const std::shared_ptr<nn::Module>& model) {
             auto h = std::make_unique<PyHooks>();
             h->model = model;
             h->hooks = std::make_unique<inspect::Hooks>(*model);
             return h;
           }),
           py::arg("model"), docs::hooks_init)
      .def(
          "add",
          [](PyHooks& h, const std::string& name, py::function fn,
             const std::optional<std::int64_t>& head) {
            if (head)
              h.hooks->add(name, *head, hook_fn(std::move(fn)));
            else
              h.hooks->add(name, hook_fn(std::move(fn)));
            warn_if_inactive(h, name);
          },
          py::arg("name"), py::arg("hook"), py::arg("head") = py::none(), docs::hooks_add)
      .def(
          "clear", [](PyHooks& h) { h.hooks->clear(); }, docs::hooks_clear)
      .def(
          "names", [](const PyHooks& h) { return h.hooks->names(); }, docs::hooks_names)
      .def(
          "names_at",
          [](const PyHooks& h, const std::string& point) { return h.hooks->names_at(point); },
          py::arg("point"), docs::hooks_names_at)
      .def(
          "point_names", [](const PyHooks& h) { return h.hooks->point_names(); },
          docs::hooks_point_names)
      .def("__contains__",
           [](const PyHooks& h, const std::string& n) { return h.hooks->contains(n); })
      .def(
          "__enter__",
          [](PyHooks& h) -> PyHooks& { return enter_block(h, h.hooks.get(), "Hooks"); },
          py::return_value_policy::reference)
      .def("__exit__", [](PyHooks& h, const py::args&) { exit_block(h); });
}

// ActivationCache and run_with_cache.
void bind_run_with_cache(py::module_& m) {
  py::class_<inspect::ActivationCache>(m, "ActivationCache",
                                       "One run's activations by hook-point name")
      .def("__getitem__", &inspect::ActivationCache::get)
      .def("get", &inspect::ActivationCache::get, py::arg("name"), docs::cache_get)
      .def("grad", &inspect::ActivationCache::grad, py::arg("name"), docs::cache_grad)
      .def("__contains__", &inspect::ActivationCache::contains)
      .def("names", &inspect::ActivationCache::names, docs::cache_names)
      .def("keys", &inspect::ActivationCache::names, docs::cache_keys)
      .def("__len__", [](const inspect::ActivationCache& c) { return c.names().size(); });
  m.def(
      "run_with_cache",
      [](const py::object& model, const py::object& input,
         const std::optional<std::vector<std::string>>& names, bool with_grads, PyHooks* hooks) {
        const auto module = model.cast<std::shared_ptr<nn::Module>>();
        std::function<Tensor()> forward;
        if (py::isinstance<Tensor>(input)) {
          const auto run = model_run(model, py::none());
          const Tensor x = input.cast<Tensor>();
          forward = [run, x] { return run(x); };
        } else {
          PyRef ref(input);
          forward = [ref] {
            py::gil_scoped_acquire gil;
            return returned_tensor(ref.get()(), "the forward");
          };
        }
        inspect::CacheOptions o;
        if (names) o.names = *names;
        o.with_grads = with_grads;
        auto run =
            inspect::run_with_cache(*module, forward, o, hooks ? hooks->hooks.get() : nullptr);
        return py::make_tuple(run.output, run.cache);
      },
      py::arg("model"), py::arg("input"), py::arg("names") = py::none(),
      py::arg("with_grads") = false, py::arg("hooks") = nullptr, docs::run_with_cache);
}

// --- patching -----------------------------------------------------------------------------
struct PyPatching {
  py::object model;
  std::unique_ptr<inspect::Patching> patching;
};

// inspect::CorruptedPrompts as the dict Python sees.
py::dict corrupted_prompts_dict(const inspect::CorruptedPrompts& c) {
  py::dict d;
  d["clean"] = c.clean;
  d["corrupted"] = c.corrupted;
  d["key_padding_mask"] = tensor_or_none(c.key_padding_mask);
  d["position"] = c.position;
  d["answer"] = c.answer;
  d["wrong"] = c.wrong;
  d["kept"] = c.kept;
  d["dropped"] = c.dropped;
  return d;
}

// Every grid and ablation names its point first: that is where a Ctrl-C no loop reported
// (pressed after the last check of an earlier call) is dropped, so it cannot stop this one.
std::string patching_point(const std::string& p) {
  forget_interrupt();
  return p;
}

// LogitDifference (the native metric) and logit_difference.
void bind_logit_difference(py::module_& m) {
  py::class_<LogitDifference>(m, "LogitDifference",
                              "LogitDifference(position, answer, wrong): metric(logits) = the "
                              "mean over the batch (a scalar Tensor) of logits[n, position[n], "
                              "answer[n]] - logits[n, position[n], wrong[n]]; position, answer, "
                              "wrong int64 (N); a position may count from the end, token ids "
                              "must lie in [0, vocab)")
      .def(py::init([](const Tensor& position, const Tensor& answer, const Tensor& wrong) {
             return LogitDifference{position, answer, wrong};
           }),
           py::arg("position"), py::arg("answer"), py::arg("wrong"), docs::logit_difference_init)
      .def("__call__", &LogitDifference::operator(), py::arg("logits"));
  m.def("logit_difference", &inspect::logit_difference, py::arg("logits"), py::arg("position"),
        py::arg("answer"), py::arg("wrong"), docs::logit_difference);
}

// PatchingGrid: a grid of normalised metrics.
void bind_patching_grid(py::module_& m) {
  py::class_<inspect::PatchingGrid>(m, "PatchingGrid",
                                    "A grid of normalised metrics: values shaped `shape`")
      .def_readonly("point", &inspect::PatchingGrid::point, docs::grid_point)
      .def_readonly("rows", &inspect::PatchingGrid::rows, docs::grid_rows)
      .def_readonly("dims", &inspect::PatchingGrid::dims, docs::grid_dims)
      .def_property_readonly(
          "shape", [](const inspect::PatchingGrid& g) { return py::tuple(py::cast(g.shape)); },
          docs::grid_shape)
      .def_property_readonly(
          "values", [](const inspect::PatchingGrid& g) { return to_numpy(g.tensor()); },
          "A float64 NumPy array shaped `shape`")
      .def(
          "numpy", [](const inspect::PatchingGrid& g) { return to_numpy(g.tensor()); },
          docs::grid_numpy)
      .def(
          "__array__",
          [](const inspect::PatchingGrid& g, const py::object&) { return to_numpy(g.tensor()); },
          py::arg("dtype") = py::none())
      .def("at", &inspect::PatchingGrid::at, py::arg("i"), py::arg("j") = -1, py::arg("k") = -1,
           docs::grid_at)
      .def("tensor", &inspect::PatchingGrid::tensor, docs::grid_tensor);
}

// Patching: its constructor, the clean and corrupted metrics and caches, and patch.
void bind_patching_class(py::module_& m) {
  py::class_<PyPatching>(m, "Patching",
                         "Activation patching: clean and corrupted inputs, a metric of the logits "
                         "(LogitDifference or any function logits -> scalar tensor)")
      .def(py::init([](const py::object& model, const Tensor& clean, const Tensor& corrupted,
                       const py::object& metric, const py::object& run) {
             auto p = std::make_unique<PyPatching>();
             p->model = model;  // keeps the model alive while the Patching refers to it
             if (run.is_none() && py::isinstance<nn::GPT>(model))  // runs resume mid-model
               p->patching = std::make_unique<inspect::Patching>(model.cast<nn::GPT&>(), clean,
                                                                 corrupted, logits_metric(metric));
             else
               p->patching = std::make_unique<inspect::Patching>(model.cast<nn::Module&>(),
                                                                 model_run(model, run), clean,
                                                                 corrupted, logits_metric(metric));
             return p;
           }),
           py::arg("model"), py::arg("clean"), py::arg("corrupted"), py::arg("metric"),
           py::kw_only(), py::arg("run") = py::none(), docs::patching_init)
      .def_property_readonly(
          "clean_metric", [](const PyPatching& p) { return p.patching->clean_metric(); },
          docs::patching_clean_metric)
      .def_property_readonly(
          "corrupted_metric", [](const PyPatching& p) { return p.patching->corrupted_metric(); },
          docs::patching_corrupted_metric)
      .def_property_readonly(
          "clean_cache", [](const PyPatching& p) { return p.patching->clean_cache(); },
          docs::patching_clean_cache)
      .def_property_readonly(
          "corrupted_cache", [](const PyPatching& p) { return p.patching->corrupted_cache(); },
          docs::patching_corrupted_cache)
      .def(
          "normalise", [](const PyPatching& p, double v) { return p.patching->normalise(v); },
          py::arg("metric"), docs::patching_normalise)
      .def(
          "patch",
          [](const PyPatching& p, const py::object& patches) {
            std::vector<inspect::Patching::Patch> list;
            auto one = [](const py::handle& item) {
              if (py::isinstance<py::str>(item))
                return inspect::Patching::Patch{item.cast<std::string>(), -1, -1};
              const auto t = item.cast<py::sequence>();
              inspect::Patching::Patch patch{t[0].cast<std::string>(), -1, -1};
              if (t.size() > 1 && !t[1].is_none()) patch.head = t[1].cast<std::int64_t>();
              if (t.size() > 2 && !t[2].is_none()) patch.position = t[2].cast<std::int64_t>();
              return patch;
            };
            if (py::isinstance<py::str>(patches) || py::isinstance<py::tuple>(patches))
              list.push_back(one(patches));
            else
              for (const auto& item : patches) list.push_back(one(item));
            return p.patching->patch(list);
          },
          py::arg("patches"), docs::patching_patch);
}

// Patching's grids: by_layer, by_head, by_position and the attribution grids.
void bind_patching_grids(py::module_& m) {
  auto patching = py::reinterpret_borrow<py::class_<PyPatching>>(m.attr("Patching"));
  patching
      .def(
          "by_layer",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->by_layer(patching_point(pt));
          },
          py::arg("point") = "resid_pre", docs::patching_by_layer)
      .def(
          "by_head",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->by_head(patching_point(pt));
          },
          py::arg("point") = "z", docs::patching_by_head)
      .def(
          "by_head_position",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->by_head_position(patching_point(pt));
          },
          py::arg("point") = "z", docs::patching_by_head_position)
      .def(
          "by_position",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->by_position(patching_point(pt));
          },
          py::arg("point") = "resid_pre", docs::patching_by_position)
      .def(
          "attribution_by_head",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->attribution_by_head(patching_point(pt));
          },
          py::arg("point") = "z", docs::patching_attribution_by_head)
      .def(
          "attribution_by_head_position",
          [](const PyPatching& p, const std::string& pt) {
            return p.patching->attribution_by_head_position(patching_point(pt));
          },
          py::arg("point") = "z", docs::patching_attribution_by_head_position);
}

// Patching's path patching and fewest_heads_restoring.
void bind_path_patching(py::module_& m) {
  auto patching = py::reinterpret_borrow<py::class_<PyPatching>>(m.attr("Patching"));
  patching
      .def(
          "path_patch",
          [](const PyPatching& p, const py::object& sender, const py::object& receiver,
             const std::string& via) {
            return p.patching->path_patch(to_head(sender), to_head(receiver), patching_point(via));
          },
          py::arg("sender"), py::arg("receiver"), py::arg("via") = "q", docs::patching_path_patch)
      .def(
          "path_patching",
          [](const PyPatching& p, const py::object& receiver, const std::string& via) {
            return p.patching->path_patching(to_head(receiver), patching_point(via));
          },
          py::arg("receiver"), py::arg("via") = "q", docs::patching_path_patching)
      .def(
          "fewest_heads_restoring",
          [](const PyPatching& p, double fraction) {
            const auto r = p.patching->fewest_heads_restoring(fraction);
            py::dict d;
            d["heads"] = heads_list(r.heads);
            d["restored"] = r.restored;
            return d;
          },
          py::arg("fraction") = 0.9, docs::patching_fewest_heads_restoring);
}

// ablate_heads: each head ablated in turn.
void bind_ablation(py::module_& m) {
  m.def(
      "ablate_heads",
      [](const py::object& model, const Tensor& input, const Tensor& reference,
         const py::object& metric, const std::string& kind, const std::string& pt,
         std::uint64_t seed, const py::object& run) {
        const auto t = inspect::ablate_heads(
            model.cast<nn::Module&>(), model_run(model, run), input, reference,
            logits_metric(metric), inspect::parse_ablation(kind), patching_point(pt), seed);
        py::dict d;
        d["kind"] = inspect::to_string(t.kind);
        d["point"] = t.point;
        d["baseline"] = t.baseline;
        d["metric"] = t.metric;
        return d;
      },
      py::arg("model"), py::arg("input"), py::arg("reference"), py::arg("metric"),
      py::arg("kind") = "zero", py::arg("point") = "z", py::arg("seed") = 0, py::kw_only(),
      py::arg("run") = py::none(), docs::ablate_heads);
}

// direct_logit_attribution and logit_lens.
void bind_logit_attribution(py::module_& m) {
  m.def(
      "direct_logit_attribution",
      [](const nn::GPT& model, const Tensor& input, const Tensor& position, const Tensor& answer,
         const Tensor& wrong) {
        const auto a = inspect::direct_logit_attribution(model, input, position, answer, wrong);
        py::dict d;
        d["labels"] = a.labels;
        d["values"] = a.values;
        d["heads"] = a.heads;
        d["logit_difference"] = a.logit_difference;
        d["sum"] = a.sum();
        return d;
      },
      py::arg("model"), py::arg("input"), py::arg("position"), py::arg("answer"), py::arg("wrong"),
      docs::direct_logit_attribution);
  m.def(
      "logit_lens",
      [](const nn::GPT& model, const Tensor& input) {
        const auto lens = inspect::logit_lens(model, input);
        py::dict d;
        for (std::size_t i = 0; i < lens.stages.size(); ++i)
          d[py::str(lens.stages[i])] = lens.logits[i];
        return d;
      },
      py::arg("model"), py::arg("input"), docs::logit_lens);
}

// corrupt_recall and corrupt_recall_query: the recall tasks' patching prompts.
void bind_corrupted_prompts(py::module_& m) {
  m.def(
      "corrupt_recall",
      [](const train::Task& task, const train::Batch& batch, const std::string& corruption) {
        return corrupted_prompts_dict(
            inspect::corrupt_recall(task, batch, inspect::parse_recall_corruption(corruption)));
      },
      py::arg("task"), py::arg("batch"), py::arg("corruption") = "query", docs::corrupt_recall);
  m.def(
      "corrupt_recall_query",
      [](const train::Task& task, const train::Batch& batch) {
        return corrupted_prompts_dict(inspect::corrupt_recall_query(task, batch));
      },
      py::arg("task"), py::arg("batch"), docs::corrupt_recall_query);
}

// --- importance, pruning, mechanism scores ---------------------------------------------------
// attention_layers and head_grad_norms.
void bind_attention_layers(py::module_& m) {
  m.def(
      "attention_layers",
      [](const std::shared_ptr<nn::Module>& model) {
        py::list out;
        for (const auto& l : inspect::attention_layers(*model))
          out.append(py::make_tuple(l.name, py::cast(l.layer, py::return_value_policy::reference)));
        return out;
      },
      py::arg("model"), py::keep_alive<0, 1>(), docs::attention_layers);
  m.def(
      "head_grad_norms",
      [](nn::Module& model, PyCapture* capture) {
        py::list out;
        for (const auto& n :
             inspect::head_grad_norms(model, capture ? capture->capture.get() : nullptr)) {
          py::dict d;
          d["layer"] = n.layer;
          d["head"] = n.head;
          d["w_q"] = n.w_q;
          d["w_k"] = n.w_k;
          d["w_v"] = n.w_v;
          d["w_o"] = n.w_o;
          d["z"] = n.z < 0 ? py::object(py::none()) : py::object(py::float_(n.z));
          out.append(d);
        }
        return out;
      },
      py::arg("model"), py::arg("capture") = nullptr, docs::head_grad_norms);
}

// HeadImportance and the head orders: head_importance, importance_order, random / greedy.
void bind_head_importance(py::module_& m) {
  py::class_<inspect::HeadImportance>(m, "HeadImportance", docs::head_importance_class)
      .def_readonly("layers", &inspect::HeadImportance::layers, docs::head_importance_layers)
      .def_readonly("raw", &inspect::HeadImportance::raw, docs::head_importance_raw)
      .def_readonly("normalized", &inspect::HeadImportance::normalized,
                    docs::head_importance_normalized)
      .def_readonly("examples", &inspect::HeadImportance::examples, docs::head_importance_examples);
  m.def(
      "head_importance",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task,
         const std::string& split, std::int64_t batches, std::int64_t batch_size,
         const py::object& forward) {
        const auto fn = forward_for(model, forward);
        py::gil_scoped_release release;
        return inspect::head_importance(*model, fn, task, to_split(split), batches, batch_size);
      },
      py::arg("model"), py::arg("task"), py::arg("split") = "validation", py::arg("batches") = 4,
      py::arg("batch_size") = 64, py::arg("forward") = py::none(), docs::head_importance);
  m.def(
      "importance_order",
      [](const inspect::HeadImportance& imp, const std::string& ranking) {
        const auto r =
            ranking == "raw"          ? inspect::ImportanceRanking::raw
            : ranking == "normalized" ? inspect::ImportanceRanking::normalized
            : ranking == "automatic"
                ? inspect::ImportanceRanking::automatic
                : throw ValueError("ranking '" + ranking + "' is not automatic, raw or normalized");
        return heads_list(inspect::importance_order(imp, r));
      },
      py::arg("importance"), py::arg("ranking") = "automatic", docs::importance_order);
  m.def(
      "random_order",
      [](nn::Module& model, std::uint64_t seed) {
        return heads_list(inspect::random_order(model, seed));
      },
      py::arg("model"), py::arg("seed"), docs::random_order);
  m.def(
      "greedy_order",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task,
         const std::string& split, std::int64_t batches, std::int64_t batch_size,
         const py::object& forward) {
        const auto fn = forward_for(model, forward);
        std::vector<HeadId> order;
        {
          py::gil_scoped_release release;
          order = inspect::greedy_order(*model, fn, task, to_split(split), batches, batch_size);
        }
        return heads_list(order);
      },
      py::arg("model"), py::arg("task"), py::arg("split") = "validation", py::arg("batches") = 4,
      py::arg("batch_size") = 64, py::arg("forward") = py::none(), docs::greedy_order);
}

// pruning_curve: loss and accuracy as the heads of an order are removed.
void bind_pruning_curve(py::module_& m) {
  m.def(
      "pruning_curve",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task, const py::object& order,
         const std::string& split, std::int64_t batches, std::int64_t batch_size,
         const py::object& forward) {
        const auto fn = forward_for(model, forward);
        const auto heads = to_heads(order);
        std::vector<inspect::PruningPoint> curve;
        {
          py::gil_scoped_release release;
          curve =
              inspect::pruning_curve(*model, fn, task, to_split(split), batches, batch_size, heads);
        }
        py::list out;
        for (const auto& p : curve) {
          py::dict d;
          d["removed"] = p.removed;
          d["loss"] = p.loss;
          d["accuracy"] = p.accuracy;
          out.append(d);
        }
        return out;
      },
      py::arg("model"), py::arg("task"), py::arg("order"), py::arg("split") = "validation",
      py::arg("batches") = 4, py::arg("batch_size") = 64, py::arg("forward") = py::none(),
      docs::pruning_curve);
}

// random_pruning_band: the pruning curves of random orders.
void bind_random_pruning_band(py::module_& m) {
  m.def(
      "random_pruning_band",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task, std::int64_t orders,
         std::uint64_t seed, double coverage, const std::string& split, std::int64_t batches,
         std::int64_t batch_size, const py::object& forward) {
        const auto fn = forward_for(model, forward);
        inspect::PruningBand b;
        {
          py::gil_scoped_release release;
          b = inspect::random_pruning_band(*model, fn, task, to_split(split), batches, batch_size,
                                           orders, seed, coverage);
        }
        py::dict d;
        d["removed"] = b.removed;
        d["mean_accuracy"] = b.mean_accuracy;
        d["low_accuracy"] = b.low_accuracy;
        d["high_accuracy"] = b.high_accuracy;
        d["mean_loss"] = b.mean_loss;
        d["low_loss"] = b.low_loss;
        d["high_loss"] = b.high_loss;
        d["orders"] = b.orders;
        d["evaluations"] = b.evaluations;
        return d;
      },
      py::arg("model"), py::arg("task"), py::arg("orders"), py::arg("seed") = 0,
      py::arg("coverage") = 0.95, py::arg("split") = "validation", py::arg("batches") = 4,
      py::arg("batch_size") = 64, py::arg("forward") = py::none(), docs::random_pruning_band);
}

// head_parameter_counts and attention_parameter_count.
void bind_parameter_counts(py::module_& m) {
  m.def(
      "head_parameter_counts",
      [](nn::Module& model) { return inspect::head_parameter_counts(model); }, py::arg("model"),
      docs::head_parameter_counts);
  m.def(
      "attention_parameter_count",
      [](nn::Module& model) { return inspect::attention_parameter_count(model); }, py::arg("model"),
      docs::attention_parameter_count);
}

// HeadAblation: a with-block that gates heads off.
void bind_head_ablation(py::module_& m) {
  struct PyHeadAblation {
    std::shared_ptr<nn::Module> model;
    std::vector<HeadId> heads;
    std::unique_ptr<inspect::HeadAblation> ablation;
  };
  py::class_<PyHeadAblation>(
      m, "HeadAblation", "with HeadAblation(model, [(layer, head), ...]): those heads' gates are 0")
      .def(py::init([](const std::shared_ptr<nn::Module>& model, const py::object& heads) {
             return PyHeadAblation{model, to_heads(heads), nullptr};
           }),
           py::arg("model"), py::arg("heads"), docs::head_ablation_init)
      .def(
          "__enter__",
          [](PyHeadAblation& a) -> PyHeadAblation& {
            a.ablation = std::make_unique<inspect::HeadAblation>(*a.model, a.heads);
            return a;
          },
          py::return_value_policy::reference)
      .def("__exit__", [](PyHeadAblation& a, const py::args&) { a.ablation.reset(); });
}

// MechanismScores, mechanism_scores and mechanism_scores_of_patterns.
void bind_mechanism_scores(py::module_& m) {
  py::class_<inspect::MechanismScores>(m, "MechanismScores",
                                       "Previous-token and induction scores, [layer][head]")
      .def_readonly("layers", &inspect::MechanismScores::layers, docs::mechanism_layers)
      .def_readonly("previous_token", &inspect::MechanismScores::previous_token,
                    docs::mechanism_previous_token)
      .def_readonly("induction", &inspect::MechanismScores::induction, docs::mechanism_induction)
      .def_readonly("induction_scored", &inspect::MechanismScores::induction_scored,
                    docs::mechanism_induction_scored)
      .def_readonly("positions_previous", &inspect::MechanismScores::positions_previous,
                    docs::mechanism_positions_previous)
      .def_readonly("positions_induction", &inspect::MechanismScores::positions_induction,
                    docs::mechanism_positions_induction)
      .def_readonly("positions_induction_scored",
                    &inspect::MechanismScores::positions_induction_scored,
                    docs::mechanism_positions_induction_scored);
  m.def(
      "mechanism_scores",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task,
         const std::string& split, std::int64_t batches, std::int64_t batch_size,
         const py::object& forward) {
        const auto fn = forward_for(model, forward);
        py::gil_scoped_release release;
        return inspect::mechanism_scores(*model, fn, task, to_split(split), batches, batch_size);
      },
      py::arg("model"), py::arg("task"), py::arg("split") = "validation", py::arg("batches") = 4,
      py::arg("batch_size") = 64, py::arg("forward") = py::none(), docs::mechanism_scores);
  m.def(
      "mechanism_scores_of_patterns",
      [](const std::vector<Tensor>& patterns, const Tensor& tokens,
         const std::optional<Tensor>& kpm, const std::optional<Tensor>& scored) {
        return inspect::mechanism_scores(patterns, tokens, optional_tensor(kpm),
                                         optional_tensor(scored));
      },
      py::arg("patterns"), py::arg("tokens"), py::arg("key_padding_mask") = py::none(),
      py::arg("scored") = py::none(), docs::mechanism_scores_of_patterns);
}

}  // namespace

void bind_inspect(py::module_& m) {
  bind_capture(m);
  bind_hook_context(m);
  bind_hooks(m);
  bind_run_with_cache(m);
  bind_logit_difference(m);
  bind_patching_grid(m);
  bind_patching_class(m);
  bind_patching_grids(m);
  bind_path_patching(m);
  bind_ablation(m);
  bind_logit_attribution(m);
  bind_corrupted_prompts(m);
  bind_attention_layers(m);
  bind_head_importance(m);
  bind_pruning_curve(m);
  bind_random_pruning_band(m);
  bind_parameter_counts(m);
  bind_head_ablation(m);
  bind_mechanism_scores(m);
  bind_view(m);
}

}  // namespace headgrad::python
