// The public CUDA functions (headgrad/core/cuda.hpp) and the loader of the CUDA backend
// library (src/core/cuda_backend.hpp). The library is looked for, in order:
//   1. $HEADGRAD_CUDA_BACKEND, a path to the library file, when set;
//   2. next to libheadgrad itself (build trees and installs put both in one folder);
//   3. the dynamic linker's search path (LD_LIBRARY_PATH, ldconfig).
// It is loaded once, on the first question about CUDA; a failed load is remembered with its
// reason, so a CPU-only machine pays one dlopen attempt and nothing else.
#include "core/cuda_backend.hpp"
#include "core/plugin.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "headgrad/core/cuda.hpp"
#include "headgrad/core/error.hpp"

namespace headgrad {
namespace cuda {

namespace {

struct Loaded {
  Backend* backend = nullptr;
  std::string why;  // empty when loaded
};

Loaded load() {
  std::vector<std::string> tried;
  const detail::PluginSpec spec{kBackendLibrary,         "HEADGRAD_CUDA_BACKEND", kBackendAbiSymbol,
                                kBackendSymbol,          kBackendAbiVersion,      "CUDA backend",
                                /*global_symbols=*/false};
  if (void* make = detail::load_plugin(spec, tried))
    return {reinterpret_cast<Backend* (*)()>(make)(), ""};
  std::string why =
      "the CUDA backend library " + std::string(kBackendLibrary) + " could not be loaded (";
  for (std::size_t i = 0; i < tried.size(); ++i) why += (i ? "; " : "") + tried[i];
  return {nullptr, why + "); build headgrad with nvcc present (HEADGRAD_CUDA=AUTO or ON)"};
}

const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe, once
  return l;
}

// Device count and the reason for none, asked of the backend once.
struct Devices {
  int count = 0;
  std::string why;
};
const Devices& devices() {
  static const Devices d = [] {
    Devices out;
    const Loaded& l = loaded();
    if (l.backend == nullptr) {
      out.why = l.why;
    } else {
      out.count = l.backend->device_count(&out.why);
      if (out.count == 0 && out.why.empty()) out.why = "no GPU was found";
    }
    return out;
  }();
  return d;
}

std::atomic<bool> allow_tf32{false};

}  // namespace

Backend* try_backend(std::string* why) {
  const Loaded& l = loaded();
  if (l.backend == nullptr && why != nullptr) *why = l.why;
  return l.backend;
}

Backend& backend(const char* op) {
  const Loaded& l = loaded();
  if (l.backend == nullptr) throw DeviceError(std::string(op) + ": " + l.why);
  return *l.backend;
}

void check_device(int index, const char* op) {
  const Devices& d = devices();
  if (index < 0 || index >= d.count) {
    throw DeviceError(std::string(op) + ": device cuda:" + std::to_string(index) +
                      " is not available (" +
                      (d.count == 0 ? d.why : std::to_string(d.count) + " GPU(s) found") + ")");
  }
}

}  // namespace cuda

// --- public API (headgrad/core/cuda.hpp) ----------------------------------------------

bool cuda_built() { return cuda::try_backend() != nullptr; }
int cuda_device_count() { return cuda::devices().count; }
bool cuda_is_available() { return cuda_device_count() > 0; }
std::string cuda_unavailable_reason() { return cuda::devices().why; }

std::string cuda_device_name(int index) {
  cuda::check_device(index, "cuda_device_name");
  return cuda::backend().device_name(index);
}

void cuda_synchronize(int index) {
  cuda::check_device(index, "cuda_synchronize");
  cuda::backend().synchronize(index);
}

void set_cuda_allow_tf32(bool allow) { cuda::allow_tf32.store(allow); }
bool cuda_allow_tf32() { return cuda::allow_tf32.load(); }

CudaMemoryStats cuda_memory_stats(int index) {
  if (index < 0 || index >= cuda_device_count()) return {};
  return cuda::backend().memory_stats(index);
}

void reset_cuda_peak_memory(int index) {
  if (index < 0 || index >= cuda_device_count()) return;
  cuda::backend().reset_peak_memory(index);
}

void empty_cuda_cache() {
  if (cuda_device_count() == 0) return;
  cuda::backend().empty_cache();
}

}  // namespace headgrad
