// The contract between libheadgrad and the MPI backend library, libheadgrad_mpi.so
// (src/distributed/mpi/), which libheadgrad loads with dlopen when an MPI launcher started
// the process (distributed::world()). The library exports two C functions:
//   int headgrad_mpi_backend_abi();                       returns kMpiBackendAbiVersion
//   ProcessGroup* headgrad_mpi_process_group(std::string* why);
// The second initializes MPI and returns the world group (owned by the caller), or null
// with the reason in *why.
#pragma once

#include <string>

#include "headgrad/distributed/process_group.hpp"

namespace headgrad::distributed {

inline constexpr int kMpiBackendAbiVersion = 1;
inline constexpr const char* kMpiBackendLibrary = "libheadgrad_mpi.so";
inline constexpr const char* kMpiBackendAbiSymbol = "headgrad_mpi_backend_abi";
inline constexpr const char* kMpiBackendSymbol = "headgrad_mpi_process_group";
using MakeMpiProcessGroup = ProcessGroup* (*)(std::string* why);

}  // namespace headgrad::distributed
