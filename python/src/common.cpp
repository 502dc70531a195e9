// The shared conversions of common.hpp.
#include "common.hpp"

#include <cctype>

namespace headgrad::python {

DType to_dtype(const py::handle& value) {
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  std::string name;
  if (py::isinstance<py::str>(value)) {
    name = value.cast<std::string>();
  } else {
    // numpy dtypes and scalar types (np.float32, np.dtype("int64"))
    py::module_ np = py::module_::import("numpy");
    try {
      name = py::str(np.attr("dtype")(value).attr("name")).cast<std::string>();
    } catch (const py::error_already_set&) {
      name = py::str(value).cast<std::string>();
    }
  }
  if (name == "float32" || name == "float") return kFloat32;
  if (name == "float64" || name == "double") return kFloat64;
  if (name == "int64" || name == "long") return kInt64;
  if (name == "bool") return kBool;
  throw DTypeError("dtype '" + name +
                   "' is not one of headgrad's: float32, float64, int64, bool (headgrad.float32, "
                   "'float32' or numpy.float32 all name float32)");
}

Device to_device(const py::handle& value) {
  if (py::isinstance<Device>(value)) return value.cast<Device>();
  return Device::parse(py::str(value).cast<std::string>());
}

namespace {

std::string type_name(const py::handle& value) {
  return py::str(py::type::of(value).attr("__name__")).cast<std::string>();
}

// Entry `position` of a shape or a list of dims: an int (or anything with __index__, as
// NumPy's ints) within int64.
std::int64_t shape_entry(const py::handle& item, std::size_t position, const char* op) {
  const std::string where = " at position " + std::to_string(position);
  if (!PyIndex_Check(item.ptr()) || PyBool_Check(item.ptr()))
    throw py::type_error(std::string(op) + ": sizes and dims are ints, got " + type_name(item) +
                         " " + py::repr(item).cast<std::string>() + where);
  const auto value = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
  if (!value) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0)
    throw OverflowError(std::string(op) + ": the entry " + py::str(value).cast<std::string>() +
                        where +
                        " is out of range: sizes and dims are int64, from -2^63 to 2^63 - 1 "
                        "(and a tensor must fit in memory)");
  return v;
}

}  // namespace

Shape to_shape(const py::handle& value, const char* op) {
  if (PyIndex_Check(value.ptr()) && !PyBool_Check(value.ptr())) return {shape_entry(value, 0, op)};
  if (py::isinstance<py::sequence>(value) && !py::isinstance<py::str>(value)) {
    Shape shape;
    for (const auto& item : value.cast<py::sequence>())
      shape.push_back(shape_entry(item, shape.size(), op));
    return shape;
  }
  throw ValueError(std::string(op) + ": a shape must be an int or a sequence of ints, not " +
                   type_name(value));
}

Shape shape_from_args(const py::args& args, const char* op) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return to_shape(args[0], op);
  Shape shape;
  for (const auto& a : args) shape.push_back(shape_entry(a, shape.size(), op));
  return shape;
}

py::object tensor_or_none(const Tensor& t) { return t.defined() ? py::cast(t) : py::none(); }

namespace {

// NumPy's dtype for a headgrad dtype.
py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return py::dtype::of<float>();
    case DType::float64:
      return py::dtype::of<double>();
    case DType::int64:
      return py::dtype::of<std::int64_t>();
    case DType::boolean:
      return py::dtype::of<bool>();
  }
  throw DTypeError("to_numpy: unknown dtype");
}

// The headgrad dtype that holds a NumPy dtype's values, and whether the bytes are the same
// (so the array can be shared rather than converted).
std::optional<DType> shared_dtype(const py::dtype& dt) {
  if (dt.is(py::dtype::of<float>()) || dt.equal(py::dtype::of<float>())) return kFloat32;
  if (dt.equal(py::dtype::of<double>())) return kFloat64;
  if (dt.equal(py::dtype::of<std::int64_t>())) return kInt64;
  if (dt.equal(py::dtype::of<bool>())) return kBool;
  return std::nullopt;
}

