// headgrad._headgrad: the extension module behind `import headgrad`. It registers the
// exception types (each a subclass of headgrad.Error and of the Python exception a Python
// user would catch), then the bindings of each layer, in the library's layer order.
#include "common.hpp"

namespace headgrad::python {
namespace {

// headgrad's exception types as Python classes: (Python name, Python base, docstring).
void add_exception_classes(py::module_& m) {
  // Held for the process's lifetime and never destroyed: a static Python object would be
  // released after the interpreter has shut down.
  auto& error = *new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  m.attr("Error").attr("__module__") = "headgrad";
  m.attr("Error").attr("__doc__") =
      "The base of headgrad's errors, with the C++ library's message; also a RuntimeError.";
  struct Kind {
    const char* name;
    PyObject* python_base;
    const char* doc;
  };
  for (const Kind& k : std::initializer_list<Kind>{
           {"ShapeError", PyExc_ValueError,
            "Shapes that do not fit (matmul, view, a hook's replacement); also a ValueError."},
           {"DTypeError", PyExc_TypeError,
            "A dtype an op does not take, mixed dtypes, or a NumPy dtype headgrad cannot hold; "
            "also a TypeError."},
           {"DeviceError", PyExc_RuntimeError,
            "No GPU, or tensors on two devices; also a RuntimeError."},
           {"IndexError", PyExc_IndexError,
            "An index out of range, or an unknown name (a hook point, a parameter); also an "
            "IndexError."},
           {"ValueError", PyExc_ValueError,
            "A bad argument (an unknown task, a bad option); also a ValueError."},
           {"MemoryError", PyExc_MemoryError,
            "A tensor larger than the memory available; also a MemoryError."},
           {"AutogradError", PyExc_RuntimeError,
            "Autograd misuse (an in-place write to a tensor that requires grad, a second "
            "backward through a freed graph); also a RuntimeError."},
           {"IOError", PyExc_OSError,
            "Checkpoints and files (a missing or malformed .npz); also an OSError."},
           {"OverflowError", PyExc_OverflowError,
            "A Python int beyond int64 where an int64 is stored (a size, hg.tensor([2**63])); "
            "also an OverflowError."}})
    m.attr(k.name) = py::reinterpret_steal<py::object>(
        PyErr_NewExceptionWithDoc((std::string("headgrad.") + k.name).c_str(), k.doc,
                                  py::make_tuple(error, py::handle(k.python_base)).ptr(), nullptr));
}

// Translates headgrad's C++ exceptions into the classes add_exception_classes made.
void register_exceptions(py::module_& m) {
  add_exception_classes(m);
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
