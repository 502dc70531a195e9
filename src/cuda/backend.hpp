// The CUDA backend (libheadgrad_cuda.so): the one implementation of cuda::Backend
// (src/core/cuda_backend.hpp, where every function is specified). Its members are defined
// where they belong: devices and memory in src/cuda/runtime.cu, each op's kernels in
// src/cuda/kernels/<op>.cu. src/cuda/runtime.cu also exports the two C entry points the
// loader looks up.
#pragma once

#include "core/cuda_backend.hpp"

namespace headgrad::cuda {

class CudaBackend final : public Backend {
 public:
  int device_count(std::string* why) override;
  std::string device_name(int index) override;
  void synchronize(int index) override;
  CudaMemoryStats memory_stats(int index) override;
  void reset_peak_memory(int index) override;
  void empty_cache() override;
  void* allocate(std::size_t nbytes, int index) override;
  void deallocate(void* ptr, int index) override;
  void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index) override;
  void copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index) override;
  void copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
                             std::size_t nbytes) override;
  void memset_device(void* dst, int byte, std::size_t nbytes, int index) override;
  void fill(Tensor& out, double value) override;
  void convert(const Tensor& src, Tensor& dst) override;
  void copy_strided(const Tensor& src, std::int64_t src_offset, const Shape& src_strides,
                    Tensor& dst, std::int64_t dst_offset, const Shape& dst_strides,
                    const Shape& sizes) override;
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
  void reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out) override;
  void max_dim(const Tensor& x, std::int64_t dim, Tensor& values, Tensor& indices) override;
  void max_dim_backward(const Tensor& g, const Tensor& indices, std::int64_t dim,
                        Tensor& dx) override;
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
  void matmul(const Tensor& a, const Tensor& b, const headgrad::detail::MatmulPlan& plan,
              Tensor& out) override;
  void matmul_backward(const Tensor& dc, const Tensor& a, const Tensor& b,
                       const headgrad::detail::MatmulPlan& plan, Tensor& da, Tensor& db) override;
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
  void adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                   Tensor& max_exp_avg_sq, const AdamHyper& h) override;
  void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                  const SgdHyper& h) override;
  void gemm(const Gemm& g, const Tensor& a, const Tensor& b, Tensor& c) override;
};

}  // namespace headgrad::cuda
