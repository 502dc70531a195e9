// Grad mode, headgrad.autograd.grad / backward / gradcheck, and tensor hooks taking Python
// callables. Backward and autograd.grad release the GIL; a Python hook takes it back while
// it runs.
#include "docs/autograd.hpp"
#include "common.hpp"

namespace headgrad::python {
namespace {

// What register_hook returns: remove() unregisters the hook (torch's RemovableHandle).
struct HookHandle {
  Tensor tensor;
  std::size_t id = 0;
  bool removed = false;
  void remove() {
    if (!removed) tensor.remove_hook(id);
    removed = true;
  }
};

std::vector<Tensor> tensor_list(const py::object& value) {
  if (py::isinstance<Tensor>(value)) return {value.cast<Tensor>()};
  std::vector<Tensor> out;
  for (const auto& item : value) out.push_back(item.is_none() ? Tensor() : item.cast<Tensor>());
  return out;
}

// RemovableHandle and Tensor.register_hook / register_post_accumulate_grad_hook.
void bind_tensor_hooks(py::module_& m) {
  py::class_<HookHandle>(m, "RemovableHandle", docs::removable_handle)
      .def("remove", &HookHandle::remove, docs::removable_handle_remove)
      .def_readonly("id", &HookHandle::id, docs::removable_handle_id);
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def(
      "register_hook",
      [](Tensor& self, py::function fn) {
        PyRef ref(std::move(fn));
        const std::size_t id = self.register_hook([ref](const Tensor& grad) {
          py::gil_scoped_acquire gil;
          return returned_tensor(ref.get()(grad), "a tensor hook");
        });
        return HookHandle{self, id};
      },
      py::arg("hook"), docs::register_hook);
  tensor.def(
      "register_post_accumulate_grad_hook",
      [](Tensor& self, py::function fn) {
        PyRef ref(std::move(fn));
        const std::size_t id = self.register_post_accumulate_grad_hook(
            [ref](const Tensor& leaf) { call_python(ref, leaf); });
        return HookHandle{self, id};
      },
      py::arg("hook"), docs::register_post_accumulate_grad_hook);
}

// headgrad.autograd.grad.
void bind_autograd_grad(py::module_& ag) {
  ag.def(
      "grad",
      [](const py::object& outputs, const py::object& inputs, const py::object& grad_outputs,
         bool retain_graph, bool allow_unused) {
        const auto outs = tensor_list(outputs);
        const auto ins = tensor_list(inputs);
        const auto gouts =
            grad_outputs.is_none() ? std::vector<Tensor>{} : tensor_list(grad_outputs);
        std::vector<Tensor> grads;
        {
          py::gil_scoped_release release;
          grads = headgrad::autograd::grad(outs, ins, gouts, retain_graph);
        }
        py::tuple result(grads.size());
        for (std::size_t i = 0; i < grads.size(); ++i) {
          if (!grads[i].defined() && !allow_unused)
            throw AutogradError(
                "autograd.grad: input " + std::to_string(i) + " (" + ins[i].describe() +
                ") was not used to compute the outputs, so it has no gradient; pass "
                "allow_unused=True to get None for it (as torch.autograd.grad)");
          result[i] = tensor_or_none(grads[i]);
        }
        return result;
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(),
      py::arg("retain_graph") = false, py::arg("allow_unused") = false, docs::autograd_grad);
}

// headgrad.autograd.backward.
void bind_autograd_backward(py::module_& ag) {
  ag.def(
      "backward",
      [](const py::object& tensors, const py::object& grad_tensors, bool retain_graph) {
        const auto roots = tensor_list(tensors);
        const auto grads =
            grad_tensors.is_none() ? std::vector<Tensor>(roots.size()) : tensor_list(grad_tensors);
        py::gil_scoped_release release;
        headgrad::autograd::run_backward(roots, grads, retain_graph);
      },
      py::arg("tensors"), py::arg("grad_tensors") = py::none(), py::arg("retain_graph") = false,
      docs::autograd_backward);
}

// headgrad.autograd.gradcheck.
void bind_gradcheck(py::module_& ag) {
  ag.def(
      "gradcheck",
      [](py::function fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
        GradcheckOptions o;
        o.eps = eps;
        o.atol = atol;
        o.rtol = rtol;
        PyRef ref(std::move(fn));
        const GradcheckFn f = [ref](const std::vector<Tensor>& xs) {
          py::gil_scoped_acquire gil;
          py::tuple args(xs.size());
          for (std::size_t i = 0; i < xs.size(); ++i) args[i] = py::cast(xs[i]);
          return returned_tensor(ref.get()(*args), "gradcheck's function");
        };
        const GradcheckResult r = gradcheck(f, inputs, o);
        if (!r.passed) throw AutogradError("gradcheck: " + r.report());
        return true;
      },
      py::arg("func"), py::arg("inputs"), py::kw_only(), py::arg("eps") = 1e-6,
      py::arg("atol") = 1e-5, py::arg("rtol") = 1e-3, docs::gradcheck);
}

}  // namespace

void bind_autograd(py::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled, docs::is_grad_enabled);
  m.def("_set_grad_enabled", &set_grad_enabled, py::arg("mode"));
  bind_tensor_hooks(m);
  auto ag = m.def_submodule("autograd", "reverse-mode differentiation");
  bind_autograd_grad(ag);
  bind_autograd_backward(ag);
  bind_gradcheck(ag);
}

}  // namespace headgrad::python
