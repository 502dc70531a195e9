// load_plugin: see plugin.hpp.
#include "core/plugin.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace headgrad::detail {

namespace {

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
void* open_candidate(const PluginSpec& spec, const std::string& candidate,
                     std::vector<std::string>& tried) {
  void* handle =
      dlopen(candidate.c_str(), RTLD_NOW | (spec.global_symbols ? RTLD_GLOBAL : RTLD_LOCAL));
  if (handle == nullptr) {
    const char* err = dlerror();
    tried.push_back(err ? err : candidate + ": cannot be loaded");
    return nullptr;
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, spec.abi_symbol));
  void* make = dlsym(handle, spec.make_symbol);
  if (abi == nullptr || make == nullptr) {
    tried.push_back(candidate + ": not a headgrad " + spec.what + " (no " + spec.make_symbol + ")");
    dlclose(handle);
    return nullptr;
  }
  if (abi() != spec.abi_version) {
    tried.push_back(candidate + ": " + spec.what + " interface version " + std::to_string(abi()) +
                    ", this libheadgrad needs " + std::to_string(spec.abi_version) +
                    " (rebuild both from one source tree)");
    dlclose(handle);
    return nullptr;
  }
  return make;  // the handle stays open for the life of the process
}

}  // namespace

void* load_plugin(const PluginSpec& spec, std::vector<std::string>& tried) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(spec.env_var); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    const std::string folder = own_folder();
    if (!folder.empty()) candidates.push_back(folder + spec.library);
    candidates.emplace_back(spec.library);
  }
  for (const std::string& candidate : candidates)
    if (void* make = open_candidate(spec, candidate, tried)) return make;
  return nullptr;
}

}  // namespace headgrad::detail
