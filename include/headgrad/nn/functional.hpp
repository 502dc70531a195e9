// nn::functional: the functional forms of the layers, as torch.nn.functional. Attention's
// is the attention op itself (ops/attention.hpp), composed from primitives so that its
// gradient is theirs; the layers pass its scores and pattern through their hook points
// (edit_scores, edit_pattern; nn/hooks.hpp).
#pragma once

#include "headgrad/ops/attention.hpp"

namespace headgrad::nn::functional {

using headgrad::AttentionOptions;
using headgrad::AttentionResult;
using headgrad::scaled_dot_product_attention;

}  // namespace headgrad::nn::functional
