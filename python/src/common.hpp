// What the binding files share: argument conversions (dtypes, devices, shapes, optional
// tensors), NumPy views of tensors, and Python callables that C++ may call or drop from
// any thread. The bindings are a thin layer: every check and error message is the C++
// library's own.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

namespace headgrad::python {

namespace py = pybind11;

// --- registration, one function per binding file (module.cpp calls them in order) -----
void bind_core(py::module_& m);      // dtype, device, Tensor, NumPy, factories
void bind_ops(py::module_& m);       // headgrad.* functions and headgrad.nn.functional
void bind_autograd(py::module_& m);  // grad mode, autograd.grad, hooks
void bind_nn(py::module_& m);        // Module and the layers and models
void bind_optim(py::module_& m);     // optimizers, schedules, clipping
void bind_train(py::module_& m);     // tasks, batches, the Trainer, save/load
void bind_inspect(py::module_& m);   // Capture, hooks, patching, ablation, importance
void bind_view(py::module_& m);      // the attention view (inspect_view.cpp)

// A Python int outside the range of the dtype it would be stored in (headgrad.OverflowError,
// also a Python OverflowError). Only the bindings raise it: no C++ integer holds such a
// number.
class OverflowError : public Error {
 public:
  using Error::Error;
};

// --- conversions ----------------------------------------------------------------------
// "float32", headgrad.float32, numpy dtypes; ValueError naming the accepted spellings.
DType to_dtype(const py::handle& value);
// "cpu", "cuda", "cuda:1" or a Device.
Device to_device(const py::handle& value);
// A shape from (2, 3), [2, 3], 2 or several ints (py::args). `op` names the caller in the
// errors: TypeError for an entry that is not an int, OverflowError for one beyond int64.
Shape to_shape(const py::handle& value, const char* op = "shape");
Shape shape_from_args(const py::args& args, const char* op = "shape");
// An undefined tensor for None.
inline Tensor optional_tensor(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
// None for an undefined tensor.
py::object tensor_or_none(const Tensor& t);
// A tensor from any Python value: a Tensor as is; a NumPy array shared when it can be
// (from_numpy's rules) else copied; lists and numbers copied with PyTorch's default dtypes
// (float32 for floats, int64 for ints, bool for bools) unless `dtype` is given. A Python
// int beyond int64 that would be stored as int64 is an OverflowError, as in PyTorch.
// `op` names the caller in that error.
Tensor to_tensor(const py::handle& value, std::optional<DType> dtype = std::nullopt,
                 const char* op = "tensor");
// A NumPy array over the tensor's memory (CPU only), keeping the storage alive.
py::array to_numpy(const Tensor& t);
// A tensor over a NumPy array's memory when dtype (float32, float64, int64, bool) and layout
// (C-contiguous, aligned, writeable, native byte order) allow, else over a copy.
Tensor from_numpy(const py::array& a);

// --- Python callables held by C++ ------------------------------------------------------
// A Python object that C++ may copy, call and destroy on any thread, with or without the
// GIL: the last copy drops the reference with the GIL taken.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(py::object object);
  const py::object& get() const { return *object_; }
  explicit operator bool() const { return object_ && !object_->is_none(); }

 private:
  std::shared_ptr<py::object> object_;
};

// Calls a Python callable from C++ with the GIL taken, for its effect: the result is
// dropped while the GIL is still held. (A py::object must never outlive the GIL scope it
// was made in: C++ code that needs the result converts it inside its own
// py::gil_scoped_acquire block.)
template <typename... Args>
void call_python(const PyRef& fn, Args&&... args) {
  py::gil_scoped_acquire gil;
  fn.get()(std::forward<Args>(args)...);
}

// The tensor a Python function returned: None -> undefined; a Tensor; anything else that
// to_tensor accepts.
Tensor returned_tensor(const py::object& result, const char* what);

// The forward a trainer or an inspection helper calls on a batch: the Python callable
// `forward(batch) -> logits` when given, else the model's own forward on the batch's
// fields (GPT, EncoderClassifier, FusionClassifier); ValueError for other models.
train::ForwardFn forward_for(const std::shared_ptr<nn::Module>& model, const py::object& forward);

// train::Split from "train" / "validation" / "test".
train::Split to_split(const std::string& name);

// --- Ctrl-C in C++ loops (interrupt.cpp) ------------------------------------------------
// Installs the interrupt check that runs Python's signal handlers from headgrad's long
// loops (core/interrupt.hpp); module.cpp calls it once.
void install_interrupt_check();
// Drops an interrupt no loop has reported (a Python entry point calls it before a long
// loop, so a KeyboardInterrupt that reached Python another way cannot stop the next one).
// With the GIL held.
void forget_interrupt();
// Sets the Python error for a loop's Interrupted: the exception Python's handler raised
// (KeyboardInterrupt for Ctrl-C) with the loop's message as a note. With the GIL held.
void raise_interrupted(const Interrupted& e);

}  // namespace headgrad::python
