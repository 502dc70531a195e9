# Fails when a TEST_CASE name contains a character that breaks its registration in CTest:
# ';' and '[' ']' split or garble CMake lists, so the test would run under a truncated
# name that matches nothing and pass without running.
file(GLOB_RECURSE sources ${TEST_DIR}/*.cpp)
set(bad "")
foreach(source ${sources})
  file(STRINGS ${source} lines REGEX "TEST_CASE\\(\"")
  foreach(line IN LISTS lines)
    if(line MATCHES "TEST_CASE\\(\"[^\"]*[][]")
      string(APPEND bad "\n  ${source}: ${line}")
    endif()
  endforeach()
endforeach()
# file(STRINGS) splits on ';' itself; count raw occurrences instead.
foreach(source ${sources})
  file(READ ${source} text)
  string(REGEX MATCHALL "TEST_CASE\\(\"[^\"\n]*;[^\"\n]*\"" hits "${text}")
  if(hits)
    string(APPEND bad "\n  ${source}: a TEST_CASE name contains ';'")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names CTest cannot register:${bad}")
endif()
