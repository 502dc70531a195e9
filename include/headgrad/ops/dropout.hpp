// Inverted dropout: in training, each element is zeroed with probability p and the rest
// scaled by 1/(1-p); in evaluation (training == false) or with p == 0 it is the identity.
// The mask is drawn from `generator` (or the default generator) so runs are reproducible.
#pragma once

#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad {

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator = nullptr);

}  // namespace headgrad
