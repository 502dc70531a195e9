// headgrad.nn: Module (the base of the C++ layers and of modules written in Python) and
// the layers and toy models with PyTorch's constructor keywords, forward arguments and
// parameter names. Modules written in Python subclass nn.Module; headgrad/nn/__init__.py
// adds PyTorch's attribute registration (self.w = Parameter(...)) on top of what is here.
#include "docs/nn.hpp"
#include "common.hpp"

namespace headgrad::python {
namespace {

void register_parameter(nn::Module& m, const std::string& name, const std::optional<Tensor>& t,
                        bool rg) {
  m.add_parameter(name, optional_tensor(t), rg);
}
void register_buffer(nn::Module& m, const std::string& name, const std::optional<Tensor>& t) {
  m.add_buffer(name, optional_tensor(t));
}
void register_module(nn::Module& m, const std::string& name, std::shared_ptr<nn::Module> child) {
  m.add_module(name, std::move(child));
}

nn::Activation to_activation(const std::string& name) {
  if (name == "relu") return nn::Activation::relu;
  if (name == "gelu") return nn::Activation::gelu;
  throw ValueError("activation '" + name + "' is not 'relu' or 'gelu'");
}

py::list named_tensors(const std::vector<std::pair<std::string, Tensor>>& items,
                       const std::string& prefix) {
  py::list out;
  for (const auto& [name, t] : items)
    out.append(py::make_tuple(prefix.empty() ? name : prefix + "." + name, t));
  return out;
}

py::dict numpy_state(const StateDict& state) {
  py::dict out;
  for (const auto& [name, t] : state)
    out[py::str(name)] = to_numpy(t.device().is_cpu() ? t : t.to(Device::cpu()));
  return out;
}

StateDict state_from_python(const py::handle& mapping) {
  StateDict state;
  for (const auto& item : mapping.attr("items")()) {
    const auto pair = item.cast<py::tuple>();
    py::object value = pair[1];
    // A torch tensor: its values through NumPy (detached, on the CPU).
    if (!py::isinstance<Tensor>(value) && py::hasattr(value, "detach") && py::hasattr(value, "cpu"))
      value = value.attr("detach")().attr("cpu")().attr("numpy")();
    state.insert(pair[0].cast<std::string>(), to_tensor(value));
  }
  return state;
}

// Module: the class, its constructor, its parameters and its buffers.
void bind_module(py::module_& m) {
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(m, "Module",
                                                      "The base of every layer (torch.nn.Module)")
      .def(py::init([](const std::string& type_name) {
             return std::make_shared<nn::Module>(type_name);
           }),
           py::arg("type_name") = "Module")
      .def_property_readonly("type_name", &nn::Module::type_name, docs::module_type_name)
      .def("_clone", &nn::Module::clone,
           "A copy of a C++ module (nn::Module::clone); copy.deepcopy(module) calls it")
      .def(
          "named_parameters",
          [](const nn::Module& s, const std::string& prefix, bool recurse) {
            return named_tensors(s.named_parameters(recurse), prefix);
          },
          py::arg("prefix") = "", py::arg("recurse") = true, docs::module_named_parameters)
      .def("parameters", &nn::Module::parameters, py::arg("recurse") = true,
           docs::module_parameters)
      .def(
          "named_buffers",
          [](const nn::Module& s, const std::string& prefix, bool recurse) {
            return named_tensors(s.named_buffers(recurse), prefix);
          },
          py::arg("prefix") = "", py::arg("recurse") = true, docs::module_named_buffers)
      .def(
          "buffers",
          [](const nn::Module& s, bool recurse) {
            std::vector<Tensor> out;
            for (auto& [n, t] : s.named_buffers(recurse)) out.push_back(t);
            return out;
          },
          py::arg("recurse") = true, docs::module_buffers)
      .def("get_parameter", &nn::Module::parameter, py::arg("target"), docs::module_get_parameter)
      .def("num_parameters", &nn::Module::num_parameters, py::arg("trainable_only") = false,
           docs::module_num_parameters);
}

// Module's submodules: named_children, children, named_modules, modules.
void bind_module_tree(py::module_& m) {
  auto module =
      py::reinterpret_borrow<py::class_<nn::Module, std::shared_ptr<nn::Module>>>(m.attr("Module"));
  module.def("named_children", &nn::Module::named_children, docs::module_named_children)
      .def(
          "children",
          [](const nn::Module& s) {
            std::vector<std::shared_ptr<nn::Module>> out;
            for (auto& [n, c] : s.named_children()) out.push_back(c);
            return out;
          },
          docs::module_children)
      .def(
          "named_modules",
          [](const nn::Module& s) {
            py::list out;
            for (auto& [n, c] : s.named_modules())
              out.append(py::make_tuple(n, std::const_pointer_cast<nn::Module>(c)));
            return out;
          },
          docs::module_named_modules)
      .def(
          "modules",
          [](const nn::Module& s) {
            std::vector<std::shared_ptr<nn::Module>> out;
            for (auto& [n, c] : s.named_modules())
              out.push_back(std::const_pointer_cast<nn::Module>(c));
            return out;
          },
          docs::module_modules);
}

// Module's training mode and zero_grad.
void bind_module_training(py::module_& m) {
  auto module =
      py::reinterpret_borrow<py::class_<nn::Module, std::shared_ptr<nn::Module>>>(m.attr("Module"));
  module
      .def(
          "train",
          [](py::object self, bool mode) {
            self.cast<nn::Module&>().train(mode);
            return self;
          },
          py::arg("mode") = true, docs::module_train)
      .def(
          "eval",
          [](py::object self) {
            self.cast<nn::Module&>().eval();
            return self;
          },
          docs::module_eval)
      .def_property_readonly("training", &nn::Module::is_training, docs::module_training)
      .def(
          "zero_grad",
          [](nn::Module& s, bool set_to_none) {
            if (!set_to_none)
              throw ValueError(
                  "zero_grad: headgrad always sets gradients to None (set_to_none=True)");
            s.zero_grad();
          },
          py::arg("set_to_none") = true, docs::module_zero_grad);
}

// Module's dtype and device moves: to, double, float, cpu, cuda, device.
void bind_module_devices(py::module_& m) {
  auto module =
      py::reinterpret_borrow<py::class_<nn::Module, std::shared_ptr<nn::Module>>>(m.attr("Module"));
  module
      .def(
          "to",
          [](py::object self, const py::object& target) {
            auto& s = self.cast<nn::Module&>();
            const bool device = py::isinstance<Device>(target) ||
                                (py::isinstance<py::str>(target) &&
                                 (target.cast<std::string>() == "cpu" ||
                                  target.cast<std::string>().rfind("cuda", 0) == 0));
            if (device)
              s.to(to_device(target));
            else
              s.to(to_dtype(target));
            return self;
          },
          py::arg("target"), docs::module_to)
      .def(
          "double",
          [](py::object self) {
            self.cast<nn::Module&>().to(kFloat64);
            return self;
          },
          docs::module_double)
      .def(
          "float",
          [](py::object self) {
            self.cast<nn::Module&>().to(kFloat32);
            return self;
          },
          docs::module_float)
      .def(
          "cpu",
          [](py::object self) {
            self.cast<nn::Module&>().to(Device::cpu());
            return self;
          },
          docs::module_cpu)
      .def(
          "cuda",
          [](py::object self, int i) {
            self.cast<nn::Module&>().to(Device::cuda(i));
            return self;
          },
          py::arg("device") = 0, docs::module_cuda)
      .def_property_readonly("device", &nn::Module::device, docs::module_device);
}

// Module's state dict, registration of parameters, buffers and submodules, and __repr__.
void bind_module_state(py::module_& m) {
  auto module =
      py::reinterpret_borrow<py::class_<nn::Module, std::shared_ptr<nn::Module>>>(m.attr("Module"));
  module
      .def(
          "state_dict", [](const nn::Module& s) { return numpy_state(s.state_dict()); },
          docs::module_state_dict)
      .def(
          "load_state_dict",
          [](nn::Module& s, const py::object& state, bool strict) {
            const auto r = s.load_state_dict(state_from_python(state), strict);
            return py::module_::import("headgrad._results")
                .attr("load")(r.missing_keys, r.unexpected_keys);
          },
          py::arg("state_dict"), py::arg("strict") = true, docs::module_load_state_dict)
      .def("register_parameter", &register_parameter, py::arg("name"), py::arg("param"),
           py::arg("requires_grad") = true, docs::module_register_parameter)
      .def("register_buffer", &register_buffer, py::arg("name"), py::arg("tensor"),
           docs::module_register_buffer)
      .def("add_module", &register_module, py::arg("name"), py::arg("module"),
           docs::module_add_module)
      .def("register_module", &register_module, py::arg("name"), py::arg("module"),
           docs::module_register_module)
      .def("__repr__", &nn::Module::to_string);
}

// --- hook points ------------------------------------------------------------------------
py::list named_points(
    const std::vector<std::pair<std::string, std::shared_ptr<const nn::HookPoint>>>& points) {
  py::list out;
  for (const auto& [name, point] : points)
    out.append(py::make_tuple(name, std::const_pointer_cast<nn::HookPoint>(point)));
  return out;
}

// HookPoint, and Module's hook-point registry (nn/hooks.hpp).
void bind_hook_point(py::module_& m) {
  py::class_<nn::HookPoint, std::shared_ptr<nn::HookPoint>>(
      m, "HookPoint",
      "A place in a module's forward where hooks, captures and caches see the tensor "
      "(TransformerLens's HookPoint): assign one to an attribute of a Module written in "
      "Python (self.hook_x = HookPoint()) and pass the tensor through it in forward "
      "(x = self.hook_x(x)); per_head=True marks a tensor (N, H, ...) whose heads hooks may "
      "take one at a time")
      .def(py::init([](bool per_head) { return std::make_shared<nn::HookPoint>(per_head); }),
           py::arg("per_head") = false, docs::hook_point_init)
      .def("__call__", &nn::HookPoint::operator(), py::arg("value"),
           "The tensor the forward continues with: value, or the active hooks' replacement")
      .def_property_readonly("per_head", &nn::HookPoint::per_head, docs::hook_point_per_head)
      .def_property_readonly("name", &nn::HookPoint::name, "Its own name in its module ('' before)")
      .def("__deepcopy__",
           [](const nn::HookPoint& p, const py::object&) {
             return std::make_shared<nn::HookPoint>(p.per_head());
           })
      .def("__repr__", [](const nn::HookPoint& p) {
        return "HookPoint(" + (p.name().empty() ? std::string() : "'" + p.name() + "'") +
               (p.per_head() ? std::string(p.name().empty() ? "" : ", ") + "per_head=True" : "") +
               ")";
      });
  auto module =
      py::reinterpret_borrow<py::class_<nn::Module, std::shared_ptr<nn::Module>>>(m.attr("Module"));
  module
      .def("add_hook_point", &nn::Module::add_hook_point, py::arg("name"), py::arg("point"),
           docs::module_add_hook_point)
      .def(
          "hook_points", [](const nn::Module& s) { return named_points(s.hook_points()); },
          docs::module_hook_points)
      .def(
          "named_hook_points",
          [](const nn::Module& s) { return named_points(s.named_hook_points()); },
          docs::module_named_hook_points);
}

// --- small layers -----------------------------------------------------------------------
// Linear.
void bind_linear(py::module_& m) {
  py::class_<nn::Linear, nn::Module, std::shared_ptr<nn::Linear>>(m, "Linear", docs::linear)
      .def(py::init([](std::int64_t in, std::int64_t out, bool bias, Generator* g) {
             return std::make_shared<nn::Linear>(in, out, bias, g);
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true, py::kw_only(),
           py::arg("generator") = nullptr, docs::linear_init)
      .def("forward", &nn::Linear::forward, py::arg("input"), docs::linear_forward)
      .def_property_readonly(
          "weight", [](const nn::Linear& s) { return s.weight; }, docs::linear_weight)
      .def_property_readonly(
          "bias", [](const nn::Linear& s) { return tensor_or_none(s.bias); }, docs::linear_bias)
      .def_property_readonly(
          "in_features", [](const nn::Linear& s) { return s.options().in_features; },
          docs::linear_in_features)
      .def_property_readonly(
          "out_features", [](const nn::Linear& s) { return s.options().out_features; },
          docs::linear_out_features)
      .def("reset_parameters", &nn::Linear::reset_parameters, py::arg("generator") = nullptr,
           docs::linear_reset_parameters);
}

// UnaryModule and the one-input layers: Embedding, LayerNorm, Dropout, ReLU, GELU.
void bind_unary_layers(py::module_& m) {
  py::class_<nn::UnaryModule, nn::Module, std::shared_ptr<nn::UnaryModule>>(m, "UnaryModule",
                                                                            docs::unary_module)
      .def("forward", &nn::UnaryModule::forward, py::arg("input"), docs::unary_forward);
  py::class_<nn::Embedding, nn::UnaryModule, std::shared_ptr<nn::Embedding>>(m, "Embedding",
                                                                             docs::embedding)
      .def(py::init([](std::int64_t n, std::int64_t d, std::optional<std::int64_t> pad,
                       Generator* g) { return std::make_shared<nn::Embedding>(n, d, pad, g); }),
           py::arg("num_embeddings"), py::arg("embedding_dim"), py::arg("padding_idx") = py::none(),
           py::kw_only(), py::arg("generator") = nullptr, docs::embedding_init)
      .def_property_readonly(
          "weight", [](const nn::Embedding& s) { return s.weight; }, docs::embedding_weight)
      .def_property_readonly("num_embeddings", &nn::Embedding::num_embeddings,
                             docs::embedding_num_embeddings)
      .def_property_readonly("embedding_dim", &nn::Embedding::embedding_dim,
                             docs::embedding_embedding_dim)
      .def_property_readonly("padding_idx", &nn::Embedding::padding_idx,
                             docs::embedding_padding_idx);
  py::class_<nn::LayerNorm, nn::UnaryModule, std::shared_ptr<nn::LayerNorm>>(m, "LayerNorm",
                                                                             docs::layer_norm)
      .def(py::init([](const py::object& shape, double eps, bool affine, bool bias) {
             const Shape s = to_shape(shape);
             if (s.size() != 1)
               throw ValueError("LayerNorm: normalized_shape " + shape_str(s) +
                                ": headgrad normalizes over the last dim only (one size)");
             return std::make_shared<nn::LayerNorm>(s[0], eps, affine, bias);
           }),
           py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true,
           py::arg("bias") = true, docs::layer_norm_init)
      .def_property_readonly(
          "weight", [](const nn::LayerNorm& s) { return tensor_or_none(s.weight); },
          docs::layer_norm_weight)
      .def_property_readonly(
          "bias", [](const nn::LayerNorm& s) { return tensor_or_none(s.bias); },
          docs::layer_norm_bias)
      .def_property_readonly("eps", &nn::LayerNorm::eps, docs::layer_norm_eps);
  py::class_<nn::Dropout, nn::UnaryModule, std::shared_ptr<nn::Dropout>>(m, "Dropout",
                                                                         docs::dropout)
      .def(py::init([](double p, Generator* g) { return std::make_shared<nn::Dropout>(p, g); }),
           py::arg("p") = 0.5, py::kw_only(), py::arg("generator") = nullptr, docs::dropout_init)
      .def_property_readonly("p", &nn::Dropout::p, docs::dropout_p);
  py::class_<nn::ReLU, nn::UnaryModule, std::shared_ptr<nn::ReLU>>(m, "ReLU", docs::relu)
      .def(py::init<>(), docs::relu_init);
  py::class_<nn::GELU, nn::UnaryModule, std::shared_ptr<nn::GELU>>(m, "GELU", docs::gelu)
      .def(py::init([](const std::string& approximate) {
             return std::make_shared<nn::GELU>(approximate == "tanh" ? GeluApproximation::tanh
                                                                     : GeluApproximation::none);
           }),
           py::arg("approximate") = "none", docs::gelu_init);
}

// MLP.
void bind_mlp(py::module_& m) {
  py::class_<nn::MLP, nn::UnaryModule, std::shared_ptr<nn::MLP>>(m, "MLP", docs::mlp)
      .def(py::init([](std::int64_t in, std::int64_t hidden, std::int64_t out,
                       const std::string& activation, double dropout, bool bias, Generator* g) {
             return std::make_shared<nn::MLP>(nn::MLPOptions(in, hidden, out)
                                                  .with_activation(to_activation(activation))
                                                  .with_dropout(dropout)
                                                  .with_bias(bias),
                                              g);
           }),
           py::arg("in_features"), py::arg("hidden_features"), py::arg("out_features") = 0,
           py::arg("activation") = "gelu", py::arg("dropout") = 0.0, py::arg("bias") = true,
           py::kw_only(), py::arg("generator") = nullptr, docs::mlp_init)
      .def_readonly("fc1", &nn::MLP::fc1, docs::mlp_fc1)
      .def_readonly("fc2", &nn::MLP::fc2, docs::mlp_fc2);
}

// --- attention --------------------------------------------------------------------------
nn::MultiheadAttentionOptions attention_options(std::int64_t embed_dim, std::int64_t num_heads,
                                                double dropout, bool bias, bool add_bias_kv,
                                                bool add_zero_attn,
                                                std::optional<std::int64_t> kdim,
                                                std::optional<std::int64_t> vdim, bool batch_first,
                                                std::optional<std::int64_t> head_size) {
  return nn::MultiheadAttentionOptions(embed_dim, num_heads)
      .with_dropout(dropout)
      .with_bias(bias)
      .with_add_bias_kv(add_bias_kv)
      .with_add_zero_attn(add_zero_attn)
      .with_kdim(kdim.value_or(0))
      .with_vdim(vdim.value_or(0))
      .with_batch_first(batch_first)
      .with_head_size(head_size.value_or(0));
}

// The constructor keywords of torch.nn.MultiheadAttention (plus head_size and generator).
template <typename Layer, typename Class>
void attention_init(Class& cls, const char* doc) {
  cls.def(py::init([](std::int64_t e, std::int64_t h, double dropout, bool bias, bool add_bias_kv,
                      bool add_zero_attn, std::optional<std::int64_t> kdim,
                      std::optional<std::int64_t> vdim, bool batch_first,
                      std::optional<std::int64_t> head_size, Generator* g) {
            return std::make_shared<Layer>(
                attention_options(e, h, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
                                  batch_first, head_size),
                g);
          }),
          py::arg("embed_dim"), py::arg("num_heads"), py::arg("dropout") = 0.0,
          py::arg("bias") = true, py::arg("add_bias_kv") = false, py::arg("add_zero_attn") = false,
          py::arg("kdim") = py::none(), py::arg("vdim") = py::none(),
          py::arg("batch_first") = false, py::kw_only(), py::arg("head_size") = py::none(),
          py::arg("generator") = nullptr, doc);
}

py::dict head_weights_dict(const nn::HeadWeights& w) {
  py::dict d;
  const std::pair<const char*, const Tensor*> items[] = {
      {"w_q", &w.w_q},       {"w_k", &w.w_k},       {"w_v", &w.w_v},
      {"b_q", &w.b_q},       {"b_k", &w.b_k},       {"b_v", &w.b_v},
      {"bias_k", &w.bias_k}, {"bias_v", &w.bias_v}, {"w_o", &w.w_o}};
  for (const auto& [name, t] : items) d[name] = tensor_or_none(*t);
  return d;
}

// AttentionLayer: what MultiheadAttention and HeadwiseMultiheadAttention share.
void bind_attention_layer(py::module_& m) {
  py::class_<nn::AttentionLayer, nn::Module, std::shared_ptr<nn::AttentionLayer>>(
      m, "AttentionLayer", "What MultiheadAttention and HeadwiseMultiheadAttention share")
      .def(
          "forward",
          [](const nn::AttentionLayer& s, const Tensor& q, const Tensor& k, const Tensor& v,
             const std::optional<Tensor>& key_padding_mask, bool need_weights,
             const std::optional<Tensor>& attn_mask, bool average_attn_weights, bool is_causal) {
            nn::MultiheadAttentionArgs args;
            args.with_key_padding_mask(optional_tensor(key_padding_mask))
                .with_need_weights(need_weights)
                .with_attn_mask(optional_tensor(attn_mask))
                .with_average_attn_weights(average_attn_weights)
                .with_is_causal(is_causal);
            const auto out = s.forward(q, k, v, args);
            return py::make_tuple(out.output, tensor_or_none(out.weights));
          },
          py::arg("query"), py::arg("key"), py::arg("value"),
          py::arg("key_padding_mask") = py::none(), py::arg("need_weights") = true,
          py::arg("attn_mask") = py::none(), py::arg("average_attn_weights") = true,
          py::arg("is_causal") = false, docs::attention_forward)
      .def_property_readonly(
          "embed_dim", [](const nn::AttentionLayer& s) { return s.options().embed_dim; },
          docs::attention_embed_dim)
      .def_property_readonly(
          "num_heads", [](const nn::AttentionLayer& s) { return s.options().num_heads; },
          docs::attention_num_heads)
      .def_property_readonly(
          "head_dim", [](const nn::AttentionLayer& s) { return s.options().head_dim(); },
          docs::attention_head_dim)
      .def_property_readonly(
          "batch_first", [](const nn::AttentionLayer& s) { return s.options().batch_first; },
          docs::attention_batch_first)
      .def_property_readonly(
          "dropout", [](const nn::AttentionLayer& s) { return s.options().dropout; },
          docs::attention_dropout)
      .def(
          "head_weights",
          [](const nn::AttentionLayer& s, std::int64_t h) {
            return head_weights_dict(s.head_weights(h));
          },
          py::arg("head"), docs::attention_head_weights)
      .def(
          "head_grads",
          [](const nn::AttentionLayer& s, std::int64_t h) {
            return head_weights_dict(s.head_grads(h));
          },
          py::arg("head"), docs::attention_head_grads)
      .def("set_head_gates", &nn::AttentionLayer::set_head_gates, py::arg("gates"),
           docs::attention_set_head_gates)
      .def("clear_head_gates", &nn::AttentionLayer::clear_head_gates,
           docs::attention_clear_head_gates)
      .def_property_readonly(
          "head_gates", [](const nn::AttentionLayer& s) { return tensor_or_none(s.head_gates()); },
          docs::attention_head_gates);
}

// MultiheadAttention.
void bind_multihead_attention(py::module_& m) {
  py::class_<nn::MultiheadAttention, nn::AttentionLayer, std::shared_ptr<nn::MultiheadAttention>>
      mha(m, "MultiheadAttention",
          "torch.nn.MultiheadAttention: options, names, initialization and results");
  attention_init<nn::MultiheadAttention>(mha, docs::attention_init);
  mha.def_property_readonly(
         "in_proj_weight",
         [](const nn::MultiheadAttention& s) { return tensor_or_none(s.in_proj_weight); },
         docs::mha_in_proj_weight)
      .def_property_readonly(
          "q_proj_weight",
          [](const nn::MultiheadAttention& s) { return tensor_or_none(s.q_proj_weight); },
          docs::mha_q_proj_weight)
      .def_property_readonly(
          "k_proj_weight",
          [](const nn::MultiheadAttention& s) { return tensor_or_none(s.k_proj_weight); },
          docs::mha_k_proj_weight)
      .def_property_readonly(
          "v_proj_weight",
          [](const nn::MultiheadAttention& s) { return tensor_or_none(s.v_proj_weight); },
          docs::mha_v_proj_weight)
      .def_property_readonly(
          "in_proj_bias",
          [](const nn::MultiheadAttention& s) { return tensor_or_none(s.in_proj_bias); },
          docs::mha_in_proj_bias)
      .def_property_readonly(
          "bias_k", [](const nn::MultiheadAttention& s) { return tensor_or_none(s.bias_k); },
          docs::mha_bias_k)
      .def_property_readonly(
          "bias_v", [](const nn::MultiheadAttention& s) { return tensor_or_none(s.bias_v); },
          docs::mha_bias_v)
      .def_readonly("out_proj", &nn::MultiheadAttention::out_proj, docs::mha_out_proj)
      .def("reset_parameters", &nn::MultiheadAttention::reset_parameters,
           py::arg("generator") = nullptr, docs::mha_reset_parameters);
}

// AttentionHead and HeadwiseMultiheadAttention.
void bind_headwise_attention(py::module_& m) {
  py::class_<nn::AttentionHead, nn::Module, std::shared_ptr<nn::AttentionHead>>(
      m, "AttentionHead", docs::attention_head);
  py::class_<nn::HeadwiseMultiheadAttention, nn::AttentionLayer,
             std::shared_ptr<nn::HeadwiseMultiheadAttention>>
      hw(m, "HeadwiseMultiheadAttention",
         "MultiheadAttention built from one AttentionHead module per head");
  attention_init<nn::HeadwiseMultiheadAttention>(hw, docs::attention_init);
  hw.def_property_readonly(
        "heads",
        [](const nn::HeadwiseMultiheadAttention& s) {
          return std::vector<std::shared_ptr<nn::AttentionHead>>(s.heads->begin(), s.heads->end());
        },
        docs::headwise_heads)
      .def_readonly("out_proj", &nn::HeadwiseMultiheadAttention::out_proj, docs::headwise_out_proj)
      .def("to_fused", &nn::HeadwiseMultiheadAttention::to_fused, docs::headwise_to_fused)
      .def_static(
          "from_fused",
          [](const nn::MultiheadAttention& f) {
            return nn::HeadwiseMultiheadAttention::from_fused(f);
          },
          py::arg("fused"), docs::headwise_from_fused);
}

// --- transformer layers and stacks --------------------------------------------------------
nn::TransformerLayerOptions layer_options(std::int64_t d_model, std::int64_t nhead, std::int64_t ff,
                                          double dropout, const std::string& activation, double eps,
                                          bool batch_first, bool norm_first, bool bias,
                                          bool per_head, std::optional<std::int64_t> head_dim) {
  return nn::TransformerLayerOptions(d_model, nhead)
      .with_dim_feedforward(ff)
      .with_dropout(dropout)
      .with_activation(to_activation(activation))
      .with_layer_norm_eps(eps)
      .with_batch_first(batch_first)
      .with_norm_first(norm_first)
      .with_bias(bias)
      .with_per_head(per_head)
      .with_head_dim(head_dim.value_or(0));
}

template <typename Layer, typename Class>
void layer_init(Class& cls, const char* doc) {
  cls.def(
      py::init([](std::int64_t d_model, std::int64_t nhead, std::int64_t ff, double dropout,
                  const std::string& activation, double eps, bool batch_first, bool norm_first,
                  bool bias, bool per_head, std::optional<std::int64_t> head_dim, Generator* g) {
        return std::make_shared<Layer>(
            layer_options(d_model, nhead, ff, dropout, activation, eps, batch_first, norm_first,
                          bias, per_head, head_dim),
            g);
      }),
      py::arg("d_model"), py::arg("nhead"), py::arg("dim_feedforward") = 2048,
      py::arg("dropout") = 0.1, py::arg("activation") = "relu", py::arg("layer_norm_eps") = 1e-5,
      py::arg("batch_first") = false, py::arg("norm_first") = false, py::arg("bias") = true,
      py::kw_only(), py::arg("per_head") = false, py::arg("head_dim") = py::none(),
      py::arg("generator") = nullptr, doc);
}

// TransformerEncoderLayer and TransformerDecoderLayer.
void bind_transformer_layers(py::module_& m) {
  py::class_<nn::TransformerEncoderLayer, nn::Module, std::shared_ptr<nn::TransformerEncoderLayer>>
      enc(m, "TransformerEncoderLayer", docs::encoder_layer);
  layer_init<nn::TransformerEncoderLayer>(enc, docs::layer_init);
  enc.def(
         "forward",
         [](const nn::TransformerEncoderLayer& s, const Tensor& src,
            const std::optional<Tensor>& mask, const std::optional<Tensor>& kpm, bool is_causal) {
           return s.forward(src, optional_tensor(mask), optional_tensor(kpm), is_causal);
         },
         py::arg("src"), py::arg("src_mask") = py::none(),
         py::arg("src_key_padding_mask") = py::none(), py::arg("is_causal") = false,
         docs::encoder_layer_forward)
      .def_readonly("self_attn", &nn::TransformerEncoderLayer::self_attn, docs::layer_self_attn)
      .def_readonly("linear1", &nn::TransformerEncoderLayer::linear1, docs::layer_linear1)
      .def_readonly("linear2", &nn::TransformerEncoderLayer::linear2, docs::layer_linear2)
      .def_readonly("norm1", &nn::TransformerEncoderLayer::norm1, docs::layer_norm1)
      .def_readonly("norm2", &nn::TransformerEncoderLayer::norm2, docs::layer_norm2);

  py::class_<nn::TransformerDecoderLayer, nn::Module, std::shared_ptr<nn::TransformerDecoderLayer>>
      dec(m, "TransformerDecoderLayer", docs::decoder_layer);
  layer_init<nn::TransformerDecoderLayer>(dec, docs::layer_init);
  dec.def(
         "forward",
         [](const nn::TransformerDecoderLayer& s, const Tensor& tgt, const Tensor& memory,
            const std::optional<Tensor>& tgt_mask, const std::optional<Tensor>& memory_mask,
            const std::optional<Tensor>& tgt_kpm, const std::optional<Tensor>& memory_kpm,
            bool tgt_is_causal, bool memory_is_causal) {
           return s.forward(tgt, memory, optional_tensor(tgt_mask), optional_tensor(memory_mask),
                            optional_tensor(tgt_kpm), optional_tensor(memory_kpm), tgt_is_causal,
                            memory_is_causal);
         },
         py::arg("tgt"), py::arg("memory"), py::arg("tgt_mask") = py::none(),
         py::arg("memory_mask") = py::none(), py::arg("tgt_key_padding_mask") = py::none(),
         py::arg("memory_key_padding_mask") = py::none(), py::arg("tgt_is_causal") = false,
         py::arg("memory_is_causal") = false, docs::decoder_layer_forward)
      .def_readonly("self_attn", &nn::TransformerDecoderLayer::self_attn, docs::layer_self_attn)
      .def_readonly("multihead_attn", &nn::TransformerDecoderLayer::multihead_attn,
                    docs::layer_multihead_attn)
      .def_readonly("linear1", &nn::TransformerDecoderLayer::linear1, docs::layer_linear1)
      .def_readonly("linear2", &nn::TransformerDecoderLayer::linear2, docs::layer_linear2);
}

// TransformerEncoder and TransformerDecoder: stacks of layers.
void bind_transformer_stacks(py::module_& m) {
  // torch's TransformerEncoder(encoder_layer, num_layers, norm): the layers are built from
  // encoder_layer's options, each initialized anew (torch deep-copies one layer); `norm`
  // given means a final LayerNorm (ones and zeros).
  py::class_<nn::TransformerEncoder, nn::Module, std::shared_ptr<nn::TransformerEncoder>>(
      m, "TransformerEncoder", docs::encoder)
      .def(py::init([](const nn::TransformerEncoderLayer& layer, std::int64_t n,
                       const py::object& norm, Generator* g) {
             return std::make_shared<nn::TransformerEncoder>(layer.options(), n, !norm.is_none(),
                                                             g);
           }),
           py::arg("encoder_layer"), py::arg("num_layers"), py::arg("norm") = py::none(),
           py::kw_only(), py::arg("generator") = nullptr, docs::encoder_init)
      .def(
          "forward",
          [](const nn::TransformerEncoder& s, const Tensor& src, const std::optional<Tensor>& mask,
             const std::optional<Tensor>& kpm, bool is_causal) {
            return s.forward(src, optional_tensor(mask), optional_tensor(kpm), is_causal);
          },
          py::arg("src"), py::arg("mask") = py::none(),
          py::arg("src_key_padding_mask") = py::none(), py::arg("is_causal") = false,
          docs::encoder_forward)
      .def_property_readonly(
          "layers",
          [](const nn::TransformerEncoder& s) {
            return std::vector<std::shared_ptr<nn::TransformerEncoderLayer>>(s.layers->begin(),
                                                                             s.layers->end());
          },
          docs::encoder_layers)
      .def_readonly("norm", &nn::TransformerEncoder::norm, docs::stack_norm);
  py::class_<nn::TransformerDecoder, nn::Module, std::shared_ptr<nn::TransformerDecoder>>(
      m, "TransformerDecoder", docs::decoder)
      .def(py::init([](const nn::TransformerDecoderLayer& layer, std::int64_t n,
                       const py::object& norm, Generator* g) {
             return std::make_shared<nn::TransformerDecoder>(layer.options(), n, !norm.is_none(),
                                                             g);
           }),
           py::arg("decoder_layer"), py::arg("num_layers"), py::arg("norm") = py::none(),
           py::kw_only(), py::arg("generator") = nullptr, docs::decoder_init)
      .def(
          "forward",
          [](const nn::TransformerDecoder& s, const Tensor& tgt, const Tensor& memory,
             const std::optional<Tensor>& tgt_mask, const std::optional<Tensor>& memory_mask,
             const std::optional<Tensor>& tgt_kpm, const std::optional<Tensor>& memory_kpm,
             bool tgt_is_causal, bool memory_is_causal) {
            return s.forward(tgt, memory, optional_tensor(tgt_mask), optional_tensor(memory_mask),
                             optional_tensor(tgt_kpm), optional_tensor(memory_kpm), tgt_is_causal,
                             memory_is_causal);
          },
          py::arg("tgt"), py::arg("memory"), py::arg("tgt_mask") = py::none(),
          py::arg("memory_mask") = py::none(), py::arg("tgt_key_padding_mask") = py::none(),
          py::arg("memory_key_padding_mask") = py::none(), py::arg("tgt_is_causal") = false,
          py::arg("memory_is_causal") = false, docs::decoder_forward)
      .def_property_readonly(
          "layers",
          [](const nn::TransformerDecoder& s) {
            return std::vector<std::shared_ptr<nn::TransformerDecoderLayer>>(s.layers->begin(),
                                                                             s.layers->end());
          },
          docs::decoder_layers)
      .def_readonly("norm", &nn::TransformerDecoder::norm, docs::stack_norm);
}

// --- toy models -----------------------------------------------------------------------
// The options every toy model shares, as keywords.
template <typename Options>
void shared_model_options(Options& o, std::int64_t d_model, std::int64_t nhead,
                          std::int64_t num_layers, std::int64_t ff, double dropout,
                          const std::string& activation, double eps, bool norm_first, bool bias,
                          bool per_head) {
  o.d_model = d_model;
  o.nhead = nhead;
  if constexpr (requires { o.num_layers; }) o.num_layers = num_layers;
  o.dim_feedforward = ff;
  o.dropout = dropout;
  o.activation = to_activation(activation);
  o.layer_norm_eps = eps;
  o.norm_first = norm_first;
  o.bias = bias;
  o.per_head = per_head;
}

// GPT: the decoder-only toy transformer.
void bind_gpt(py::module_& m) {
  py::class_<nn::GPT, nn::Module, std::shared_ptr<nn::GPT>>(m, "GPT",
                                                            "A decoder-only toy transformer")
      .def(py::init([](std::int64_t vocab_size, std::int64_t max_len, std::int64_t d_model,
                       std::int64_t nhead, std::int64_t num_layers, std::int64_t ff, double dropout,
                       const std::string& activation, double eps, bool norm_first, bool bias,
                       bool per_head, std::int64_t head_dim, std::int64_t input_dim, bool causal,
                       bool positions, Generator* g) {
             nn::GPTOptions o;
             o.vocab_size = vocab_size;
             o.max_len = max_len;
             shared_model_options(o, d_model, nhead, num_layers, ff, dropout, activation, eps,
                                  norm_first, bias, per_head);
             o.head_dim = head_dim;
             o.input_dim = input_dim;
             o.causal = causal;
             o.positions = positions;
             return std::make_shared<nn::GPT>(o, g);
           }),
           py::arg("vocab_size"), py::arg("max_len"), py::arg("d_model") = 64, py::arg("nhead") = 4,
           py::arg("num_layers") = 2, py::arg("dim_feedforward") = 0, py::arg("dropout") = 0.0,
           py::arg("activation") = "gelu", py::arg("layer_norm_eps") = 1e-5,
           py::arg("norm_first") = true, py::arg("bias") = true, py::arg("per_head") = false,
           py::arg("head_dim") = 0, py::arg("input_dim") = 0, py::arg("causal") = true,
           py::arg("positions") = true, py::kw_only(), py::arg("generator") = nullptr,
           docs::gpt_init)
      .def(
          "forward",
          [](const nn::GPT& s, const Tensor& input, const std::optional<Tensor>& kpm) {
            return s.forward(input, optional_tensor(kpm));
          },
          py::arg("input"), py::arg("key_padding_mask") = py::none(), docs::gpt_forward)
      .def_readonly("token_embedding", &nn::GPT::token_embedding, docs::gpt_token_embedding)
      .def_readonly("input_projection", &nn::GPT::input_projection, docs::gpt_input_projection)
      .def_readonly("position_embedding", &nn::GPT::position_embedding,
                    docs::gpt_position_embedding)
      .def_property_readonly(
          "layers",
          [](const nn::GPT& s) {
            return std::vector<std::shared_ptr<nn::TransformerEncoderLayer>>(s.layers->begin(),
                                                                             s.layers->end());
          },
          docs::gpt_layers)
      .def_readonly("norm", &nn::GPT::norm, docs::gpt_norm)
      .def_readonly("lm_head", &nn::GPT::lm_head, docs::gpt_lm_head)
      .def_property_readonly(
          "vocab_size", [](const nn::GPT& s) { return s.options().vocab_size; },
          docs::gpt_vocab_size)
      .def_property_readonly(
          "max_len", [](const nn::GPT& s) { return s.options().max_len; }, docs::gpt_max_len)
      .def_property_readonly(
          "d_model", [](const nn::GPT& s) { return s.options().d_model; }, docs::gpt_d_model)
      .def_property_readonly(
          "nhead", [](const nn::GPT& s) { return s.options().nhead; }, docs::gpt_nhead)
      .def_property_readonly(
          "num_layers", [](const nn::GPT& s) { return s.options().num_layers; },
          docs::gpt_num_layers)
      .def_property_readonly(
          "per_head", [](const nn::GPT& s) { return s.options().per_head; }, docs::gpt_per_head);
}

// EncoderClassifier.
void bind_encoder_classifier(py::module_& m) {
  py::class_<nn::EncoderClassifier, nn::Module, std::shared_ptr<nn::EncoderClassifier>>(
      m, "EncoderClassifier", "An encoder over tokens, mean-pooled, with a classification head")
      .def(py::init([](std::int64_t vocab_size, std::int64_t max_len, std::int64_t num_classes,
                       std::int64_t d_model, std::int64_t nhead, std::int64_t num_layers,
                       std::int64_t ff, double dropout, const std::string& activation, double eps,
                       bool norm_first, bool bias, bool per_head, Generator* g) {
             nn::EncoderClassifierOptions o;
             o.vocab_size = vocab_size;
             o.max_len = max_len;
             o.num_classes = num_classes;
             shared_model_options(o, d_model, nhead, num_layers, ff, dropout, activation, eps,
                                  norm_first, bias, per_head);
             return std::make_shared<nn::EncoderClassifier>(o, g);
           }),
           py::arg("vocab_size"), py::arg("max_len"), py::arg("num_classes"),
           py::arg("d_model") = 64, py::arg("nhead") = 4, py::arg("num_layers") = 2,
           py::arg("dim_feedforward") = 0, py::arg("dropout") = 0.0, py::arg("activation") = "gelu",
           py::arg("layer_norm_eps") = 1e-5, py::arg("norm_first") = true, py::arg("bias") = true,
           py::arg("per_head") = false, py::kw_only(), py::arg("generator") = nullptr,
           docs::encoder_classifier_init)
      .def(
          "forward",
          [](const nn::EncoderClassifier& s, const Tensor& tokens,
             const std::optional<Tensor>& kpm) { return s.forward(tokens, optional_tensor(kpm)); },
          py::arg("tokens"), py::arg("key_padding_mask") = py::none(),
          docs::encoder_classifier_forward);
}

// FusionClassifier: text and tabular features fused by cross-attention.
void bind_fusion_classifier(py::module_& m) {
  py::class_<nn::FusionClassifier, nn::Module, std::shared_ptr<nn::FusionClassifier>>(
      m, "FusionClassifier",
      "Text tokens and tabular features fused by cross-attention, then classified")
      .def(py::init([](std::int64_t vocab_size, std::int64_t max_len, std::int64_t num_features,
                       std::int64_t num_classes, const std::string& mode, std::int64_t d_model,
                       std::int64_t nhead, std::int64_t num_layers, std::int64_t num_tabular_layers,
                       std::int64_t ff, double dropout, const std::string& activation, double eps,
                       bool norm_first, bool bias, bool per_head, Generator* g) {
             nn::FusionClassifierOptions o;
             using Mode = nn::FusionClassifierOptions::Mode;
             if (mode != "fusion" && mode != "text_only" && mode != "tabular_only")
               throw ValueError("FusionClassifier: mode '" + mode +
                                "' is not fusion, text_only or tabular_only");
             o.mode = mode == "fusion"      ? Mode::fusion
                      : mode == "text_only" ? Mode::text_only
                                            : Mode::tabular_only;
             o.vocab_size = vocab_size;
             o.max_len = max_len;
             o.num_features = num_features;
             o.num_classes = num_classes;
             o.num_tabular_layers = num_tabular_layers;
             shared_model_options(o, d_model, nhead, num_layers, ff, dropout, activation, eps,
                                  norm_first, bias, per_head);
             return std::make_shared<nn::FusionClassifier>(o, g);
           }),
           py::arg("vocab_size"), py::arg("max_len"), py::arg("num_features"),
           py::arg("num_classes"), py::arg("mode") = "fusion", py::arg("d_model") = 64,
           py::arg("nhead") = 4, py::arg("num_layers") = 2, py::arg("num_tabular_layers") = 1,
           py::arg("dim_feedforward") = 0, py::arg("dropout") = 0.0, py::arg("activation") = "gelu",
           py::arg("layer_norm_eps") = 1e-5, py::arg("norm_first") = true, py::arg("bias") = true,
           py::arg("per_head") = false, py::kw_only(), py::arg("generator") = nullptr,
           docs::fusion_classifier_init)
      .def(
          "forward",
          [](const nn::FusionClassifier& s, const Tensor& tokens, const std::optional<Tensor>& kpm,
             const std::optional<Tensor>& features) {
            return s.forward(tokens, optional_tensor(kpm), optional_tensor(features));
          },
          py::arg("tokens"), py::arg("key_padding_mask") = py::none(),
          py::arg("features") = py::none(), docs::fusion_classifier_forward);
}

// EncoderDecoder: the sequence-to-sequence toy transformer.
void bind_encoder_decoder(py::module_& m) {
  py::class_<nn::EncoderDecoder, nn::Module, std::shared_ptr<nn::EncoderDecoder>>(
      m, "EncoderDecoder", "An encoder-decoder toy transformer (sequence to sequence)")
      .def(py::init([](std::int64_t src_vocab, std::int64_t max_src_len, std::int64_t tgt_vocab,
                       std::int64_t max_tgt_len, std::int64_t d_model, std::int64_t nhead,
                       std::int64_t enc_layers, std::int64_t dec_layers, std::int64_t ff,
                       double dropout, const std::string& activation, double eps, bool norm_first,
                       bool bias, bool per_head, Generator* g) {
             nn::EncoderDecoderOptions o;
             o.src_vocab_size = src_vocab;
             o.max_src_len = max_src_len;
             o.tgt_vocab_size = tgt_vocab;
             o.max_tgt_len = max_tgt_len;
             o.num_encoder_layers = enc_layers;
             o.num_decoder_layers = dec_layers;
             shared_model_options(o, d_model, nhead, 0, ff, dropout, activation, eps, norm_first,
                                  bias, per_head);
             return std::make_shared<nn::EncoderDecoder>(o, g);
           }),
           py::arg("src_vocab_size"), py::arg("max_src_len"), py::arg("tgt_vocab_size") = 0,
           py::arg("max_tgt_len") = 0, py::arg("d_model") = 64, py::arg("nhead") = 4,
           py::arg("num_encoder_layers") = 2, py::arg("num_decoder_layers") = 2,
           py::arg("dim_feedforward") = 0, py::arg("dropout") = 0.0, py::arg("activation") = "gelu",
           py::arg("layer_norm_eps") = 1e-5, py::arg("norm_first") = true, py::arg("bias") = true,
           py::arg("per_head") = false, py::kw_only(), py::arg("generator") = nullptr,
           docs::encoder_decoder_init)
      .def(
          "forward",
          [](const nn::EncoderDecoder& s, const Tensor& src, const Tensor& tgt,
             const std::optional<Tensor>& src_kpm, const std::optional<Tensor>& tgt_kpm) {
            return s.forward(src, tgt, optional_tensor(src_kpm), optional_tensor(tgt_kpm));
          },
          py::arg("src"), py::arg("tgt"), py::arg("src_key_padding_mask") = py::none(),
          py::arg("tgt_key_padding_mask") = py::none(), docs::encoder_decoder_forward)
      .def(
          "encode",
          [](const nn::EncoderDecoder& s, const Tensor& src, const std::optional<Tensor>& kpm) {
            return s.encode(src, optional_tensor(kpm));
          },
          py::arg("src"), py::arg("src_key_padding_mask") = py::none(),
          docs::encoder_decoder_encode);
}

}  // namespace

void bind_nn(py::module_& m) {
  bind_module(m);
  bind_module_tree(m);
  bind_module_training(m);
  bind_module_devices(m);
  bind_module_state(m);
  bind_hook_point(m);
  bind_linear(m);
  bind_unary_layers(m);
  bind_mlp(m);
  bind_attention_layer(m);
  bind_multihead_attention(m);
  bind_headwise_attention(m);
  bind_transformer_layers(m);
  bind_transformer_stacks(m);
  bind_gpt(m);
  bind_encoder_classifier(m);
  bind_fusion_classifier(m);
  bind_encoder_decoder(m);
}

}  // namespace headgrad::python
