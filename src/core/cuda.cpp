// The public CUDA functions (headgrad/core/cuda.hpp) and the loader of the CUDA backend
// library (src/core/cuda_backend.hpp). The library is looked for, in order:
//   1. $HEADGRAD_CUDA_BACKEND, a path to the library file, when set;
//   2. next to libheadgrad itself (build trees and installs put both in one folder);
//   3. the dynamic linker's search path (LD_LIBRARY_PATH, ldconfig).
// It is loaded once, on the first question about CUDA; a failed load is remembered with its
// reason, so a CPU-only machine pays one dlopen attempt and nothing else.
#include "core/cuda_backend.hpp"

#include <dlfcn.h>

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

// The folder of the shared object this function is compiled into (libheadgrad), with a
// trailing '/', or "" when it cannot be told.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr)
    return "";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Tries one candidate; on failure appends "<candidate>: <reason>" to `tried`.
Backend* open_backend(const std::string& candidate, std::vector<std::string>& tried) {
  void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    tried.push_back(err ? err : candidate + ": cannot be loaded");
    return nullptr;
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, kBackendAbiSymbol));
  auto make = reinterpret_cast<Backend* (*)()>(dlsym(handle, kBackendSymbol));
  if (abi == nullptr || make == nullptr) {
    tried.push_back(candidate + ": not a headgrad CUDA backend (no " + kBackendSymbol + ")");
    dlclose(handle);
    return nullptr;
  }
  if (abi() != kBackendAbiVersion) {
    tried.push_back(candidate + ": backend interface version " + std::to_string(abi()) +
                    ", this libheadgrad needs " + std::to_string(kBackendAbiVersion) +
                    " (rebuild both from one source tree)");
    dlclose(handle);
    return nullptr;
  }
  return make();  // the handle stays open for the life of the process
}

Loaded load() {
  std::vector<std::string> tried;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("HEADGRAD_CUDA_BACKEND"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    const std::string folder = own_folder();
    if (!folder.empty()) candidates.push_back(folder + kBackendLibrary);
    candidates.emplace_back(kBackendLibrary);
  }
  for (const std::string& candidate : candidates)
    if (Backend* b = open_backend(candidate, tried)) return {b, ""};
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
