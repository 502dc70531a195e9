// How heads' gradients relate (see inspect/heads.hpp): cosines between the heads' gradient
// blocks of one model, and two models' projection gradients compared slice by slice.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A gradient block as float64 values on the CPU (empty when there is no gradient).
std::vector<double> values_of(const Tensor& grad) {
  if (!grad.defined()) return {};
  return grad.to(Device::cpu()).to(kFloat64).to_vector<double>();
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// cos(a, b); NaN when either is empty or 0.
double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || a.size() != b.size()) return kNaN;
  const double na = std::sqrt(dot(a, a)), nb = std::sqrt(dot(b, b));
  return na > 0 && nb > 0 ? dot(a, b) / (na * nb) : kNaN;
}

double ratio(const std::vector<double>& a, const std::vector<double>& b) {
  const double nb = std::sqrt(dot(b, b));
  return nb > 0 ? std::sqrt(dot(a, a)) / nb : kNaN;
}

std::vector<std::vector<double>> cosine_matrix(const std::vector<std::vector<double>>& blocks) {
  std::vector<std::vector<double>> out(blocks.size(), std::vector<double>(blocks.size()));
  for (std::size_t i = 0; i < blocks.size(); ++i)
    for (std::size_t j = 0; j < blocks.size(); ++j) out[i][j] = cosine(blocks[i], blocks[j]);
  return out;
}

// One layer's projection gradients, whole: W_q, W_k, W_v (H*d, E) from the heads' row
// blocks and W_o (E, H*d) from their column blocks.
struct ProjectionGrads {
  Tensor w_q, w_k, w_v, w_o;
};

ProjectionGrads projection_grads(const nn::AttentionLayer& layer, const std::string& name,
                                 const char* op) {
  std::vector<Tensor> q, k, v, o;
  for (std::int64_t h = 0; h < layer.head_count(); ++h) {
    const nn::HeadWeights g = layer.head_grads(h);
    if (!g.w_q.defined() || !g.w_k.defined() || !g.w_v.defined() || !g.w_o.defined())
      throw ValueError(std::string(op) + ": attention layer '" + name + "' head " +
                       std::to_string(h) +
                       " has no projection gradient: run a backward through it first");
    q.push_back(g.w_q), k.push_back(g.w_k), v.push_back(g.w_v), o.push_back(g.w_o);
  }
  return {cat(q, 0), cat(k, 0), cat(v, 0), cat(o, 1)};
}

// Block `s` of `slices` along `dim`, as values.
std::vector<double> slice_of(const Tensor& grad, std::int64_t dim, std::int64_t s,
                             std::int64_t slices) {
  const std::int64_t width = grad.size(dim) / slices;
  return values_of(narrow(grad, dim, s * width, width));
}

void check_comparable(const ProjectionGrads& a, const ProjectionGrads& b, const std::string& name,
                      std::int64_t slices) {
  const char* op = "compare_grad_slices";
  if (a.w_q.shape() != b.w_q.shape() || a.w_k.shape() != b.w_k.shape() ||
      a.w_v.shape() != b.w_v.shape() || a.w_o.shape() != b.w_o.shape())
    throw ValueError(std::string(op) + ": attention layer '" + name +
                     "' has projections of other shapes in the two models (W_q " +
                     shape_str(a.w_q.shape()) + " against " + shape_str(b.w_q.shape()) +
                     "): compare models of one width");
  const std::int64_t width = a.w_q.size(0);
  if (slices < 1 || width % slices != 0 || a.w_v.size(0) % slices != 0 ||
      a.w_o.size(1) % slices != 0)
    throw ValueError(std::string(op) + ": slices = " + std::to_string(slices) +
                     " must divide the projections' width " + std::to_string(width) + " (layer '" +
                     name + "')");
}

}  // namespace

std::vector<HeadGradCosines> head_grad_cosines(nn::Module& model) {
  NoGradGuard no_grad;
  std::vector<HeadGradCosines> out;
  for (const NamedAttentionLayer& l : attention_layers(model)) {
    std::vector<std::vector<double>> q, k, v, o;
    for (std::int64_t h = 0; h < l.layer->head_count(); ++h) {
      const nn::HeadWeights g = l.layer->head_grads(h);
      q.push_back(values_of(g.w_q)), k.push_back(values_of(g.w_k));
      v.push_back(values_of(g.w_v)), o.push_back(values_of(g.w_o));
    }
    out.push_back({l.name, cosine_matrix(q), cosine_matrix(k), cosine_matrix(v), cosine_matrix(o)});
  }
  return out;
}

std::vector<GradSliceComparison> compare_grad_slices(nn::Module& a, nn::Module& b,
                                                     std::int64_t slices) {
  const char* op = "compare_grad_slices";
  NoGradGuard no_grad;
  const auto layers_a = attention_layers(a), layers_b = attention_layers(b);
  if (layers_a.size() != layers_b.size())
    throw ValueError(std::string(op) + ": the models have " + std::to_string(layers_a.size()) +
                     " and " + std::to_string(layers_b.size()) + " attention layers");
  std::vector<GradSliceComparison> out;
  for (std::size_t l = 0; l < layers_a.size(); ++l) {
    const ProjectionGrads ga = projection_grads(*layers_a[l].layer, layers_a[l].name, op);
    const ProjectionGrads gb = projection_grads(*layers_b[l].layer, layers_b[l].name, op);
    check_comparable(ga, gb, layers_a[l].name, slices);
    for (std::int64_t s = 0; s < slices; ++s) {
      GradSliceComparison c;
      c.layer = static_cast<std::int64_t>(l);
      c.slice = s;
      auto compare = [&](const Tensor& x, const Tensor& y, std::int64_t dim, double& cos,
                         double& r) {
        const auto u = slice_of(x, dim, s, slices), w = slice_of(y, dim, s, slices);
        cos = cosine(u, w);
        r = ratio(u, w);
      };
      compare(ga.w_q, gb.w_q, 0, c.cos_q, c.ratio_q);
      compare(ga.w_k, gb.w_k, 0, c.cos_k, c.ratio_k);
      compare(ga.w_v, gb.w_v, 0, c.cos_v, c.ratio_v);
      compare(ga.w_o, gb.w_o, 1, c.cos_o, c.ratio_o);
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace headgrad::inspect
