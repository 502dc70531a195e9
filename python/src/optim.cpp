// headgrad.optim: SGD, Adam and AdamW with torch.optim's keywords, learning-rate
// schedules, and gradient clipping.
#include "docs/optim.hpp"
#include "common.hpp"

namespace headgrad::python {
namespace {

// The tensors of `params`, an iterable of Tensors (model.parameters()); `op` names the
// caller in the TypeError for anything else. A lone Tensor is accepted where PyTorch
// accepts one (`lone_tensor`: clip_grad_norm_), refused elsewhere, as by torch.optim.
std::vector<Tensor> parameter_list(const py::object& params, const char* op,
                                   bool lone_tensor = false) {
  const std::string fix = "; pass model.parameters() or a list of Tensors";
  if (py::isinstance<Tensor>(params)) {
    if (lone_tensor) return {params.cast<Tensor>()};
    throw py::type_error(std::string(op) + ": params must be an iterable of Tensors, got a Tensor" +
                         fix + " ([t] for one tensor)");
  }
  if (!py::isinstance<py::iterable>(params) || py::isinstance<py::str>(params))
    throw py::type_error(std::string(op) + ": params must be an iterable of Tensors, got " +
                         py::str(py::type::of(params).attr("__name__")).cast<std::string>() + fix);
  std::vector<Tensor> out;
  for (const auto& p : params) {
    if (!py::isinstance<Tensor>(p))
      throw py::type_error(
          std::string(op) + ": params must be Tensors (got " +
          py::str(py::type::of(p).attr("__name__")).cast<std::string>() + " at position " +
          std::to_string(out.size()) + ")" + fix +
          (py::isinstance<py::dict>(p) ? " (parameter groups are not supported)" : ""));
    out.push_back(p.cast<Tensor>());
  }
  return out;
}

py::dict optimizer_state(const optim::Optimizer& o) {
  py::dict out;
  for (const auto& [name, t] : o.state_dict())
    out[py::str(name)] = to_numpy(t.device().is_cpu() ? t : t.to(Device::cpu()));
  return out;
}

void load_optimizer_state(optim::Optimizer& o, const py::dict& state) {
  StateDict s;
  for (const auto& [k, v] : state) s.insert(k.cast<std::string>(), to_tensor(v));
  o.load_state_dict(s);
}

// Optimizer: the base of the optimizers.
void bind_optimizer(py::module_& m) {
  py::class_<optim::Optimizer>(m, "Optimizer", "The base of the optimizers (torch.optim.Optimizer)")
      .def(
          "step",
          [](optim::Optimizer& o) {
            py::gil_scoped_release release;
            o.step();
          },
          docs::optimizer_step)
      .def(
          "zero_grad",
          [](optim::Optimizer& o, bool set_to_none) {
            if (!set_to_none)
              throw ValueError(
                  "zero_grad: headgrad always sets gradients to None (set_to_none=True)");
            o.zero_grad();
          },
          py::arg("set_to_none") = true, docs::optimizer_zero_grad)
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr, docs::optimizer_lr)
      .def_property_readonly("params", &optim::Optimizer::params, docs::optimizer_params)
      .def_property_readonly("type_name", &optim::Optimizer::type_name, docs::optimizer_type_name)
      .def("state_dict", &optimizer_state, docs::optimizer_state_dict)
      .def("load_state_dict", &load_optimizer_state, py::arg("state_dict"),
           docs::optimizer_load_state_dict);
}

// SGD.
void bind_sgd(py::module_& m) {
  py::class_<optim::SGD, optim::Optimizer>(m, "SGD", docs::sgd)
      .def(py::init([](const py::object& params, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov) {
             return std::make_unique<optim::SGD>(parameter_list(params, "SGD"),
                                                 optim::SGDOptions(lr)
                                                     .with_momentum(momentum)
                                                     .with_dampening(dampening)
                                                     .with_weight_decay(weight_decay)
                                                     .with_nesterov(nesterov));
           }),
           py::arg("params"), py::arg("lr") = 1e-3, py::arg("momentum") = 0.0,
           py::arg("dampening") = 0.0, py::arg("weight_decay") = 0.0, py::arg("nesterov") = false,
           docs::sgd_init);
}

// Adam and AdamW, on their shared base _AdamBase.
void bind_adam(py::module_& m) {
  auto adam_init = [](auto tag) {
    using Options = decltype(tag);
    return [](const py::object& params, double lr, std::pair<double, double> betas, double eps,
              const std::optional<double>& weight_decay, bool amsgrad) {
      Options o(lr);
      o.with_betas(betas.first, betas.second).with_eps(eps).with_amsgrad(amsgrad);
      if (weight_decay) o.with_weight_decay(*weight_decay);
      using Opt = std::conditional_t<std::is_same_v<Options, optim::AdamOptions>, optim::Adam,
                                     optim::AdamW>;
      return std::make_unique<Opt>(
          parameter_list(params, std::is_same_v<Opt, optim::Adam> ? "Adam" : "AdamW"), o);
    };
  };
  py::class_<optim::detail::AdamBase, optim::Optimizer>(m, "_AdamBase");
  py::class_<optim::Adam, optim::detail::AdamBase>(m, "Adam", docs::adam)
      .def(py::init(adam_init(optim::AdamOptions())), py::arg("params"), py::arg("lr") = 1e-3,
           py::arg("betas") = std::make_pair(0.9, 0.999), py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false, docs::adam_init);
  py::class_<optim::AdamW, optim::detail::AdamBase>(m, "AdamW", docs::adamw)
      .def(py::init(adam_init(optim::AdamWOptions())), py::arg("params"), py::arg("lr") = 1e-3,
           py::arg("betas") = std::make_pair(0.9, 0.999), py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 0.01, py::arg("amsgrad") = false, docs::adamw_init);
}

// LRSchedule: warmup then constant, linear or cosine decay.
void bind_lr_schedule(py::module_& m) {
  py::class_<optim::LRSchedule>(m, "LRSchedule", "Warmup then constant, linear or cosine decay")
      .def_static("constant", &optim::LRSchedule::constant, py::arg("lr"),
                  py::arg("warmup_steps") = 0, docs::schedule_constant)
      .def_static("linear", &optim::LRSchedule::linear, py::arg("lr"), py::arg("warmup_steps"),
                  py::arg("total_steps"), py::arg("min_lr") = 0.0, docs::schedule_linear)
      .def_static("cosine", &optim::LRSchedule::cosine, py::arg("lr"), py::arg("warmup_steps"),
                  py::arg("total_steps"), py::arg("min_lr") = 0.0, docs::schedule_cosine)
      .def("lr_at", &optim::LRSchedule::lr_at, py::arg("step"), docs::schedule_lr_at)
      .def("apply", &optim::LRSchedule::apply, py::arg("optimizer"), py::arg("step"),
           docs::schedule_apply)
      .def("__repr__", &optim::LRSchedule::to_string);
}

// clip_grad_norm_ and grad_norm.
void bind_grad_clipping(py::module_& m) {
  m.def(
      "clip_grad_norm_",
      [](const py::object& params, double max_norm, double norm_type, bool error_if_nonfinite) {
        return optim::clip_grad_norm_(parameter_list(params, "clip_grad_norm_", true), max_norm,
                                      norm_type, error_if_nonfinite);
      },
      py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0,
      py::arg("error_if_nonfinite") = false, docs::clip_grad_norm_);
  m.def(
      "grad_norm",
      [](const py::object& params, double norm_type) {
        return optim::grad_norm(parameter_list(params, "grad_norm", true), norm_type);
      },
      py::arg("parameters"), py::arg("norm_type") = 2.0, docs::grad_norm);
}

}  // namespace

void bind_optim(py::module_& m) {
  bind_optimizer(m);
  bind_sgd(m);
  bind_adam(m);
  bind_lr_schedule(m);
  bind_grad_clipping(m);
}

}  // namespace headgrad::python
