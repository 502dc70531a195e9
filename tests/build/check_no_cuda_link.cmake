# Fails when a CPU binary or libheadgrad itself has a link-time dependency on a CUDA
# library (the backend is loaded with dlopen only when a GPU is asked for). BINARIES is a
# |-separated list of files; each is checked with ldd. Run by CTest with -P.
string(REPLACE "|" ";" BINARIES "${BINARIES}")
foreach(binary IN LISTS BINARIES)
  execute_process(COMMAND ldd ${binary} OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "ldd ${binary} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "[^\n]*(cudart|cublas|libcuda)[^\n]*" hits "${deps}")
  if(hits)
    message(FATAL_ERROR "${binary} links CUDA libraries:\n${hits}")
  endif()
  message(STATUS "${binary}: no CUDA library")
endforeach()