// Where a NumPy dtype that headgrad does not store goes when copied.
DType converted_dtype(const py::dtype& dt) {
  const char kind = dt.kind();
  if (kind == 'f') return dt.itemsize() == 8 ? kFloat64 : kFloat32;  // float16 -> float32
  if (kind == 'i' || kind == 'u') return kInt64;
  if (kind == 'b') return kBool;
  throw DTypeError("from_numpy: a NumPy array of dtype " +
                   py::str(py::handle(dt)).cast<std::string>() +
                   " has no headgrad dtype (float32, float64, int64, bool; floats and ints "
                   "of other widths are converted)");
}

}  // namespace

py::array to_numpy(const Tensor& t) {
  t.check_defined("numpy");
  if (!t.device().is_cpu())
    throw DeviceError("numpy: " + t.describe() + " is on " + t.device().str() +
                      "; copy it to the CPU first (t.cpu().numpy())");
  if (t.requires_grad() && is_grad_enabled())
    throw AutogradError("numpy: " + t.describe() +
                        " requires grad; call t.detach().numpy() (as in PyTorch), so the array "
                        "is not mistaken for part of the graph");
  const Shape& shape = t.shape();
  const std::size_t item = element_size(t.dtype());
  std::vector<py::ssize_t> strides;
  for (std::int64_t s : contiguous_strides(shape))
    strides.push_back(s * static_cast<py::ssize_t>(item));
  auto* keep = new std::shared_ptr<Storage>(t.impl()->storage);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  return py::array(numpy_dtype(t.dtype()), std::vector<py::ssize_t>(shape.begin(), shape.end()),
                   strides, const_cast<void*>(t.raw_data()), owner);
}

