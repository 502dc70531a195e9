// kernels_for (core/kernels.hpp): the CPU's kernels, installed by src/ops/cpu when the
// library loads, or the CUDA backend's, loaded on first use.
#include "core/kernels.hpp"

#include "core/cuda_backend.hpp"
#include "headgrad/core/error.hpp"

namespace headgrad {

namespace {
Kernels* cpu_kernels = nullptr;  // constant-initialized, so set before any use
}  // namespace

void detail::set_cpu_kernels(Kernels* kernels) { cpu_kernels = kernels; }

namespace {
[[noreturn]] void no_fused_attention(const char* which) {
  throw DeviceError(std::string(which) +
                    ": this device has no fused attention kernel (has_fused_attention() is "
                    "false); call multihead_attention, which takes the composed path");
}
}  // namespace

void Kernels::fused_attention_forward(const FusedAttentionProblem&, const Tensor&, const Tensor&,
                                      const Tensor&, Tensor&, Tensor&) {
  no_fused_attention("fused_attention_forward");
}

void Kernels::fused_attention_backward(const FusedAttentionProblem&, const Tensor&, const Tensor&,
                                       const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                       bool, Tensor&, Tensor&, Tensor&) {
  no_fused_attention("fused_attention_backward");
}

Kernels& kernels_for(const Device& device, const char* op) {
  if (device.is_cuda()) return cuda::backend(op);
  if (cpu_kernels == nullptr)
    throw Error(std::string(op) +
                ": the CPU kernels are not installed yet (an op ran while "
                "libheadgrad was still loading)");
  return *cpu_kernels;
}

}  // namespace headgrad
