// nn::Linear: y = x W^T + b with PyTorch's layout (weight (out, in), bias (out)) and
// default init (weight kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), and
// bias U(-1/sqrt(in), 1/sqrt(in))).
#pragma once

#include <cstdint>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

struct LinearOptions {
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = true;
  LinearOptions(std::int64_t in, std::int64_t out) : in_features(in), out_features(out) {}
  HEADGRAD_WITH(bias)
};

class Linear : public Module {
 public:
  // Initializes from `generator` (the default generator when null).
  explicit Linear(const LinearOptions& options, Generator* generator = nullptr);
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true,
         Generator* generator = nullptr)
      : Linear(LinearOptions(in_features, out_features).with_bias(bias), generator) {}

  void reset_parameters(Generator* generator = nullptr);
  Tensor forward(const Tensor& x) const;  // x (*, in) -> (*, out)
  Tensor operator()(const Tensor& x) const { return forward(x); }

  const LinearOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<Linear>(options_));
  }
  Tensor weight;  // (out, in)
  Tensor bias;    // (out), undefined without bias

 protected:
  std::string extra_repr() const override;

 private:
  LinearOptions options_;
};

}  // namespace headgrad::nn
