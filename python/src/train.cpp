// headgrad.train: the synthetic tasks and their batches, the loss and evaluation, the
// Trainer (its loop runs without the GIL; a Python forward or callback takes it back), and
// save / load of modules.
#include "docs/train.hpp"
#include "common.hpp"

namespace headgrad::python {

// The forward function the trainer and the inspection helpers call on a batch: a Python
// callable forward(batch) -> logits, or, without one, the model's own forward on the
// batch's fields (GPT on tokens or continuous inputs, the classifiers on tokens and mask).
train::ForwardFn forward_for(const std::shared_ptr<nn::Module>& model, const py::object& forward) {
  if (!forward.is_none()) {
    PyRef ref(forward);
    return [ref](const train::Batch& b) {
      py::gil_scoped_acquire gil;
      return returned_tensor(ref.get()(b), "forward");
    };
  }
  if (auto gpt = std::dynamic_pointer_cast<nn::GPT>(model))
    return [gpt](const train::Batch& b) {
      return gpt->forward(b.tokens.defined() ? b.tokens : b.inputs, b.key_padding_mask);
    };
  if (auto clf = std::dynamic_pointer_cast<nn::EncoderClassifier>(model))
    return [clf](const train::Batch& b) { return clf->forward(b.tokens, b.key_padding_mask); };
  if (auto fusion = std::dynamic_pointer_cast<nn::FusionClassifier>(model))
    return [fusion](const train::Batch& b) {
      return fusion->forward(b.tokens, b.key_padding_mask, b.features);
    };
  throw ValueError("forward: a " + model->type_name() +
                   " has no default forward on a batch; pass forward=lambda batch: model(...)");
}

namespace {

py::dict metrics_dict(const train::Metrics& m) {
  py::dict d;
  d["step"] = m.step;
  d["loss"] = m.loss;
  d["accuracy"] = m.accuracy;
  d["correct"] = m.correct;
  d["scored"] = m.scored;
  return d;
}

std::optional<Tensor> maybe(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

// Batch: one batch of a task.
void bind_batch(py::module_& m) {
  py::class_<train::Batch>(m, "Batch",
                           "One batch of a task: tokens, targets and masks (None where absent)")
      .def(py::init([](const std::optional<Tensor>& tokens, const std::optional<Tensor>& targets,
                       const std::optional<Tensor>& kpm, const std::optional<Tensor>& features,
                       const std::optional<Tensor>& inputs,
                       const std::optional<Tensor>& target_mask) {
             return train::Batch{optional_tensor(tokens), optional_tensor(targets),
                                 optional_tensor(kpm),    optional_tensor(features),
                                 optional_tensor(inputs), optional_tensor(target_mask)};
           }),
           py::kw_only(), py::arg("tokens") = py::none(), py::arg("targets") = py::none(),
           py::arg("key_padding_mask") = py::none(), py::arg("features") = py::none(),
           py::arg("inputs") = py::none(), py::arg("target_mask") = py::none(), docs::batch_init)
      .def_property_readonly(
          "tokens", [](const train::Batch& b) { return maybe(b.tokens); }, docs::batch_tokens)
      .def_property_readonly(
          "targets", [](const train::Batch& b) { return maybe(b.targets); }, docs::batch_targets)
      .def_property_readonly(
          "key_padding_mask", [](const train::Batch& b) { return maybe(b.key_padding_mask); },
          docs::batch_key_padding_mask)
      .def_property_readonly(
          "features", [](const train::Batch& b) { return maybe(b.features); }, docs::batch_features)
      .def_property_readonly(
          "inputs", [](const train::Batch& b) { return maybe(b.inputs); }, docs::batch_inputs)
      .def_property_readonly(
          "target_mask", [](const train::Batch& b) { return maybe(b.target_mask); },
          docs::batch_target_mask)
      .def(
          "to", [](const train::Batch& b, const py::object& d) { return b.to(to_device(d)); },
          py::arg("device"), docs::batch_to)
      .def("__len__", &train::Batch::size);
}

// Task: a synthetic task, its batches, baselines and token labels.
void bind_task(py::module_& m) {
  py::class_<train::Task, std::shared_ptr<train::Task>>(m, "Task", "A synthetic task (make_task)")
      .def_property_readonly("name", &train::Task::name, docs::task_name)
      .def_property_readonly(
          "kind", [](const train::Task& t) { return train::to_string(t.kind()); }, docs::task_kind)
      .def_property_readonly("vocab_size", &train::Task::vocab_size, docs::task_vocab_size)
      .def_property_readonly("max_len", &train::Task::max_len, docs::task_max_len)
      .def_property_readonly("num_classes", &train::Task::num_classes, docs::task_num_classes)
      .def_property_readonly("num_features", &train::Task::num_features, docs::task_num_features)
      .def_property_readonly("input_dim", &train::Task::input_dim, docs::task_input_dim)
      .def(
          "batch",
          [](const train::Task& t, const std::string& split, std::int64_t index,
             std::int64_t size) { return t.batch(to_split(split), index, size); },
          py::arg("split"), py::arg("index"), py::arg("batch_size"), docs::task_batch)
      .def(
          "baselines",
          [](const train::Task& t, const std::string& split, std::int64_t batches,
             std::int64_t size) {
            py::list out;
            for (const auto& b : t.baselines(to_split(split), batches, size)) {
              py::dict d;
              d["name"] = b.name;
              d["description"] = b.description;
              d["loss"] = b.loss;
              d["accuracy"] = b.accuracy;
              d["exact_loss"] = b.exact_loss;
              d["exact_accuracy"] = b.exact_accuracy;
              out.append(d);
            }
            return out;
          },
          py::arg("split"), py::arg("batches"), py::arg("batch_size"), docs::task_baselines)
      .def(
          "token_labels",
          [](const train::Task& t, const std::vector<std::int64_t>& ids) {
            py::list out;
            for (const auto& l : t.token_labels(ids)) out.append(py::make_tuple(l.text, l.role));
            return out;
          },
          py::arg("tokens"), docs::task_token_labels)
      .def("__repr__", [](const train::Task& t) { return "Task('" + t.name() + "')"; });
}

// make_task, induction_probe, task_names and IGNORE_INDEX.
void bind_make_task(py::module_& m) {
  m.def(
      "make_task",
      [](const std::string& name, std::uint64_t seed, std::int64_t length, std::int64_t min_length,
         std::int64_t alphabet, double validation_fraction, double test_fraction,
         std::int64_t modulus, std::int64_t num_features, std::int64_t context, std::int64_t dim,
         const std::string& corpus) {
        train::TaskOptions o;
        o.seed = seed;
        o.length = length;
        o.min_length = min_length;
        o.alphabet = alphabet;
        o.validation_fraction = validation_fraction;
        o.test_fraction = test_fraction;
        o.modulus = modulus;
        o.num_features = num_features;
        o.context = context;
        o.dim = dim;
        o.corpus = corpus;
        return std::shared_ptr<train::Task>(train::make_task(name, o));
      },
      py::arg("name"), py::kw_only(), py::arg("seed") = 0, py::arg("length") = 8,
      py::arg("min_length") = 0, py::arg("alphabet") = 0, py::arg("validation_fraction") = 0.3,
      py::arg("test_fraction") = 0.0, py::arg("modulus") = 31, py::arg("num_features") = 4,
      py::arg("context") = 0, py::arg("dim") = 0, py::arg("corpus") = "", docs::make_task);
  m.def("induction_probe", &train::induction_probe, py::arg("task"), py::arg("half"),
        py::arg("batch_size"), py::arg("seed") = 0, docs::induction_probe);
  m.def("task_names", &train::task_names, docs::task_names);
  m.attr("IGNORE_INDEX") = train::kIgnoreIndex;
}

// task_loss, evaluate_logits and evaluate.
void bind_loss_and_evaluation(py::module_& m) {
  auto kind_of = [](const std::string& kind) {
    if (kind == "sequence") return train::TaskKind::sequence;
    if (kind == "classification") return train::TaskKind::classification;
    if (kind == "regression") return train::TaskKind::regression;
    throw ValueError("task kind '" + kind + "' is not sequence, classification or regression");
  };
  m.def(
      "task_loss",
      [kind_of](const Tensor& logits, const train::Batch& b, const std::string& kind) {
        return train::task_loss(logits, b, kind_of(kind));
      },
      py::arg("logits"), py::arg("batch"), py::arg("kind") = "sequence", docs::task_loss);
  m.def(
      "evaluate_logits",
      [kind_of](const Tensor& logits, const train::Batch& b, const std::string& kind) {
        return metrics_dict(train::evaluate_logits(logits, b, kind_of(kind)));
      },
      py::arg("logits"), py::arg("batch"), py::arg("kind") = "sequence", docs::evaluate_logits);
  m.def(
      "evaluate",
      [](const std::shared_ptr<nn::Module>& model, const train::Task& task,
         const std::string& split, std::int64_t batches, std::int64_t batch_size,
         const py::object& forward) {
        const auto fn = forward_for(model, forward);
        py::gil_scoped_release release;
        const auto r = train::evaluate(*model, fn, task, to_split(split), batches, batch_size);
        py::gil_scoped_acquire gil;
        return metrics_dict(r);
      },
      py::arg("model"), py::arg("task"), py::arg("split") = "validation", py::arg("batches") = 8,
      py::arg("batch_size") = 64, py::arg("forward") = py::none(), docs::evaluate);
}

// The Trainer with the objects it refers to kept alive by the Python object.
struct PyTrainer {
  std::shared_ptr<nn::Module> model;
  std::shared_ptr<train::Task> task;
  py::object optimizer;  // keeps the Python optimizer alive
  std::unique_ptr<train::Trainer> trainer;
};

// Trainer: the class and its constructor.
void bind_trainer(py::module_& m) {
  py::class_<PyTrainer>(m, "Trainer", docs::trainer)
      .def(py::init([](const std::shared_ptr<nn::Module>& model,
                       const std::shared_ptr<train::Task>& task, const py::object& optimizer,
                       std::int64_t steps, std::int64_t batch_size, std::int64_t eval_every,
                       std::int64_t eval_batches, std::int64_t checkpoint_every,
                       std::int64_t log_every, double clip, const std::string& out_dir,
                       const py::object& device, bool resume, bool progress,
                       const std::optional<optim::LRSchedule>& schedule, const py::object& forward,
                       const py::object& on_evaluate, const py::object& after_backward) {
             auto t = std::make_unique<PyTrainer>();
             t->model = model;
             t->task = task;
             t->optimizer = optimizer;
             train::TrainerOptions o;
             o.steps = steps;
             o.batch_size = batch_size;
             o.eval_every = eval_every;
             o.eval_batches = eval_batches;
             o.checkpoint_every = checkpoint_every;
             o.log_every = log_every;
             o.clip_grad_norm = clip;
             o.out_dir = out_dir;
             if (!device.is_none()) o.device = to_device(device);
             o.resume = resume;
             o.progress = progress;
             if (!on_evaluate.is_none()) {
               PyRef ref(on_evaluate);
               o.on_evaluate = [ref](const train::Metrics& tr, const train::Metrics& va) {
                 py::gil_scoped_acquire gil;
                 ref.get()(metrics_dict(tr), metrics_dict(va));
               };
             }
             if (!after_backward.is_none()) {
               PyRef ref(after_backward);
               o.after_backward = [ref](std::int64_t step) { call_python(ref, step); };
             }
             t->trainer =
                 std::make_unique<train::Trainer>(*model, forward_for(model, forward), *task,
                                                  optimizer.cast<optim::Optimizer&>(), o, schedule);
             return t;
           }),
           py::arg("model"), py::arg("task"), py::arg("optimizer"), py::kw_only(),
           py::arg("steps") = 1000, py::arg("batch_size") = 64, py::arg("eval_every") = 100,
           py::arg("eval_batches") = 8, py::arg("checkpoint_every") = 0, py::arg("log_every") = 0,
           py::arg("clip_grad_norm") = 0.0, py::arg("out_dir") = "", py::arg("device") = py::none(),
           py::arg("resume") = false, py::arg("progress") = true, py::arg("schedule") = py::none(),
           py::arg("forward") = py::none(), py::arg("on_evaluate") = py::none(),
           py::arg("after_backward") = py::none(), docs::trainer_init);
}

// Trainer's fit, evaluate and device.
void bind_trainer_methods(py::module_& m) {
  auto trainer = py::reinterpret_borrow<py::class_<PyTrainer>>(m.attr("Trainer"));
  trainer
      .def(
          "fit",
          [](PyTrainer& t) {
            train::TrainResult r;
            forget_interrupt();
            {
              py::gil_scoped_release release;
              r = t.trainer->fit();  // Ctrl-C: KeyboardInterrupt (interrupt.cpp)
            }
            py::dict d;
            d["steps_done"] = r.steps_done;
            d["resumed_from"] = r.resumed_from;
            d["stopped_early"] = r.stopped_early;
            d["overridden"] = r.overridden;
            d["train"] = metrics_dict(r.last_train);
            d["validation"] = metrics_dict(r.last_validation);
            d["seconds"] = r.seconds;
            return d;
          },
          docs::trainer_fit)
      .def(
          "evaluate",
          [](PyTrainer& t) {
            train::Metrics r;
            {
              py::gil_scoped_release release;
              r = t.trainer->evaluate();
            }
            return metrics_dict(r);
          },
          docs::trainer_evaluate)
      .def_property_readonly(
          "device", [](const PyTrainer& t) { return t.trainer->device(); }, docs::trainer_device);
}

// save and load of a module's state dict (.npz).
void bind_save_load(py::module_& m) {
  m.def(
      "save", [](const nn::Module& module, const std::string& path) { save(module, path); },
      py::arg("module"), py::arg("path"), docs::save);
  m.def(
      "load",
      [](nn::Module& module, const std::string& path, bool warn) {
        load(module, path, train::LoadOptions().with_warn_on_attention_mismatch(warn));
      },
      py::arg("module"), py::arg("path"), py::arg("warn_on_attention_mismatch") = true, docs::load);
}

}  // namespace

void bind_train(py::module_& m) {
  bind_batch(m);
  bind_task(m);
  bind_make_task(m);
  bind_loss_and_evaluation(m);
  bind_trainer(m);
  bind_trainer_methods(m);
  bind_save_load(m);
}

}  // namespace headgrad::python
