// The CPU's kernels (cpu_kernels.hpp): the one instance, installed for kernels_for when the
// library loads.
#include "ops/cpu/cpu_kernels.hpp"

namespace headgrad::cpu {

namespace {
CpuKernels instance;
const bool installed = (headgrad::detail::set_cpu_kernels(&instance), true);
}  // namespace

}  // namespace headgrad::cpu
