// nn::GPTEnsemble: K GPTs of one architecture trained as one model (torch.func's
// stack_module_state + vmap, for the GPT family).
//
// Every parameter of the members is stacked on a leading model axis: the ensemble's
// "layers.0.linear1.weight" is (K, F, D) where each member's is (F, D); the names are
// GPT's. One forward runs all K models on their own inputs:
//
//   input (K, B, T) token ids (or (K, B, T, input_dim) floats) -> logits (K, B, T, V)
//
// with one grouped op per layer op (ops/matmul.hpp grouped_linear, ops/norm.hpp
// grouped_layer_norm; the fused attention core over the K*B sequences; the embeddings as
// one lookup in the stacked table). The graph has the node count of one model, so the
// per-op cost (dispatch, allocation, autograd bookkeeping) is paid once per step for all
// K, and on a GPU each kernel launch covers every member.
//
// Equal to training alone: on the CPU each grouped op runs the single model's own kernels
// on each member's slice, so member k's logits and gradients are bitwise those of the GPT
// it was built from, at any K (tests/nn/test_gpt_ensemble.cpp). On a GPU the grouped
// products are strided-batched GEMMs: equal up to rounding.
//
// Supported: the GPT family as GPTOptions builds it with norm_first, no dropout, packed
// attention (per_head false): token or float inputs, positions or none, causal or not,
// any head_dim, bias or none, gelu or relu. Other options throw ValueError.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

class GPTEnsemble : public Module {
 public:
  // members: one or more GPTs with equal options, on one device and dtype; their current
  // parameters are copied in (the members are not changed or referenced afterwards).
  explicit GPTEnsemble(const std::vector<const GPT*>& members);

  // input (K, B, T) int64, or (K, B, T, input_dim) floating when input_dim > 0;
  // key_padding_mask (K, B, T) bool (true = padding) or undefined -> logits (K, B, T, V).
  // Member k's slice is what its own GPT computes from input[k].
  Tensor forward(const Tensor& input, const Tensor& key_padding_mask = {}) const;
  Tensor operator()(const Tensor& input, const Tensor& key_padding_mask = {}) const {
    return forward(input, key_padding_mask);
  }

  std::int64_t size() const { return size_; }  // K, the number of members
  const GPTOptions& options() const { return options_; }

  // Member k's parameters under GPT's names, (copies of the slices).
  StateDict member_state_dict(std::int64_t k) const;
  // Member k as an ordinary GPT holding a copy of its current weights, on the ensemble's
  // device and dtype (checkpoint it, inspect it, train it on alone).
  std::shared_ptr<GPT> member(std::int64_t k) const;
  // Keeps the listed members, in that order (members leave: early stop); the others'
  // slices are dropped. Parameters keep their handles (optimizers built on them stay
  // valid; optim::EnsembleAdamW::keep drops their state in step) and lose their gradients.
  void keep(const std::vector<std::int64_t>& members);

 protected:
  std::string extra_repr() const override;

 private:
  // The stacked parameter under a GPT name ("layers.0.norm1.weight"); undefined if the
  // architecture has none (no bias).
  Tensor stacked(const std::string& name) const;
  Tensor embed(const Tensor& input) const;
  Tensor attention(std::int64_t layer, const Tensor& x, const Tensor& key_padding_mask) const;
  std::int64_t check_member(std::int64_t k, const char* what) const;

  GPTOptions options_;
  std::int64_t size_ = 0;
  std::map<std::string, Tensor> by_name_;  // the registered parameters' handles
};

}  // namespace headgrad::nn
