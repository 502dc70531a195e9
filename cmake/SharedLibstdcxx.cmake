# libstdc++ is always linked as the shared libstdc++.so.6, never copied into headgrad's
# libraries. A copy (libstdc++.a) comes in when the compiler finds no libstdc++.so, the
# development link that libstdc++-dev installs and slim images leave out, or when the
# linker flags say -static-libstdc++. The copy's symbols are exported from libheadgrad, and
# in a process that also loads libstdc++.so.6 (Python with NumPy) half of each of the two
# copies is used: the Python module crashed at the first number it printed into a message.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  return()
endif()
foreach(kind EXE SHARED MODULE)
  if(CMAKE_${kind}_LINKER_FLAGS MATCHES "-static-libstdc\\+\\+")
    string(REPLACE "-static-libstdc++" "" CMAKE_${kind}_LINKER_FLAGS "${CMAKE_${kind}_LINKER_FLAGS}")
    message(STATUS "headgrad: dropped -static-libstdc++ from CMAKE_${kind}_LINKER_FLAGS (LDFLAGS): "
                   "libstdc++ must be shared")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                OUTPUT_VARIABLE HEADGRAD_LIBSTDCXX_SO OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${HEADGRAD_LIBSTDCXX_SO}")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE HEADGRAD_LIBSTDCXX_SO OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${HEADGRAD_LIBSTDCXX_SO}")
    # Named before the compiler's own -lstdc++, it satisfies every libstdc++ symbol, so
    # nothing is taken from libstdc++.a.
    foreach(lang CXX CUDA)
      string(APPEND CMAKE_${lang}_STANDARD_LIBRARIES " ${HEADGRAD_LIBSTDCXX_SO}")
    endforeach()
    message(STATUS "headgrad: ${CMAKE_CXX_COMPILER} finds no libstdc++.so (install libstdc++-dev "
                   "for the link); linking ${HEADGRAD_LIBSTDCXX_SO} by its path")
  else()
    message(WARNING "headgrad: no shared libstdc++ found by ${CMAKE_CXX_COMPILER}: the libraries "
                    "will carry a static copy, and the Python module can crash next to NumPy. "
                    "Install libstdc++-dev.")
  endif()
endif()
