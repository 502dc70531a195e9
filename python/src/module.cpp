// headgrad._headgrad: the extension module behind `import headgrad`. It registers the
// exception types (each a subclass of headgrad.Error and of the Python exception a Python
// user would catch), then the bindings of each layer, in the library's layer order.
#include "common.hpp"

namespace headgrad::python {
namespace {

// headgrad's exception types as Python classes: (C++ type, Python name, Python base).
void register_exceptions(py::module_& m) {
  // Held for the process's lifetime and never destroyed: a static Python object would be
  // released after the interpreter has shut down.
  auto& error = *new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  auto make = [&](const char* name, PyObject* python_base) {
    return py::reinterpret_steal<py::object>(
        PyErr_NewException((std::string("headgrad.") + name).c_str(),
                           py::make_tuple(error, py::handle(python_base)).ptr(), nullptr));
  };
  m.attr("Error").attr("__module__") = "headgrad";
  m.attr("ShapeError") = make("ShapeError", PyExc_ValueError);
  m.attr("DTypeError") = make("DTypeError", PyExc_TypeError);
  m.attr("DeviceError") = make("DeviceError", PyExc_RuntimeError);
  m.attr("IndexError") = make("IndexError", PyExc_IndexError);
  m.attr("ValueError") = make("ValueError", PyExc_ValueError);
  m.attr("MemoryError") = make("MemoryError", PyExc_MemoryError);
  m.attr("AutogradError") = make("AutogradError", PyExc_RuntimeError);
  m.attr("IOError") = make("IOError", PyExc_OSError);
  m.attr("OverflowError") = make("OverflowError", PyExc_OverflowError);
  static const py::object& classes = *new py::object(m);  // never destroyed, as above
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    auto raise = [](const char* name, const std::exception& e) {
      PyErr_SetString(classes.attr(name).ptr(), e.what());
    };
    try {
      std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      raise("ShapeError", e);
    } catch (const DTypeError& e) {
      raise("DTypeError", e);
    } catch (const DeviceError& e) {
      raise("DeviceError", e);
    } catch (const IndexError& e) {
      raise("IndexError", e);
    } catch (const ValueError& e) {
      raise("ValueError", e);
    } catch (const MemoryError& e) {
      raise("MemoryError", e);
    } catch (const AutogradError& e) {
      raise("AutogradError", e);
    } catch (const train::IOError& e) {
      raise("IOError", e);
    } catch (const OverflowError& e) {
      raise("OverflowError", e);
    } catch (const Interrupted& e) {
      raise_interrupted(e);
    } catch (const Error& e) {
      raise("Error", e);
    }
  });
}

}  // namespace
}  // namespace headgrad::python

PYBIND11_MODULE(_headgrad, m) {
  using namespace headgrad::python;
  m.doc() = "headgrad's C++ engine; import the `headgrad` package, not this module";
  register_exceptions(m);
  install_interrupt_check();
  bind_core(m);
  bind_ops(m);
  bind_autograd(m);
  auto nn = m.def_submodule("nn", "modules, layers and models");
  bind_nn(nn);
  auto optim = m.def_submodule("optim", "optimizers and learning-rate schedules");
  bind_optim(optim);
  auto train = m.def_submodule("train", "tasks, batches and the trainer");
  bind_train(train);
  auto inspect = m.def_submodule("inspect", "per-head inspection and interventions");
  bind_inspect(inspect);
  // The study's own extension (headgrad._study, built with examples/heads_compare) calls
  // this before a run, as this module's long calls do.
  m.def("_forget_interrupt", &forget_interrupt,
        "Drops a Ctrl-C that no loop reported, so that it cannot stop the next call");
}
