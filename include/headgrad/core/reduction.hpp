// How a loss reduces its per-element values (torch.nn.functional's `reduction`): none keeps
// them, mean and sum give a 0-d tensor.
#pragma once

namespace headgrad {

enum class Reduction { none, mean, sum };

}  // namespace headgrad
