// nn::AttentionMask: the attention op's mask type (ops/attention_mask.hpp) under the name
// the attention layers use.
#pragma once

#include "headgrad/ops/attention_mask.hpp"

namespace headgrad::nn {

using headgrad::AttentionMask;
using headgrad::MaskMeaning;

}  // namespace headgrad::nn
