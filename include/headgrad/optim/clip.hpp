// optim::clip_grad_norm_: rescales gradients in place so that their total norm is at most
// max_norm, as torch.nn.utils.clip_grad_norm_. Gradients may have any shape; parameters
// whose grad() is undefined are ignored.
//
//   total = (sum over parameters of ||g_i||_p^p)^(1/p)   computed as the p-norm of the
//                                                        per-parameter p-norms (torch's
//                                                        order); p = inf: max |g|
//   scale = max_norm / (total + 1e-6)
//   g_i  *= scale                                        only when scale < 1
//
// Returns `total`, the norm before clipping (0 when no parameter has a gradient). A
// non-finite total (inf or NaN gradients) scales every gradient by a NaN or zero factor,
// as PyTorch does by default; with error_if_nonfinite it throws ValueError instead and
// leaves the gradients untouched.
#pragma once

#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad::optim {

// norm_type: p > 0, or INFINITY for the max norm. ValueError for max_norm < 0 or NaN and
// for norm_type <= 0 or NaN.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// The total gradient norm that clip_grad_norm_ would compute, without changing anything.
double grad_norm(const std::vector<Tensor>& params, double norm_type = 2.0);

// clip_grad_norm_ for an ensemble (nn/gpt_ensemble.hpp): every parameter is stacked on a
// leading axis of `members` models, and member k's gradients (the k-th slices) are clipped
// on their own to max_norms[k] (0: not clipped). Returns each member's total norm before
// clipping. On the CPU bitwise clip_grad_norm_ of each member's own parameters.
std::vector<double> clip_member_grad_norms_(const std::vector<Tensor>& params,
                                            const std::vector<double>& max_norms,
                                            double norm_type = 2.0);

}  // namespace headgrad::optim
