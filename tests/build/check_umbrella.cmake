# The umbrella header includes every public header but the xtensor interop: a research
# program needs <headgrad/headgrad.hpp> alone (docs/pytorch.md says so). Fails naming each
# header it misses and the line to add. Run by CTest with -DINCLUDE_DIR=<repo>/include -P.
cmake_minimum_required(VERSION 3.25)
file(READ ${INCLUDE_DIR}/headgrad/headgrad.hpp umbrella)
file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/headgrad/*/*.hpp)
set(left_out headgrad/core/xtensor_interop.hpp)  # needs xtensor: target headgrad::xtensor
set(missing "")
foreach(h IN LISTS headers)
  string(FIND "${umbrella}" "#include \"${h}\"" at)
  if(NOT h IN_LIST left_out AND at EQUAL -1)
    string(APPEND missing "\n  #include \"${h}\"")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "include/headgrad/headgrad.hpp misses public headers; add:${missing}")
endif()
list(LENGTH headers n)
message(STATUS "umbrella header includes all ${n} public headers but the xtensor interop")
