// headgrad.dtype, headgrad.Device, headgrad.Tensor (NumPy sharing through the buffer
// protocol and __array__, PyTorch's indexing and operators, the ops as methods with
// PyTorch's names) and the factories.
#include <cstring>

#include "common.hpp"
#include "docs/core.hpp"

namespace headgrad::python {
namespace {

using namespace headgrad::indexing;

// One Python index entry as a TensorIndex: int, slice, None, Ellipsis, bool, Tensor, or a
// list / NumPy array (an index tensor).
TensorIndex to_index(const py::handle& item) {
  if (item.is_none()) return None;
  if (item.ptr() == Py_Ellipsis) return Ellipsis;
  if (py::isinstance<py::bool_>(item)) return TensorIndex(scalar_tensor(item.cast<bool>(), kBool));
  if (py::isinstance<py::int_>(item)) return TensorIndex(item.cast<std::int64_t>());
  if (py::isinstance<py::slice>(item)) {
    auto opt = [](const py::object& o) -> std::optional<std::int64_t> {
      if (o.is_none()) return std::nullopt;
      return o.cast<std::int64_t>();
    };
    const py::object start = item.attr("start"), stop = item.attr("stop"), step = item.attr("step");
    const std::int64_t s = step.is_none() ? 1 : step.cast<std::int64_t>();
    if (s <= 0)
      throw ValueError("index: slice step " + std::to_string(s) +
                       " must be positive (as in PyTorch)");
    return Slice(opt(start), opt(stop), s);
  }
  if (py::isinstance<Tensor>(item)) return TensorIndex(item.cast<Tensor>());
  // A NumPy array has __index__ too, which works only for one integer: arrays of any rank
  // index as tensors (t[np.array([0, 5])]), as in PyTorch.
  if (py::isinstance<py::array>(item)) return TensorIndex(to_tensor(item));
  if (py::hasattr(item, "__index__"))
    return TensorIndex(item.attr("__index__")().cast<std::int64_t>());
  return TensorIndex(to_tensor(item));  // lists, NumPy arrays
}

std::vector<TensorIndex> to_indices(const py::handle& key) {
  std::vector<TensorIndex> out;
  if (py::isinstance<py::tuple>(key)) {
    for (const auto& item : key.cast<py::tuple>()) out.push_back(to_index(item));
  } else {
    out.push_back(to_index(key));
  }
  return out;
}

// dims for sum / mean / var / amax: None = all, an int, or a sequence.
Shape to_dims(const py::object& dim) {
  if (dim.is_none()) return {};
  return to_shape(dim);
}

TensorOptions make_options(const py::object& dtype, const py::object& device, bool requires_grad) {
  TensorOptions o;
  if (!dtype.is_none()) o.dtype(to_dtype(dtype));
  if (!device.is_none()) o.device(to_device(device));
  o.requires_grad(requires_grad);
  return o;
}

// Tensor.to(...): a dtype, a device, a string naming either, or another tensor.
Tensor convert(const Tensor& t, const py::object& target, const py::object& dtype) {
  Tensor out = t;
  if (!target.is_none()) {
    if (py::isinstance<Tensor>(target)) {
      const Tensor other = target.cast<Tensor>();
      out = out.to(other.device()).to(other.dtype());
    } else if (py::isinstance<Device>(target)) {
      out = out.to(target.cast<Device>());
    } else if (py::isinstance<py::str>(target)) {
      const auto text = target.cast<std::string>();
      if (text == "cpu" || text.rfind("cuda", 0) == 0)
        out = out.to(to_device(target));
      else
        out = out.to(to_dtype(target));
    } else {
      out = out.to(to_dtype(target));
    }
  }
  if (!dtype.is_none()) out = out.to(to_dtype(dtype));
  return out;
}

// A scalar or a tensor for the binary operators.
Tensor other_tensor(const Tensor& self, const py::handle& other) {
  if (py::isinstance<Tensor>(other)) return other.cast<Tensor>();
  return to_tensor(other, self.dtype()).to(self.device());
}

// A fill value (full, full_like, fill_) for a tensor of `dtype`: an int64 tensor takes a
// Python int exactly (and refuses one beyond int64, as PyTorch), rather than through a
// double, which rounds above 2^53 and wraps 2**63 to -2**63.
bool exact_int_fill(const py::handle& value, DType dtype) {
  return dtype == kInt64 && PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr());
}

// The fill value as a number (OverflowError for an int beyond a double's range).
double fill_number(const py::handle& value) {
  return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
}

// full(shape, value, options) with the rule above.
Tensor filled(const char* op, const Shape& shape, const py::handle& value,
              const TensorOptions& options) {
  if (!exact_int_fill(value, options.dtype_or(kFloat32)))
    return full(shape, fill_number(value), options);
  Tensor out = to_tensor(value, kInt64, op).expand(shape).contiguous();
  if (options.device_ != out.device()) out = out.to(options.device_);
  if (options.requires_grad_) out.requires_grad_(true);  // refused for int64, as by full()
  return out;
}

py::object tolist(const Tensor& t) {
  const Tensor cpu = t.device().is_cpu() ? t.detach() : t.detach().to(Device::cpu());
  py::array a = to_numpy(cpu);
  return a.attr("tolist")();
}

// headgrad.cuda (python/headgrad/cuda.py gives them torch.cuda's names). Every function is
// safe to call without a GPU, as in C++ (<headgrad/core/cuda.hpp>).
void bind_cuda(py::module_ c) {
  c.def("built", &cuda_built, docs::cuda_built);
  c.def("is_available", &cuda_is_available, docs::cuda_is_available);
  c.def("device_count", &cuda_device_count, docs::cuda_device_count);
  c.def("unavailable_reason", &cuda_unavailable_reason, docs::cuda_unavailable_reason);
  c.def("device_name", &cuda_device_name, py::arg("index") = 0, docs::cuda_device_name);
  c.def("synchronize", &cuda_synchronize, py::arg("index") = 0,
        py::call_guard<py::gil_scoped_release>(), docs::cuda_synchronize);
  c.def("set_allow_tf32", &set_cuda_allow_tf32, py::arg("allow"), docs::cuda_set_allow_tf32);
  c.def("allow_tf32", &cuda_allow_tf32, docs::cuda_allow_tf32);
  c.def(
      "memory_stats",
      [](int index) {
        const CudaMemoryStats s = cuda_memory_stats(index);
        py::dict d;
        d["allocated_bytes"] = s.allocated_bytes;
        d["reserved_bytes"] = s.reserved_bytes;
        d["peak_allocated_bytes"] = s.peak_allocated_bytes;
        d["cuda_malloc_calls"] = s.cuda_malloc_calls;
        return d;
      },
      py::arg("index") = 0, docs::cuda_memory_stats);
  c.def("reset_peak_memory", &reset_cuda_peak_memory, py::arg("index") = 0,
        docs::cuda_reset_peak_memory);
  c.def("empty_cache", &empty_cuda_cache, docs::cuda_empty_cache);
}

void bind_dtype_device(py::module_& m) {
  py::enum_<DType> dtype(m, "dtype", "A tensor's element type");
  dtype.value("float32", DType::float32)
      .value("float64", DType::float64)
      .value("int64", DType::int64)
      .value("bool", DType::boolean)
      .def_property_readonly(
          "is_floating_point", [](DType d) { return is_floating(d); },
          docs::dtype_is_floating_point)
      .def_property_readonly(
          "itemsize", [](DType d) { return element_size(d); }, docs::dtype_itemsize);
  // Replaced, not overloaded: enum_ already defines both.
  for (const char* name : {"__repr__", "__str__"})
    dtype.attr(name) =
        py::cpp_function([](DType d) { return "headgrad." + to_string(d); }, py::is_method(dtype));
  m.attr("float32") = DType::float32;
  m.attr("float") = DType::float32;
  m.attr("float64") = DType::float64;
  m.attr("double") = DType::float64;
  m.attr("int64") = DType::int64;
  m.attr("long") = DType::int64;
  m.attr("bool") = DType::boolean;

  py::class_<Device>(m, "Device", "Where a tensor lives: Device('cpu'), Device('cuda:0')")
      .def(py::init([](const py::object& spec) { return to_device(spec); }), py::arg("device"),
           docs::device_init)
      .def_property_readonly(
          "type", [](const Device& d) { return d.is_cpu() ? "cpu" : "cuda"; }, docs::device_type)
      .def_property_readonly(
          "index",
          [](const Device& d) -> py::object {
            return d.is_cpu() ? py::object(py::none()) : py::int_(d.index());
          },
          docs::device_index)
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device(type='" + d.str() + "')"; })
      .def("__eq__",
           [](const Device& a, const py::object& b) {
             try {
               return a == to_device(b);
             } catch (const std::exception&) {
               return false;
             }
           })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); });
  py::implicitly_convertible<py::str, Device>();
}

