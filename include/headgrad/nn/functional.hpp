// nn::functional: the functional forms of the layers, as torch.nn.functional. Attention's
// is the attention op itself (ops/attention.hpp), composed from primitives so that its
// gradient is theirs; the layers run its `edit` callback at their hook points
// (AttentionStage::scores and ::pattern are HookPoint::scores and ::pattern, nn/hooks.hpp).
#pragma once

#include "headgrad/ops/attention.hpp"

namespace headgrad::nn::functional {

using headgrad::AttentionOptions;
using headgrad::AttentionResult;
using headgrad::AttentionStage;
using headgrad::scaled_dot_product_attention;

}  // namespace headgrad::nn::functional
