// Loading a backend library at run time (dlopen), shared by the CUDA backend
// (libheadgrad_cuda.so) and the MPI process group (libheadgrad_mpi.so). A backend library
// exports two C functions: one returning its interface version, one making the backend.
#pragma once

#include <string>
#include <vector>

namespace headgrad::detail {

struct PluginSpec {
  const char* library;      // "libheadgrad_cuda.so"
  const char* env_var;      // a path that replaces the search ("HEADGRAD_CUDA_BACKEND")
  const char* abi_symbol;   // int f(): the interface version
  const char* make_symbol;  // the factory, resolved but not called here
  int abi_version;          // what this libheadgrad needs
  const char* what;         // "CUDA backend", for messages
  bool global_symbols;      // RTLD_GLOBAL (MPI's own plugins look up libmpi's symbols)
};

// Looks for the library as $env_var names it when set, else next to libheadgrad, then on
// the dynamic linker's path; returns the factory symbol of the first candidate that loads
// and has the right version (the handle stays open for the process's life), or null with
// every candidate's failure appended to `tried`.
void* load_plugin(const PluginSpec& spec, std::vector<std::string>& tried);

}  // namespace headgrad::detail