// headgrad.Tensor: the class, its constructor and its metadata (shape, dtype, device, name).
void bind_tensor_class(py::module_& m) {
  // NumPy reads a tensor through __array__ (to_numpy: the array holds the storage itself,
  // so it stays valid when a module's to() swaps the tensor's storage), never through the
  // buffer protocol, whose views would hold only the Python object.
  py::class_<Tensor> t(m, "Tensor", py::dynamic_attr(),
                       "An n-d array with a dtype, a device and autograd (headgrad::Tensor)");
  t.def(py::init([](const py::object& data) { return to_tensor(data); }), py::arg("data"),
        docs::tensor_init)
      .def_property_readonly(
          "shape", [](const Tensor& s) { return py::tuple(py::cast(s.shape())); },
          docs::tensor_shape)
      .def(
          "size",
          [](const Tensor& s, const std::optional<std::int64_t>& dim) -> py::object {
            if (dim) return py::int_(s.size(*dim));
            return py::tuple(py::cast(s.shape()));
          },
          py::arg("dim") = py::none(), docs::tensor_size)
      .def("dim", &Tensor::dim, docs::tensor_dim)
      .def_property_readonly("ndim", &Tensor::dim, docs::tensor_ndim)
      .def("numel", &Tensor::numel, docs::tensor_numel)
      .def_property_readonly("dtype", &Tensor::dtype, docs::tensor_dtype)
      .def_property_readonly("device", &Tensor::device, docs::tensor_device)
      .def_property_readonly(
          "is_cuda", [](const Tensor& s) { return s.device().is_cuda(); }, docs::tensor_is_cuda)
      .def(
          "is_floating_point", [](const Tensor& s) { return is_floating(s.dtype()); },
          docs::tensor_is_floating_point)
      .def(
          "element_size", [](const Tensor& s) { return element_size(s.dtype()); },
          docs::tensor_element_size)
      .def_property(
          "name", &Tensor::name, [](Tensor& s, std::string n) { s.set_name(std::move(n)); },
          docs::tensor_name)
      .def("__len__",
           [](const Tensor& s) {
             if (s.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return s.size(0);
           })
      .def("__repr__", [](const Tensor& s) {
        return s.defined() ? to_string(s) : std::string("Tensor(undefined)");
      });
}

// Tensor's autograd: requires_grad, grad, grad_fn, backward, detach, clone, zero_grad.
void bind_tensor_autograd(py::class_<Tensor>& t) {
  t.def_property(
       "requires_grad", &Tensor::requires_grad, [](Tensor& s, bool r) { s.requires_grad_(r); },
       docs::tensor_requires_grad)
      .def(
          "requires_grad_", [](Tensor& s, bool r) -> Tensor& { return s.requires_grad_(r); },
          py::arg("requires_grad") = true, py::return_value_policy::reference_internal,
          docs::tensor_requires_grad_)
      .def_property_readonly("is_leaf", &Tensor::is_leaf, docs::tensor_is_leaf)
      .def_property(
          "grad", [](const Tensor& s) { return tensor_or_none(s.grad()); },
          [](Tensor& s, const std::optional<Tensor>& g) { s.set_grad(optional_tensor(g)); },
          docs::tensor_grad)
      .def_property_readonly(
          "grad_fn",
          [](const Tensor& s) -> py::object {
            const auto& fn = s.grad_fn();
            return fn ? py::object(py::str(fn->name())) : py::object(py::none());
          },
          "The name of the op that made this tensor (None for a leaf)")
      .def("retain_grad", &Tensor::retain_grad, docs::tensor_retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad, docs::tensor_retains_grad)
      .def(
          "backward",
          [](const Tensor& s, const std::optional<py::object>& gradient, bool retain_graph) {
            const Tensor g =
                gradient && !gradient->is_none() ? other_tensor(s, *gradient) : Tensor();
            py::gil_scoped_release release;
            s.backward(g, retain_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false, docs::tensor_backward)
      .def("detach", &Tensor::detach, docs::tensor_detach)
      .def("clone", &Tensor::clone, docs::tensor_clone)
      .def("zero_grad", &Tensor::zero_grad, docs::tensor_zero_grad);
}

// Tensor's conversions: to, cpu / cuda, dtype casts, NumPy, item, tolist, __float__ ...
void bind_tensor_conversion(py::class_<Tensor>& t) {
  t.def(
       "to",
       [](const Tensor& s, const py::object& target, const py::object& dtype) {
         return convert(s, target, dtype);
       },
       py::arg("target") = py::none(), py::arg("dtype") = py::none(), docs::tensor_to)
      .def(
          "cpu", [](const Tensor& s) { return s.to(Device::cpu()); }, docs::tensor_cpu)
      .def(
          "cuda", [](const Tensor& s, int index) { return s.to(Device::cuda(index)); },
          py::arg("device") = 0, docs::tensor_cuda)
      .def(
          "float", [](const Tensor& s) { return s.to(kFloat32); }, docs::tensor_float)
      .def(
          "double", [](const Tensor& s) { return s.to(kFloat64); }, docs::tensor_double)
      .def(
          "long", [](const Tensor& s) { return s.to(kInt64); }, docs::tensor_long)
      .def(
          "bool", [](const Tensor& s) { return s.to(kBool); }, docs::tensor_bool)
      .def("numpy", &to_numpy, docs::tensor_numpy)
      .def(
          "__array__",
          [](const Tensor& s, const py::object& dtype) -> py::object {
            py::array a = to_numpy(s);
            if (dtype.is_none()) return a;
            return a.attr("astype")(dtype, py::arg("copy") = false);
          },
          py::arg("dtype") = py::none())
      .def(
          "item",
          [](const Tensor& s) -> py::object {
            if (s.dtype() == kInt64) return py::int_(s.item<std::int64_t>());
            if (s.dtype() == kBool) return py::bool_(s.item() != 0);
            return py::float_(s.item());
          },
          docs::tensor_item)
      .def("tolist", &tolist, docs::tensor_tolist)
      .def("__float__", [](const Tensor& s) { return s.item(); })
      .def("__int__", [](const Tensor& s) { return static_cast<std::int64_t>(s.item()); })
      .def("__index__",
           [](const Tensor& s) {
             if (s.dtype() != kInt64 || s.numel() != 1)
               throw py::type_error("only one-element int64 tensors can be used as an index");
             return s.item<std::int64_t>();
           })
      .def("__bool__", [](const Tensor& s) {
        if (s.numel() != 1)
          throw ValueError("bool(): the truth value of " + s.describe() +
                           " is ambiguous (it has more than one element)");
        return s.item() != 0;
      });
}

// Tensor's in-place writes (not recorded: under no_grad for leaves that require grad).
void bind_tensor_in_place(py::class_<Tensor>& t) {
  t.def(
       "zero_", [](Tensor& s) -> Tensor& { return s.zero_(); },
       py::return_value_policy::reference_internal, docs::tensor_zero_)
      .def(
          "fill_",
          [](Tensor& s, const py::object& v) -> Tensor& {
            if (!exact_int_fill(v, s.dtype())) return s.fill_(fill_number(v));
            return s.copy_(to_tensor(v, kInt64, "fill_").expand(s.shape()));
          },
          py::arg("value"), py::return_value_policy::reference_internal, docs::tensor_fill_)
      .def(
          "copy_",
          [](Tensor& s, const py::object& src) -> Tensor& { return s.copy_(to_tensor(src)); },
          py::arg("src"), py::return_value_policy::reference_internal, docs::tensor_copy_)
      .def(
          "add_",
          [](Tensor& s, const py::object& o, double alpha) -> Tensor& {
            return s.add_(other_tensor(s, o), alpha);
          },
          py::arg("other"), py::arg("alpha") = 1.0, py::return_value_policy::reference_internal,
          docs::tensor_add_)
      .def(
          "mul_", [](Tensor& s, double f) -> Tensor& { return s.mul_(f); }, py::arg("other"),
          py::return_value_policy::reference_internal, docs::tensor_mul_);
}

// Tensor's indexing: __getitem__, __setitem__, index_put_, __iter__.
void bind_tensor_indexing(py::class_<Tensor>& t) {
  t.def("__getitem__",
        [](const Tensor& s, const py::object& key) { return s.index(to_indices(key)); })
      .def("__setitem__",
           [](Tensor& s, const py::object& key, const py::object& value) {
             const auto idx = to_indices(key);
             if (py::isinstance<Tensor>(value) || py::isinstance<py::array>(value) ||
                 py::isinstance<py::list>(value))
               s.index_put_(idx, other_tensor(s, value));
             else
               s.index_put_(idx, value.cast<double>());
           })
      .def(
          "index_put_",
          [](Tensor& s, const py::tuple& indices, const py::object& values,
             bool accumulate) -> Tensor& {
            return s.index_put_(to_indices(indices), other_tensor(s, values), accumulate);
          },
          py::arg("indices"), py::arg("values"), py::arg("accumulate") = false,
          py::return_value_policy::reference_internal, docs::tensor_index_put_)
      .def("__iter__", [](const Tensor& s) {
        if (s.dim() == 0) throw py::type_error("iteration over a 0-d tensor");
        py::list rows;
        for (std::int64_t i = 0; i < s.size(0); ++i) rows.append(s.select(0, i));
        return py::iter(rows);
      });
}

// The shape ops as methods, with PyTorch's names and keywords: reshape, view, permute, split ...
void bind_tensor_shape_methods(py::class_<Tensor>& t) {
  t.def(
       "reshape",
       [](const Tensor& s, const py::args& a) { return s.reshape(shape_from_args(a, "reshape")); },
       docs::tensor_reshape)
      .def(
          "view",
          [](const Tensor& s, const py::args& a) { return s.view(shape_from_args(a, "view")); },
          docs::tensor_view)
      .def(
          "expand",
          [](const Tensor& s, const py::args& a) { return s.expand(shape_from_args(a, "expand")); },
          docs::tensor_expand)
      .def(
          "permute",
          [](const Tensor& s, const py::args& a) {
            return s.permute(shape_from_args(a, "permute"));
          },
          docs::tensor_permute)
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1,
           docs::tensor_flatten)
      .def("transpose", &Tensor::transpose, py::arg("dim0"), py::arg("dim1"),
           docs::tensor_transpose)
      .def_property_readonly(
          "T",
          [](const Tensor& s) {
            Shape dims;
            for (std::int64_t d = s.dim() - 1; d >= 0; --d) dims.push_back(d);
            return s.permute(dims);
          },
          docs::tensor_T)
      .def_property_readonly(
          "mT", [](const Tensor& s) { return s.transpose(-2, -1); }, docs::tensor_mT)
      .def("t", &Tensor::t, docs::tensor_t)
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"), docs::tensor_unsqueeze)
      .def(
          "squeeze",
          [](const Tensor& s, const std::optional<std::int64_t>& dim) {
            return dim ? s.squeeze(*dim) : s.squeeze();
          },
          py::arg("dim") = py::none(), docs::tensor_squeeze)
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"),
           docs::tensor_narrow)
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"), docs::tensor_select)
      .def("index_select", &Tensor::index_select, py::arg("dim"), py::arg("index"),
           docs::tensor_index_select)
      .def(
          "split",
          [](const Tensor& s, const py::object& size, std::int64_t dim) {
            if (py::isinstance<py::int_>(size)) return split(s, size.cast<std::int64_t>(), dim);
            return split_with_sizes(s, to_shape(size), dim);
          },
          py::arg("split_size_or_sections"), py::arg("dim") = 0, docs::tensor_split)
      .def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0, docs::tensor_chunk)
      .def("contiguous", &Tensor::contiguous, docs::tensor_contiguous)
      .def("is_contiguous", &Tensor::is_contiguous, docs::tensor_is_contiguous);
}

