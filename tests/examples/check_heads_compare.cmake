# Runs heads_compare on a tiny study and checks that the run folder holds everything the
# report promises: report.md linking every plot, summary.json, the CSV tables, the PNGs
# (each a real PNG file) and a checkpoint per run. Arguments: -DBIN=... -DWORK_DIR=...
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${BIN} --tasks associative_recall,sort --heads 1,2 --seeds 0,1 --steps 24
          --eval-every 8 --d-model 16 --length 4 --depth-control --jobs 2 --quiet
          --out ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "heads_compare failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "report: .*report.md")
  message(FATAL_ERROR "heads_compare did not print where the report is:\n${out}")
endif()
foreach(f report.md summary.json metrics.csv head_grads.csv importance.csv pruning.csv
          runs/sort-L2-H2-s1/checkpoint.npz runs/associative_recall-L8-H1-s0/metrics.csv)
  if(NOT EXISTS ${WORK_DIR}/${f})
    message(FATAL_ERROR "heads_compare left no ${f} in ${WORK_DIR}")
  endif()
endforeach()
file(READ ${WORK_DIR}/report.md report)
set(expected_plots learning_associative_recall grad_norms_sort importance_sort pruning_sort
                   patterns_associative_recall_L2H2 patterns_sort_L8H1 patterns_sort_L1H8)
foreach(p ${expected_plots})
  set(png ${WORK_DIR}/plots/${p}.png)
  if(NOT EXISTS ${png})
    message(FATAL_ERROR "no plot ${png}")
  endif()
  file(READ ${png} magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "89504e47")
    message(FATAL_ERROR "${png} is not a PNG (starts with ${magic})")
  endif()
  string(FIND "${report}" "plots/${p}.png" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md does not show plots/${p}.png")
  endif()
endforeach()
file(READ ${WORK_DIR}/summary.json summary)
string(JSON groups LENGTH "${summary}" groups)
if(NOT groups EQUAL 8)  # 2 tasks x (H=1, H=2, L1xH8, L8xH1)
  message(FATAL_ERROR "summary.json has ${groups} groups, expected 8")
endif()
# 2 tasks x 4 models x 2 seeds x 3 evaluations x 2 splits + the header
file(STRINGS ${WORK_DIR}/metrics.csv rows)
list(LENGTH rows n)
if(NOT n EQUAL 97)
  message(FATAL_ERROR "metrics.csv has ${n} lines, expected 97")
endif()
