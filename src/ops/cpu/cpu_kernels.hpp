// CpuKernels: the CPU's implementation of the kernel interface (core/kernels.hpp), one
// instance, installed when the library loads (cpu_kernels.cpp). Each family's kernels are
// defined in src/ops/cpu/<family>_kernels.cpp; the ops reach them through
// kernels_for(device), as they reach the CUDA backend's.
#pragma once

#include "core/kernels.hpp"

namespace headgrad::cpu {

class CpuKernels final : public Kernels {
 public:
  void fill(Tensor& out, double value) override;
  void convert(const Tensor& src, Tensor& dst) override;
  void copy_blocks(const Tensor& src, Tensor& dst, const BlockCopy& copy) override;
  void permute(const Tensor& x, const Shape& perm, Tensor& out) override;
  void expand(const Tensor& x, Tensor& out) override;
  void unary(Unary op, const Tensor& x, Tensor& out, double a, double b) override;
  void unary_backward(Unary op, const Tensor& g, const Tensor& saved, Tensor& dx, double a,
                      double b) override;
  void unary_with_derivative(Unary op, const Tensor& x, Tensor& out, Tensor& derivative) override;
  void binary(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) override;
  void where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) override;
  void logical_not(const Tensor& x, Tensor& out) override;
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) override;
  void softmax_forward(const Tensor& x, std::int64_t outer, std::int64_t dim, std::int64_t inner,
                       bool log, bool safe, Tensor& out) override;
  void softmax_backward(const Tensor& g, const Tensor& y, std::int64_t outer, std::int64_t dim,
                        std::int64_t inner, bool log, bool safe, Tensor& dx) override;
  void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          std::int64_t rows, std::int64_t cols, double eps, Tensor& out,
                          Tensor& mean, Tensor& rstd) override;
  void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& rstd, std::int64_t rows,
                           std::int64_t cols, Tensor& dx, Tensor& dweight, Tensor& dbias) override;
  void reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out) override;
  void max_dim(const Tensor& x, std::int64_t dim, Tensor& values, Tensor& indices) override;
  void max_dim_backward(const Tensor& g, const Tensor& indices, std::int64_t dim,
                        Tensor& dx) override;
  void grouped_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                  double eps, Tensor& out, Tensor& mean, Tensor& rstd) override;
  void grouped_layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd, std::int64_t groups,
                                   std::int64_t rows, std::int64_t cols, Tensor& dx,
                                   Tensor& dweight, Tensor& dbias) override;
  void cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                             const CrossEntropyProblem& problem, Tensor& out, Tensor& lse,
                             Tensor& kept, Tensor& bad_target) override;
  void cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                              const Tensor& targets, const Tensor& kept,
                              const CrossEntropyProblem& problem, Tensor& dlogits) override;
  void mse_forward(const Tensor& a, const Tensor& b, const Shape& shape, Reduction reduction,
                   Tensor& out) override;
  void mse_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Shape& shape,
                    Reduction reduction, Tensor& da, Tensor& db) override;
  void matmul(const Tensor& a, const Tensor& b, const detail::MatmulPlan& plan,
              Tensor& out) override;
  void matmul_backward(const Tensor& dc, const Tensor& a, const Tensor& b,
                       const detail::MatmulPlan& plan, Tensor& da, Tensor& db) override;
  void linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const LinearProblem& problem, Tensor& y) override;
  void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                       const LinearProblem& problem, Tensor& dx, Tensor& dweight,
                       Tensor& dbias) override;
  void index_select(const Tensor& x, std::int64_t outer, std::int64_t dim, std::int64_t inner,
                    const Tensor& index, Tensor& out) override;
  void index_add(const Tensor& g, std::int64_t outer, std::int64_t dim, std::int64_t inner,
                 const Tensor& index, Tensor& dx) override;
  void one_hot(const Tensor& indices, std::int64_t classes, Tensor& out) override;
  void check_index_range(const Tensor& index, std::int64_t limit, Tensor& bad) override;
  void dropout_mask(Generator& generator, double p, Tensor& mask) override;
  void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& out) override;
  bool has_fused_attention() const override { return true; }
  void fused_attention_forward(const FusedAttentionProblem& problem, const Tensor& q,
                               const Tensor& k, const Tensor& v, Tensor& weights,
                               Tensor& out) override;
  void fused_attention_backward(const FusedAttentionProblem& problem, const Tensor& q,
                                const Tensor& k, const Tensor& v, const Tensor& weights,
                                const Tensor& dout, const Tensor& dweights, bool accumulate,
                                Tensor& dq, Tensor& dk, Tensor& dv) override;
};

}  // namespace headgrad::cpu