// The reductions as methods: sum, mean, var, max, amax, argmax.
void bind_tensor_reductions(py::class_<Tensor>& t) {
  t.def(
       "sum",
       [](const Tensor& s, const py::object& dim, bool keepdim) {
         return dim.is_none() ? s.sum() : s.sum(to_dims(dim), keepdim);
       },
       py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::tensor_sum)
      .def(
          "mean",
          [](const Tensor& s, const py::object& dim, bool keepdim) {
            return dim.is_none() ? s.mean() : s.mean(to_dims(dim), keepdim);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::tensor_mean)
      .def(
          "var",
          [](const Tensor& s, const py::object& dim, bool unbiased, bool keepdim,
             const std::optional<std::int64_t>& correction) {
            const std::int64_t c = correction ? *correction : (unbiased ? 1 : 0);
            return s.var(to_dims(dim), keepdim, c);
          },
          py::arg("dim") = py::none(), py::arg("unbiased") = true, py::arg("keepdim") = false,
          py::kw_only(), py::arg("correction") = py::none(), docs::tensor_var)
      .def(
          "max",
          [](const Tensor& s, const std::optional<std::int64_t>& dim, bool keepdim) -> py::object {
            if (!dim) return py::cast(s.max());
            auto [values, indices] = s.max(*dim, keepdim);
            return py::module_::import("headgrad._results").attr("max")(values, indices);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::tensor_max)
      .def(
          "amax",
          [](const Tensor& s, const py::object& dim, bool keepdim) {
            return s.amax(to_dims(dim), keepdim);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::tensor_amax)
      .def(
          "argmax",
          [](const Tensor& s, const std::optional<std::int64_t>& dim, bool keepdim) {
            if (dim) return s.argmax(*dim, keepdim);
            return s.reshape({-1}).argmax(0, false);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::tensor_argmax);
}

// The arithmetic and elementwise ops as methods: matmul, add, sub, exp, gelu, clamp, pow ...
void bind_tensor_math(py::class_<Tensor>& t) {
  t.def("matmul", &Tensor::matmul, py::arg("other"), docs::tensor_matmul)
      .def(
          "add",
          [](const Tensor& s, const py::object& o, double alpha) {
            return s.add(other_tensor(s, o), alpha);
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0, docs::tensor_add)
      .def(
          "sub",
          [](const Tensor& s, const py::object& o, double alpha) {
            return s.sub(other_tensor(s, o), alpha);
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0, docs::tensor_sub)
      .def(
          "mul", [](const Tensor& s, const py::object& o) { return s.mul(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_mul)
      .def(
          "div", [](const Tensor& s, const py::object& o) { return s.div(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_div)
      .def("neg", &Tensor::neg, docs::tensor_neg)
      .def("exp", &Tensor::exp, docs::tensor_exp)
      .def("log", &Tensor::log, docs::tensor_log)
      .def("sqrt", &Tensor::sqrt, docs::tensor_sqrt)
      .def("rsqrt", &Tensor::rsqrt, docs::tensor_rsqrt)
      .def("abs", &Tensor::abs, docs::tensor_abs)
      .def("tanh", &Tensor::tanh, docs::tensor_tanh)
      .def("sigmoid", &Tensor::sigmoid, docs::tensor_sigmoid)
      .def("relu", &Tensor::relu, docs::tensor_relu)
      .def(
          "gelu",
          [](const Tensor& s, const std::string& approximate) {
            return gelu(s,
                        approximate == "tanh" ? GeluApproximation::tanh : GeluApproximation::none);
          },
          py::kw_only(), py::arg("approximate") = "none", docs::tensor_gelu)
      .def(
          "clamp",
          [](const Tensor& s, const std::optional<double>& lo, const std::optional<double>& hi) {
            return s.clamp(lo.value_or(-INFINITY), hi.value_or(INFINITY));
          },
          py::arg("min") = py::none(), py::arg("max") = py::none(), docs::tensor_clamp)
      .def(
          "pow",
          [](const Tensor& s, const py::object& e) {
            if (py::isinstance<Tensor>(e)) return pow(s, e.cast<Tensor>());
            return s.pow(e.cast<double>());
          },
          py::arg("exponent"), docs::tensor_pow);
}

// softmax, log_softmax, masked_fill, logical_not and the comparisons as methods.
void bind_tensor_masking_comparisons(py::class_<Tensor>& t) {
  t.def(
       "softmax", [](const Tensor& s, std::int64_t dim) { return s.softmax(dim); }, py::arg("dim"),
       docs::tensor_softmax)
      .def(
          "log_softmax", [](const Tensor& s, std::int64_t dim) { return s.log_softmax(dim); },
          py::arg("dim"), docs::tensor_log_softmax)
      .def(
          "masked_fill",
          [](const Tensor& s, const Tensor& mask, double value) {
            return s.masked_fill(mask, value);
          },
          py::arg("mask"), py::arg("value"), docs::tensor_masked_fill)
      .def("logical_not", &Tensor::logical_not, docs::tensor_logical_not)
      .def(
          "eq", [](const Tensor& s, const py::object& o) { return s.eq(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_eq)
      .def(
          "ne", [](const Tensor& s, const py::object& o) { return s.ne(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_ne)
      .def(
          "lt", [](const Tensor& s, const py::object& o) { return s.lt(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_lt)
      .def(
          "le", [](const Tensor& s, const py::object& o) { return s.le(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_le)
      .def(
          "gt", [](const Tensor& s, const py::object& o) { return s.gt(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_gt)
      .def(
          "ge", [](const Tensor& s, const py::object& o) { return s.ge(other_tensor(s, o)); },
          py::arg("other"), docs::tensor_ge);
}

// The Tensor `o` holds when its type is exactly Tensor, else null: one pointer comparison
// and no copy, the common case of an operator between two tensors (py::isinstance and a
// cast cost a third of a small add from Python).
const Tensor* exact_tensor(const py::handle& o) {
  static PyTypeObject* const type = reinterpret_cast<PyTypeObject*>(py::type::of<Tensor>().ptr());
  if (Py_TYPE(o.ptr()) != type) return nullptr;
  return reinterpret_cast<py::detail::instance*>(o.ptr())
      ->get_value_and_holder()
      .value_ptr<Tensor>();
}

// A binary operator's method: op(self, other) with other a Tensor, a Python number (as a
// double) or anything else to_tensor takes.
template <typename Op>
auto tensor_or_number(Op op) {
  return [op](const Tensor& a, const py::object& b) -> Tensor {
    if (const Tensor* t = exact_tensor(b)) return op(a, *t);
    if (!py::isinstance<Tensor>(b) &&
        (py::isinstance<py::float_>(b) || py::isinstance<py::int_>(b)))
      return op(a, b.cast<double>());
    return op(a, other_tensor(a, b));
  };
}

// Python's arithmetic operators, with numbers on either side.
void bind_arithmetic_operators(py::class_<Tensor>& t) {
  t.def("__add__", tensor_or_number([](const Tensor& a, const auto& b) { return a + b; }))
      .def("__radd__", tensor_or_number([](const Tensor& a, const auto& b) { return b + a; }))
      .def("__sub__", tensor_or_number([](const Tensor& a, const auto& b) { return a - b; }))
      .def("__rsub__", tensor_or_number([](const Tensor& a, const auto& b) { return b - a; }))
      .def("__mul__", tensor_or_number([](const Tensor& a, const auto& b) { return a * b; }))
      .def("__rmul__", tensor_or_number([](const Tensor& a, const auto& b) { return b * a; }))
      .def("__truediv__", tensor_or_number([](const Tensor& a, const auto& b) { return a / b; }))
      .def("__rtruediv__", tensor_or_number([](const Tensor& a, const auto& b) { return b / a; }))
      .def("__pow__", tensor_or_number([](const Tensor& a, const auto& b) { return pow(a, b); }))
      .def("__rpow__", tensor_or_number([](const Tensor& a, const auto& b) { return pow(b, a); }))
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); })
      .def("__rmatmul__",
           [](const Tensor& a, const py::object& b) { return matmul(other_tensor(a, b), a); })
      .def("__neg__", [](const Tensor& a) { return -a; })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return abs(a); })
      .def("__invert__", [](const Tensor& a) { return logical_not(a); });
}

// Python's in-place and comparison operators, and __hash__.
void bind_in_place_and_comparison_operators(py::class_<Tensor>& t) {
  t.def("__iadd__",
        [](Tensor& a, const py::object& b) -> Tensor& { return a.add_(other_tensor(a, b)); })
      .def("__isub__",
           [](Tensor& a, const py::object& b) -> Tensor& {
             return a.add_(other_tensor(a, b), -1.0);
           })
      .def("__imul__", [](Tensor& a, double b) -> Tensor& { return a.mul_(b); })
      .def("__itruediv__", [](Tensor& a, double b) -> Tensor& { return a.mul_(1.0 / b); })
      .def("__eq__", [](const Tensor& a, const py::object& b) { return eq(a, other_tensor(a, b)); })
      .def("__ne__", [](const Tensor& a, const py::object& b) { return ne(a, other_tensor(a, b)); })
      .def("__lt__", [](const Tensor& a, const py::object& b) { return lt(a, other_tensor(a, b)); })
      .def("__le__", [](const Tensor& a, const py::object& b) { return le(a, other_tensor(a, b)); })
      .def("__gt__", [](const Tensor& a, const py::object& b) { return gt(a, other_tensor(a, b)); })
      .def("__ge__", [](const Tensor& a, const py::object& b) { return ge(a, other_tensor(a, b)); })
      .def("__hash__", [](const Tensor& a) { return reinterpret_cast<std::uintptr_t>(a.impl()); });
}

// zeros, ones, empty and full.
void bind_filled_factories(py::module_& m) {
  auto sized = [&m](const char* name, Tensor (*make)(const Shape&, TensorOptions),
                    const char* doc) {
    m.def(
        name,
        [make, name](const py::args& size, const py::object& dtype, const py::object& device,
                     bool requires_grad) {
          return make(shape_from_args(size, name), make_options(dtype, device, requires_grad));
        },
        py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = false, doc);
  };
  sized("zeros", &zeros, docs::zeros);
  sized("ones", &ones, docs::ones);
  sized("empty", &empty, docs::empty);
  m.def(
      "full",
      [](const py::object& size, const py::object& value, const py::object& dtype,
         const py::object& device, bool rg) {
        return filled("full", to_shape(size, "full"), value, make_options(dtype, device, rg));
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false, docs::full);
}

// rand, randn and randint.
void bind_random_factories(py::module_& m) {
  auto random = [&m](const char* name, Tensor (*make)(const Shape&, TensorOptions, Generator*),
                     const char* doc) {
    m.def(
        name,
        [make, name](const py::args& size, Generator* generator, const py::object& dtype,
                     const py::object& device, bool rg) {
          return make(shape_from_args(size, name), make_options(dtype, device, rg), generator);
        },
        py::kw_only(), py::arg("generator") = nullptr, py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false, doc);
  };
  random("rand", &rand, docs::rand);
  random("randn", &randn, docs::randn);
  m.def(
      "randint",
      [](std::int64_t low, const py::object& high, const py::object& size, Generator* g,
         const py::object& dtype, const py::object& device) {
        // randint(high, size) or randint(low, high, size), as torch.randint
        std::int64_t lo = low, hi;
        Shape shape;
        if (size.is_none()) {
          lo = 0;
          hi = low;
          shape = to_shape(high);
        } else {
          hi = high.cast<std::int64_t>();
          shape = to_shape(size);
        }
        return randint(lo, hi, shape, make_options(dtype, device, false), g);
      },
      py::arg("low"), py::arg("high"), py::arg("size") = py::none(), py::kw_only(),
      py::arg("generator") = nullptr, py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      docs::randint);
}

// arange and the *_like factories.
void bind_range_and_like_factories(py::module_& m) {
  m.def(
      "arange",
      [](const py::object& start, const py::object& end, const py::object& step,
         const py::object& dtype, const py::object& device, bool rg) {
        TensorOptions o = make_options(dtype, device, rg);
        // Python ints give int64, as in PyTorch, unless a dtype is given; any float gives float32.
        const bool ints = py::isinstance<py::int_>(start) &&
                          (end.is_none() || py::isinstance<py::int_>(end)) &&
                          py::isinstance<py::int_>(step);
        if (dtype.is_none() && ints) o.dtype(kInt64);
        if (end.is_none()) return arange(start.cast<double>(), o);
        return arange(start.cast<double>(), end.cast<double>(), step.cast<double>(), o);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false, docs::arange);
  m.def("zeros_like", &zeros_like, py::arg("input"), docs::zeros_like);
  m.def("ones_like", &ones_like, py::arg("input"), docs::ones_like);
  m.def("empty_like", &empty_like, py::arg("input"), docs::empty_like);
  m.def(
      "full_like",
      [](const Tensor& input, const py::object& value) {
        return filled("full_like", input.shape(), value, input.options());
      },
      py::arg("input"), py::arg("fill_value"), docs::full_like);
}

// tensor, as_tensor and from_numpy: tensors from Python data.
void bind_data_factories(py::module_& m) {
  m.def(
      "tensor",
      [](const py::object& data, const py::object& dtype, const py::object& device, bool rg) {
        Tensor out =
            to_tensor(data, dtype.is_none() ? std::nullopt : std::optional<DType>(to_dtype(dtype)));
        if (py::isinstance<Tensor>(data) || py::isinstance<py::array>(data))
          out = out.detach().clone();  // tensor() copies
        if (!device.is_none()) out = out.to(to_device(device));
        if (rg) out.requires_grad_(true);
        return out;
      },
      py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false, docs::tensor_factory);
  m.def(
      "as_tensor",
      [](const py::object& data, const py::object& dtype) {
        return to_tensor(data,
                         dtype.is_none() ? std::nullopt : std::optional<DType>(to_dtype(dtype)));
      },
      py::arg("data"), py::arg("dtype") = py::none(), docs::as_tensor);
  m.def("from_numpy", &from_numpy, py::arg("array"), docs::from_numpy);
}

// headgrad.Generator and manual_seed.
void bind_generator(py::module_& m) {
  py::class_<Generator>(m, "Generator", "A seedable random number generator (torch.Generator)")
      .def(py::init<std::uint64_t>(), py::arg("seed") = 0x5EEDull, docs::generator_init)
      .def(
          "manual_seed",
          [](Generator& g, std::uint64_t s) -> Generator& {
            g.manual_seed(s);
            return g;
          },
          py::arg("seed"), py::return_value_policy::reference_internal, docs::generator_manual_seed)
      .def("initial_seed", &Generator::initial_seed, docs::generator_initial_seed);
  m.def("manual_seed", &manual_seed, py::arg("seed"), docs::manual_seed);
}

// Threads and the GPU: set_num_threads, get_num_threads, cuda_is_available, headgrad.cuda ...
void bind_runtime(py::module_& m) {
  m.def("set_num_threads", &set_num_threads, py::arg("n"), docs::set_num_threads);
  m.def("get_num_threads", &get_num_threads, docs::get_num_threads);
  m.def("cuda_is_available", &cuda_is_available, docs::cuda_is_available);
  m.def("cuda_device_count", &cuda_device_count, docs::cuda_device_count);
  bind_cuda(m.def_submodule("cuda", "The GPU: availability, synchronization, TF32 and memory"));
}

}  // namespace

void bind_core(py::module_& m) {
  bind_dtype_device(m);
  bind_tensor_class(m);
  auto cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_tensor_autograd(cls);
  bind_tensor_conversion(cls);
  bind_tensor_in_place(cls);
  bind_tensor_indexing(cls);
  // `array * tensor` and `np.float32(2) * tensor` call the tensor's operators (and stay in
  // the graph) instead of NumPy's, which would turn the tensor into an array.
  cls.attr("__array_ufunc__") = py::none();
  bind_tensor_shape_methods(cls);
  bind_tensor_reductions(cls);
  bind_tensor_math(cls);
  bind_tensor_masking_comparisons(cls);
  bind_arithmetic_operators(cls);
  bind_in_place_and_comparison_operators(cls);
  bind_filled_factories(m);
  bind_random_factories(m);
  bind_range_and_like_factories(m);
  bind_data_factories(m);
  bind_generator(m);
  bind_runtime(m);
}

}  // namespace headgrad::python
