# Installs the already built headgrad into WORK_DIR/prefix, moves the installed tree
# elsewhere (the package must be relocatable), then builds and runs consumer projects
# against the moved tree:
#   tests/consumer       find_package(headgrad): CPU only; its binary must not link any
#                        CUDA library (checked with ldd).
#   tests/consumer_cuda  find_package(headgrad COMPONENTS cuda), when WITH_CUDA is ON: the
#                        backend library is found beside libheadgrad and loads.
#   tests/consumer_xtensor  find_package(headgrad COMPONENTS xtensor): headgrad::xtensor,
#                        from_xtensor / as_xtensor. headgrad::headgrad itself must not name
#                        xtensor, xsimd or BLAS (a plain consumer needs none of them).
# The installed CMake files must not name an absolute path outside the tree. Run by CTest
# with -P.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                        --config ${CONFIG}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
file(RENAME ${WORK_DIR}/prefix ${WORK_DIR}/moved)
set(prefix ${WORK_DIR}/moved)

file(GLOB_RECURSE config_files ${prefix}/*.cmake)
foreach(f IN LISTS config_files)
  file(STRINGS ${f} lines REGEX "(/usr/|/opt/|${WORK_DIR}|${BUILD_DIR})")
  if(lines)
    message(FATAL_ERROR "installed ${f} names absolute paths: ${lines}")
  endif()
endforeach()

function(build_and_run name)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/${name} -B ${WORK_DIR}/${name}
                          -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "configuring ${name} failed: ${rc}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/${name} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "building ${name} failed: ${rc}")
  endif()
  execute_process(COMMAND ${WORK_DIR}/${name}/consumer RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "${name} ran but failed: ${rc}")
  endif()
endfunction()

build_and_run(consumer)
execute_process(COMMAND ldd ${WORK_DIR}/consumer/consumer OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "ldd failed on the consumer: ${rc}")
endif()
if(deps MATCHES "cuda|cublas")
  message(FATAL_ERROR "the CPU consumer links CUDA libraries:\n${deps}")
endif()
if(NOT deps MATCHES "libheadgrad[.]so")
  message(FATAL_ERROR "the consumer does not link libheadgrad.so:\n${deps}")
endif()

file(GLOB_RECURSE targets_file ${prefix}/*/headgradTargets.cmake)
file(READ ${targets_file} targets)
if(targets MATCHES "xtensor|xsimd|BLAS|blas")
  message(FATAL_ERROR "headgrad::headgrad's interface names xtensor, xsimd or BLAS; they "
                      "belong to headgrad::xtensor or stay private")
endif()
build_and_run(consumer_xtensor)

if(WITH_CUDA)
  build_and_run(consumer_cuda)
endif()
