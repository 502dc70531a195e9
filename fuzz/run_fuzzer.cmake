# Runs one fuzz target for SECONDS from a fresh working corpus (WORK/corpus) made of the
# committed SEEDS and the seeds the target writes itself (HEADGRAD_FUZZ_SEED_DIR). Crash
# inputs land in WORK. Fails when libFuzzer reports anything.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
if(IS_DIRECTORY ${SEEDS})
  file(GLOB seeds ${SEEDS}/*)
  file(COPY ${seeds} DESTINATION ${WORK}/corpus)
endif()
set(ENV{HEADGRAD_FUZZ_SEED_DIR} ${WORK}/corpus)
set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=1")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -malloc_limit_mb=512 -max_len=16384 -print_final_stats=1 -artifact_prefix=${WORK}/
          ${WORK}/corpus
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${out}")
message(STATUS "${FUZZER}: ${runs}")
if(NOT status EQUAL 0)
  string(LENGTH "${out}" length)
  math(EXPR from "${length} - 6000")
  if(from LESS 0)
    set(from 0)
  endif()
  string(SUBSTRING "${out}" ${from} -1 tail)
  message(FATAL_ERROR "${FUZZER} found a problem (exit ${status}); inputs in ${WORK}:\n${tail}")
endif()
