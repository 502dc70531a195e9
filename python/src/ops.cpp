// The ops as functions: headgrad.matmul, headgrad.cat, ... and headgrad.nn.functional
// (softmax, cross_entropy, layer_norm, ...), with PyTorch's names and keywords.
#include "docs/ops.hpp"
#include "common.hpp"

namespace headgrad::python {
namespace {

Tensor operand(const py::object& value, const Tensor& like) {
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  return to_tensor(value, like.dtype()).to(like.device());
}

Reduction to_reduction(const std::string& name) {
  if (name == "mean") return Reduction::mean;
  if (name == "sum") return Reduction::sum;
  if (name == "none") return Reduction::none;
  throw ValueError("reduction '" + name + "' is not one of mean, sum, none");
}

SoftmaxMode to_softmax_mode(bool safe) { return safe ? SoftmaxMode::safe : SoftmaxMode::standard; }

// matmul and the arithmetic functions: add, sub, mul, div, pow, maximum, minimum.
void bind_arithmetic_functions(py::module_& m) {
  m.def("matmul", &matmul, py::arg("input"), py::arg("other"), docs::matmul);
  m.def(
      "add",
      [](const Tensor& a, const py::object& b, double alpha) {
        return add(a, operand(b, a), alpha);
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0, docs::add);
  m.def(
      "sub",
      [](const Tensor& a, const py::object& b, double alpha) {
        return sub(a, operand(b, a), alpha);
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0, docs::sub);
  m.def(
      "mul", [](const Tensor& a, const py::object& b) { return mul(a, operand(b, a)); },
      py::arg("input"), py::arg("other"), docs::mul);
  m.def(
      "div", [](const Tensor& a, const py::object& b) { return div(a, operand(b, a)); },
      py::arg("input"), py::arg("other"), docs::div);
  m.def(
      "pow",
      [](const py::object& a, const py::object& b) {
        if (!py::isinstance<Tensor>(a)) return pow(a.cast<double>(), b.cast<Tensor>());
        const Tensor base = a.cast<Tensor>();
        if (py::isinstance<Tensor>(b)) return pow(base, b.cast<Tensor>());
        return pow(base, b.cast<double>());
      },
      py::arg("input"), py::arg("exponent"), docs::pow);
  m.def("maximum", &maximum, py::arg("input"), py::arg("other"), docs::maximum);
  m.def("minimum", &minimum, py::arg("input"), py::arg("other"), docs::minimum);
}

// The elementwise functions: neg, exp, ..., clamp, where and the comparisons.
void bind_elementwise_functions(py::module_& m) {
  struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&);
    const char* doc;
  };
  for (const Unary& u :
       std::initializer_list<Unary>{{"neg", &neg, docs::neg},
                                    {"exp", &exp, docs::exp},
                                    {"log", &log, docs::log},
                                    {"sqrt", &sqrt, docs::sqrt},
                                    {"rsqrt", &rsqrt, docs::rsqrt},
                                    {"abs", &abs, docs::abs},
                                    {"tanh", &tanh, docs::tanh},
                                    {"sigmoid", &sigmoid, docs::sigmoid},
                                    {"relu", &relu, docs::relu},
                                    {"logical_not", &logical_not, docs::logical_not}})
    m.def(u.name, u.fn, py::arg("input"), u.doc);
  m.def(
      "clamp",
      [](const Tensor& x, const std::optional<double>& lo, const std::optional<double>& hi) {
        return clamp(x, lo.value_or(-INFINITY), hi.value_or(INFINITY));
      },
      py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none(), docs::clamp);
  m.def(
      "where",
      [](const Tensor& c, const py::object& a, const py::object& b) {
        const Tensor ta =
            py::isinstance<Tensor>(a) ? a.cast<Tensor>() : operand(a, b.cast<Tensor>());
        return where(c, ta, operand(b, ta));
      },
      py::arg("condition"), py::arg("input"), py::arg("other"), docs::where);
  struct Comparison {
    const char* name;
    Tensor (*fn)(const Tensor&, const Tensor&);
    const char* doc;
  };
  for (const Comparison& c : std::initializer_list<Comparison>{{"eq", &eq, docs::eq},
                                                               {"ne", &ne, docs::ne},
                                                               {"lt", &lt, docs::lt},
                                                               {"le", &le, docs::le},
                                                               {"gt", &gt, docs::gt},
                                                               {"ge", &ge, docs::ge}})
    m.def(
        c.name, [fn = c.fn](const Tensor& a, const py::object& b) { return fn(a, operand(b, a)); },
        py::arg("input"), py::arg("other"), c.doc);
}

// The reductions: sum, mean, var, amax, argmax, sum_to.
void bind_reduction_functions(py::module_& m) {
  m.def(
      "sum",
      [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? sum(x) : sum(x, to_shape(dim), keepdim);
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::sum);
  m.def(
      "mean",
      [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? mean(x) : mean(x, to_shape(dim), keepdim);
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::mean);
  m.def(
      "var",
      [](const Tensor& x, const py::object& dim, bool unbiased, bool keepdim) {
        return var(x, dim.is_none() ? Shape{} : to_shape(dim), keepdim, unbiased ? 1 : 0);
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("unbiased") = true,
      py::arg("keepdim") = false, docs::var);
  m.def(
      "amax",
      [](const Tensor& x, const py::object& dim, bool keepdim) {
        return amax(x, dim.is_none() ? Shape{} : to_shape(dim), keepdim);
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, docs::amax);
  m.def(
      "argmax",
      [](const Tensor& x, std::int64_t dim, bool keepdim) { return argmax(x, dim, keepdim); },
      py::arg("input"), py::arg("dim"), py::arg("keepdim") = false, docs::argmax);
  m.def("sum_to", &sum_to, py::arg("input"), py::arg("shape"), docs::sum_to);
}

// The shape and indexing functions: reshape, permute, cat, split, select, index_put ...
void bind_shape_functions(py::module_& m) {
  m.def(
      "reshape", [](const Tensor& x, const py::object& s) { return reshape(x, to_shape(s)); },
      py::arg("input"), py::arg("shape"), docs::reshape);
  m.def("flatten", &flatten, py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1,
        docs::flatten);
  m.def("transpose", &transpose, py::arg("input"), py::arg("dim0"), py::arg("dim1"),
        docs::transpose);
  m.def(
      "permute", [](const Tensor& x, const py::object& dims) { return permute(x, to_shape(dims)); },
      py::arg("input"), py::arg("dims"), docs::permute);
  m.def("unsqueeze", &unsqueeze, py::arg("input"), py::arg("dim"), docs::unsqueeze);
  m.def(
      "squeeze",
      [](const Tensor& x, const std::optional<std::int64_t>& dim) {
        return dim ? squeeze(x, *dim) : squeeze(x);
      },
      py::arg("input"), py::arg("dim") = py::none(), docs::squeeze);
  m.def("cat", &concat, py::arg("tensors"), py::arg("dim") = 0, docs::cat);
  m.def("concat", &concat, py::arg("tensors"), py::arg("dim") = 0, docs::concat);
  m.def("stack", &stack, py::arg("tensors"), py::arg("dim") = 0, docs::stack);
  m.def(
      "split",
      [](const Tensor& x, const py::object& size, std::int64_t dim) {
        if (py::isinstance<py::int_>(size)) return split(x, size.cast<std::int64_t>(), dim);
        return split_with_sizes(x, to_shape(size), dim);
      },
      py::arg("tensor"), py::arg("split_size_or_sections"), py::arg("dim") = 0, docs::split);
  m.def("chunk", &chunk, py::arg("input"), py::arg("chunks"), py::arg("dim") = 0, docs::chunk);
  m.def("narrow", &narrow, py::arg("input"), py::arg("dim"), py::arg("start"), py::arg("length"),
        docs::narrow);
  m.def("select", &select, py::arg("input"), py::arg("dim"), py::arg("index"), docs::select);
  m.def("index_select", &index_select, py::arg("input"), py::arg("dim"), py::arg("index"),
        docs::index_select);
  m.def(
      "index_put",
      [](const Tensor& x, const py::tuple& indices, const py::object& values, bool accumulate) {
        std::vector<indexing::TensorIndex> idx;
        for (const auto& i : indices)
          idx.emplace_back(py::isinstance<Tensor>(i) ? i.cast<Tensor>() : to_tensor(i));
        return index_put(x, idx, operand(values, x), accumulate);
      },
      py::arg("input"), py::arg("indices"), py::arg("values"), py::arg("accumulate") = false,
      docs::index_put);
}

// softmax, log_softmax, masked_fill and causal_mask.
void bind_softmax_and_mask_functions(py::module_& m) {
  m.def(
      "softmax",
      [](const Tensor& x, std::int64_t dim, bool safe) {
        return softmax(x, dim, to_softmax_mode(safe));
      },
      py::arg("input"), py::arg("dim"), py::kw_only(), py::arg("safe") = false, docs::softmax);
  m.def(
      "log_softmax",
      [](const Tensor& x, std::int64_t dim, bool safe) {
        return log_softmax(x, dim, to_softmax_mode(safe));
      },
      py::arg("input"), py::arg("dim"), py::kw_only(), py::arg("safe") = false, docs::log_softmax);
  m.def("masked_fill", &masked_fill, py::arg("input"), py::arg("mask"), py::arg("value"),
        docs::masked_fill);
  m.def(
      "causal_mask",
      [](std::int64_t target, const std::optional<std::int64_t>& source) {
        return source ? causal_mask(target, *source) : causal_mask(target);
      },
      py::arg("size"), py::arg("source_len") = py::none(), docs::causal_mask);
}

// headgrad.nn.functional's linear, softmax, activations and dropout.
void bind_functional_layers(py::module_& f) {
  f.def(
      "linear",
      [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
        return linear(x, w, optional_tensor(b));
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), docs::f_linear);
  f.def(
      "softmax",
      [](const Tensor& x, std::int64_t dim, bool safe) {
        return softmax(x, dim, to_softmax_mode(safe));
      },
      py::arg("input"), py::arg("dim"), py::kw_only(), py::arg("safe") = false, docs::f_softmax);
  f.def(
      "log_softmax",
      [](const Tensor& x, std::int64_t dim, bool safe) {
        return log_softmax(x, dim, to_softmax_mode(safe));
      },
      py::arg("input"), py::arg("dim"), py::kw_only(), py::arg("safe") = false,
      docs::f_log_softmax);
  f.def("relu", &relu, py::arg("input"), docs::f_relu);
  f.def(
      "gelu",
      [](const Tensor& x, const std::string& approximate) {
        if (approximate != "none" && approximate != "tanh")
          throw ValueError("gelu: approximate '" + approximate + "' is not 'none' or 'tanh'");
        return gelu(x, approximate == "tanh" ? GeluApproximation::tanh : GeluApproximation::none);
      },
      py::arg("input"), py::kw_only(), py::arg("approximate") = "none", docs::f_gelu);
  f.def("sigmoid", &sigmoid, py::arg("input"), docs::f_sigmoid);
  f.def("tanh", &tanh, py::arg("input"), docs::f_tanh);
  f.def(
      "dropout",
      [](const Tensor& x, double p, bool training, Generator* g) {
        return dropout(x, p, training, g);
      },
      py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true, py::kw_only(),
      py::arg("generator") = nullptr, docs::f_dropout);
}

// headgrad.nn.functional's layer_norm and the losses: cross_entropy, mse_loss.
void bind_functional_norm_and_losses(py::module_& f) {
  f.def(
      "layer_norm",
      [](const Tensor& x, const py::object& shape, const std::optional<Tensor>& w,
         const std::optional<Tensor>& b, double eps) {
        return layer_norm(x, to_shape(shape), optional_tensor(w), optional_tensor(b), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5, docs::f_layer_norm);
  f.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& target, const std::string& reduction,
         std::int64_t ignore_index, double label_smoothing) {
        return cross_entropy(logits, target, to_reduction(reduction), ignore_index,
                             label_smoothing);
      },
      py::arg("input"), py::arg("target"), py::kw_only(), py::arg("reduction") = "mean",
      py::arg("ignore_index") = -100, py::arg("label_smoothing") = 0.0, docs::f_cross_entropy);
  f.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& y, const std::string& reduction) {
        return mse_loss(x, y, to_reduction(reduction));
      },
      py::arg("input"), py::arg("target"), py::kw_only(), py::arg("reduction") = "mean",
      docs::f_mse_loss);
}

// headgrad.nn.functional's embedding and one_hot.
void bind_functional_embedding(py::module_& f) {
  f.def(
      "embedding",
      [](const Tensor& ids, const Tensor& weight, const std::optional<std::int64_t>& padding_idx) {
        return embedding(weight, ids, padding_idx);
      },
      py::arg("input"), py::arg("weight"), py::arg("padding_idx") = py::none(), docs::f_embedding);
  f.def(
      "one_hot",
      [](const Tensor& ids, std::int64_t n, const py::object& dtype) {
        return one_hot(ids, n, dtype.is_none() ? kInt64 : to_dtype(dtype));
      },
      py::arg("input"), py::arg("num_classes") = -1, py::kw_only(), py::arg("dtype") = py::none(),
      docs::f_one_hot);
}

}  // namespace

void bind_ops(py::module_& m) {
  bind_arithmetic_functions(m);
  bind_elementwise_functions(m);
  bind_reduction_functions(m);
  bind_shape_functions(m);
  bind_softmax_and_mask_functions(m);
  auto functional = m.def_submodule("functional", "headgrad.nn.functional");
  bind_functional_layers(functional);
  bind_functional_norm_and_losses(functional);
  bind_functional_embedding(functional);
}

}  // namespace headgrad::python
