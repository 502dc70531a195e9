// Direct logit attribution and the logit lens (see inspect/logit_attribution.hpp).
#include "headgrad/inspect/logit_attribution.hpp"

#include <numeric>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/hooks.hpp"
#include "headgrad/inspect/patching.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {

namespace {

using indexing::Slice;

std::string layer_name(std::size_t l) { return "layers." + std::to_string(l); }

// The mean over examples of sum_e (c - mean_e(c)) * direction: c (N, E) or (E), direction
// (N, E), float64.
double contribution(const Tensor& c, const Tensor& direction) {
  const Tensor centred = sub(c, mean(c, {c.dim() - 1}, /*keepdim=*/true));
  return mean(sum(mul(centred, direction), {1})).item();
}

}  // namespace

double LogitAttribution::sum() const { return std::accumulate(values.begin(), values.end(), 0.0); }

namespace {

// What direct_logit_attribution checks first: a pre-norm model without active dropout.
void check_attributable(const nn::GPT& model, const char* op) {
  const nn::GPTOptions& o = model.options();
  if (!o.norm_first || !model.norm)
    throw ValueError(std::string(op) + ": the model is post-norm (norm_first false): its layers " +
                     "normalise the residual stream, which then is no sum of components");
  if (model.is_training() && o.dropout > 0)
    throw ValueError(std::string(op) + ": the model is in training mode with dropout " +
                     std::to_string(o.dropout) + "; call eval() first");
}

// The run cached at the points the attribution sums: embed, and per layer the heads'
// results, the MLP's output and the residual stream after it.
CachedRun attribution_run(const nn::GPT& model, const Tensor& input) {
  const std::size_t layers = model.layers->size();
  CacheOptions options;
  options.names = {"embed"};
  for (std::size_t l = 0; l < layers; ++l) {
    options.names.push_back(layer_name(l) + ".self_attn.result");
    options.names.push_back(layer_name(l) + ".mlp_out");
    options.names.push_back(layer_name(l) + ".resid_post");
  }
  return run_with_cache(
      model, [&] { return model.forward(input); }, options);
}

}  // namespace

LogitAttribution direct_logit_attribution(const nn::GPT& model, const Tensor& input,
                                          const Tensor& position, const Tensor& answer,
                                          const Tensor& wrong) {
  check_attributable(model, "inspect::direct_logit_attribution");
  NoGradGuard no_grad;
  const std::size_t layers = model.layers->size();
  const CachedRun run = attribution_run(model, input);
  LogitAttribution out;
  const Tensor logits = run.output;
  const std::int64_t n = logits.size(0);
  const Tensor rows = arange(static_cast<double>(n), TensorOptions(kInt64).device(logits.device()));
  // Checks the shapes and the token ids before they index anything below.
  out.logit_difference = logit_difference(logits, position, answer, wrong).to(kFloat64).item();
  // At the scored positions, float64: a (N, T, E) tensor -> (N, E).
  auto at = [&](const Tensor& t) { return t.index({rows, position}).to(kFloat64); };
  // The final residual stream and norm's frozen scale.
  Tensor x = layers > 0 ? at(run.cache.get(layer_name(layers - 1) + ".resid_post"))
                        : at(run.cache.get("embed"));
  const Tensor centred = sub(x, mean(x, {1}, true));
  const Tensor sigma = sqrt(add(mean(mul(centred, centred), {1}, true), model.norm->eps()));
  const Tensor w_u = model.lm_head->weight.to(kFloat64);    // (V, E)
  Tensor u = sub(w_u.index({answer}), w_u.index({wrong}));  // (N, E)
  Tensor direction = div(u, sigma);
  if (model.norm->weight.defined()) direction = mul(direction, model.norm->weight.to(kFloat64));

  auto push = [&](const std::string& label, double value) {
    out.labels.push_back(label);
    out.values.push_back(value);
  };
  push("embed", contribution(at(run.cache.get("embed")), direction));
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string attn = layer_name(l) + ".self_attn";
    // result (N, H, T, E) at [n, :, position[n]] -> (N, H, E)
    const Tensor result =
        run.cache.get(attn + ".result").index({rows, Slice(), position}).to(kFloat64);
    std::vector<double> heads;
    for (std::int64_t h = 0; h < result.size(1); ++h) {
      heads.push_back(contribution(select(result, 1, h), direction));
      push(attn + ".head" + std::to_string(h), heads.back());
    }
    out.heads.push_back(heads);
    if (model.options().bias)
      push(attn + ".bias",
           contribution(unsqueeze(model.parameter(attn + ".out_proj.bias").to(kFloat64), 0),
                        direction));
    push(layer_name(l) + ".mlp",
         contribution(at(run.cache.get(layer_name(l) + ".mlp_out")), direction));
  }
  if (model.norm->bias.defined())
    push("norm.bias", mean(sum(mul(u, model.norm->bias.to(kFloat64)), {1})).item());
  return out;
}

LogitLens logit_lens(const nn::GPT& model, const Tensor& input) {
  NoGradGuard no_grad;
  const std::size_t layers = model.layers->size();
  CacheOptions options;
  options.names = {"embed"};
  for (std::size_t l = 0; l < layers; ++l) options.names.push_back(layer_name(l) + ".resid_post");
  const CachedRun run = run_with_cache(
      model, [&] { return model.forward(input); }, options);
  LogitLens lens;
  auto decode = [&](const std::string& stage, const Tensor& residual) {
    const Tensor normed = model.norm ? model.norm->forward(residual) : residual;
    lens.stages.push_back(stage);
    lens.logits.push_back(model.lm_head->forward(normed));
  };
  decode("embed", run.cache.get("embed"));
  for (std::size_t l = 0; l < layers; ++l)
    decode(layer_name(l), run.cache.get(layer_name(l) + ".resid_post"));
  return lens;
}

}  // namespace headgrad::inspect
