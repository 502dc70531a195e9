// Matrix products through cblas_sgemm / cblas_dgemm on raw pointers.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

// torch.matmul semantics: 1-d @ 1-d is a dot product (0-d result); 2-d @ 2-d is a matrix
// product; a 1-d left operand gets a leading 1 (removed after), a 1-d right operand a
// trailing 1; batch dims (all but the last two) broadcast. Errors read like
// "matmul: (32,64,128) @ (64,128): inner dimensions 128 and 64 differ".
Tensor matmul(const Tensor& a, const Tensor& b);

// y = x @ weight^T + bias, with PyTorch's weight layout: x (*, in), weight (out, in),
// bias (out) or undefined. The leading dims of x are folded into one GEMM.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// G independent linears, one per slice of the leading dim (the layer of a model ensemble,
// nn/gpt_ensemble.hpp): x (G, *, in), weight (G, out, in), bias (G, out) or undefined ->
// (G, *, out), y[g] = linear(x[g], weight[g], bias[g]). On the CPU each group runs linear's
// own kernels, so group g is bitwise linear(x[g], weight[g], bias[g]); on a GPU it is one
// strided-batched GEMM (equal up to rounding).
Tensor grouped_linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace headgrad