Tensor from_numpy(const py::array& a) {
  const auto flags = a.flags();
  const bool layout_ok = (flags & py::array::c_style) != 0 && a.writeable() &&
                         (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0 &&
                         a.dtype().attr("isnative").cast<bool>();
  Shape shape(a.shape(), a.shape() + a.ndim());
  if (const auto dtype = shared_dtype(a.dtype()); dtype && layout_ok) {
    auto* keep = new py::object(a);
    return from_blob(const_cast<void*>(a.data()), shape, *dtype, [keep] {
      if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing to release
      py::gil_scoped_acquire gil;
      delete keep;
    });
  }
  // A copy: C order, native bytes, and a dtype headgrad stores.
  const DType dtype = shared_dtype(a.dtype()).value_or(converted_dtype(a.dtype()));
  py::module_ np = py::module_::import("numpy");
  if (a.dtype().kind() == 'u' && a.dtype().itemsize() == 8 && a.size() > 0 &&
      np.attr("max")(a).cast<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw ValueError(
        "from_numpy: a uint64 array holds values above 2^63 - 1, which int64 (the "
        "dtype headgrad stores integers in) cannot hold");
  py::array copy = np.attr("ascontiguousarray")(a, numpy_dtype(dtype)).cast<py::array>();
  if (copy.ptr() == a.ptr()) copy = np.attr("array")(a, numpy_dtype(dtype)).cast<py::array>();
  Tensor out = empty(shape, dtype);
  if (out.numel() > 0)
    std::memcpy(out.raw_data(), copy.data(),
                static_cast<std::size_t>(out.numel()) * element_size(dtype));
  return out;
}

namespace {

// What a (nested) list or tuple of Python numbers holds beyond NumPy's view of it: the
// first int outside int64 (NumPy stores [2**63] as uint64 and [1, 2**63] as float64, and
// gives up on 2**64 with an object array), and whether any float occurs (then the values
// are floats, as in PyTorch, and a big int among them is just a large float).
struct PythonInts {
  py::object beyond_int64;
  bool any_float = false;
};

void scan_python_ints(const py::handle& value, PythonInts& found) {
  PyObject* v = value.ptr();
  if (PyBool_Check(v)) return;
  if (PyLong_Check(v)) {
    int overflow = 0;
    PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0 && !found.beyond_int64)
      found.beyond_int64 = py::reinterpret_borrow<py::object>(value);
    return;
  }
  if (PyFloat_Check(v)) {
    found.any_float = true;
  } else if (PyList_Check(v) || PyTuple_Check(v)) {
    for (const auto& item : value) scan_python_ints(item, found);
  } else if (py::hasattr(value, "dtype")) {  // NumPy scalars and arrays inside a list
    found.any_float =
        found.any_float || py::str(value.attr("dtype").attr("kind")).cast<std::string>() == "f";
  }
}

[[noreturn]] void refuse_int(const char* op, const py::object& big, const char* why) {
  throw OverflowError(std::string(op) + ": the Python int " + py::str(big).cast<std::string>() +
                      " " + why +
                      " (int64 holds -2^63 to 2^63 - 1); pass dtype=headgrad.float64 (or "
                      "float32) to store it as a float");
}

}  // namespace

Tensor to_tensor(const py::handle& value, std::optional<DType> dtype, const char* op) {
  if (py::isinstance<Tensor>(value)) {
    Tensor t = value.cast<Tensor>();
    return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  }
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance<py::array>(value)) {
    Tensor t = from_numpy(value.cast<py::array>());
    return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  }
  // Anything else with an __array__ (a torch tensor after .detach().numpy() is already an
  // array; torch tensors themselves convert through NumPy), lists and numbers: copied.
  py::array a = np.attr("asarray")(value);
  // Python ints beyond int64 show as uint64, object or (with other ints) float64 arrays.
  PythonInts ints;
  const char numpy_kind = a.dtype().kind();
  if (numpy_kind == 'u' || numpy_kind == 'O' ||
      (numpy_kind == 'f' && a.size() > 0 &&
       np.attr("max")(np.attr("abs")(a)).cast<double>() >= 0x1p63))
    scan_python_ints(value, ints);
  if (ints.beyond_int64 && dtype == kInt64) refuse_int(op, ints.beyond_int64, "does not fit int64");
  DType target;
  if (dtype) {
    target = *dtype;
  } else {
    const char kind = numpy_kind;
    if (ints.beyond_int64 && !ints.any_float)
      refuse_int(op, ints.beyond_int64,
                 "does not fit int64, the dtype headgrad (as PyTorch) gives Python ints");
    if (kind == 'f' || (kind == 'O' && ints.any_float))
      target = kFloat32;
    else if (kind == 'i' || kind == 'u')
      target = kInt64;
    else if (kind == 'b')
      target = kBool;
    else
      throw DTypeError("tensor: cannot make a tensor from a value of NumPy dtype " +
                       py::str(py::handle(a.dtype())).cast<std::string>() +
                       " (numbers, bools and nested lists of them)");
    // NumPy keeps float64 arrays float64; lists of Python floats become float32 (PyTorch's
    // default dtype).
    if (kind == 'f' && py::isinstance<py::array>(value))
      target = shared_dtype(a.dtype()).value_or(kFloat32);
  }
  // np.array keeps a 0-d value 0-d (ascontiguousarray would make it 1-d).
  py::array c = np.attr("array")(a, numpy_dtype(target), py::arg("order") = "C").cast<py::array>();
  Shape shape(c.shape(), c.shape() + c.ndim());
  Tensor out = empty(shape, target);
  if (out.numel() > 0)
    std::memcpy(out.raw_data(), c.data(),
                static_cast<std::size_t>(out.numel()) * element_size(target));
  return out;
}

PyRef::PyRef(py::object object)
    : object_(new py::object(std::move(object)), [](py::object* p) {
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        delete p;
      }) {}

Tensor returned_tensor(const py::object& result, const char* what) {
  if (result.is_none()) return Tensor();
  if (py::isinstance<Tensor>(result)) return result.cast<Tensor>();
  throw ValueError(std::string(what) + " returned a " +
                   py::str(py::type::of(result).attr("__name__")).cast<std::string>() +
                   "; return a headgrad.Tensor (or None to keep the value)");
}

train::Split to_split(const std::string& name) {
  if (name == "train") return train::Split::train;
  if (name == "validation") return train::Split::validation;
  if (name == "test") return train::Split::test;
  throw ValueError("split '" + name + "' is not one of train, validation, test");
}

}  // namespace headgrad::python
