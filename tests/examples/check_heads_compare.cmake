# Runs heads_compare --preset smoke and checks that the run folder holds everything the
# report promises (view.html, linked and self-contained; report.md embedding every PNG, each
# a real PNG; summary.json with every
# run's required fields, the cells, the selected models and the baselines; the CSV tables),
# then runs it again and checks that every run came from the cache (resumability).
# Arguments: -DBIN=... -DWORK_DIR=...
cmake_policy(SET CMP0054 NEW)  # quoted strings in if() are strings
file(REMOVE_RECURSE ${WORK_DIR})
set(args --preset smoke --jobs 2 --quiet --out ${WORK_DIR})
execute_process(COMMAND ${BIN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "heads_compare failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "report: .*report.md")
  message(FATAL_ERROR "heads_compare did not print where the report is:\n${out}")
endif()
foreach(f report.md summary.json runs.csv curves.csv heads.csv pruning.csv)
  if(NOT EXISTS ${WORK_DIR}/${f})
    message(FATAL_ERROR "heads_compare left no ${f} in ${WORK_DIR}")
  endif()
endforeach()

file(READ ${WORK_DIR}/report.md report)
# The interactive view: one file, linked from the report, that loads nothing from elsewhere.
if(NOT EXISTS ${WORK_DIR}/view.html)
  message(FATAL_ERROR "heads_compare left no view.html in ${WORK_DIR}")
endif()
if(NOT report MATCHES "\\(view\\.html\\)")
  message(FATAL_ERROR "report.md does not link view.html")
endif()
file(READ ${WORK_DIR}/view.html view)
if(view MATCHES "(src|href)=\"(https?:)?//" OR view MATCHES "@import")
  message(FATAL_ERROR "view.html refers to something outside itself")
endif()
file(SHA256 ${WORK_DIR}/view.html view_hash)
file(GLOB pngs ${WORK_DIR}/plots/*.png)
list(LENGTH pngs png_count)
if(png_count LESS 6)
  message(FATAL_ERROR "only ${png_count} plots in ${WORK_DIR}/plots")
endif()
foreach(png ${pngs})
  file(READ ${png} magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "89504e47")
    message(FATAL_ERROR "${png} is not a PNG (starts with ${magic})")
  endif()
  get_filename_component(name ${png} NAME)
  string(FIND "${report}" "plots/${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md does not show plots/${name}")
  endif()
endforeach()
foreach(kind grid_success survival mechanism pruning count_or_size)
  if(NOT report MATCHES "plots/${kind}_")
    message(FATAL_ERROR "report.md has no ${kind} plot")
  endif()
endforeach()

file(READ ${WORK_DIR}/summary.json summary)
string(JSON run_count LENGTH "${summary}" runs)
# smoke: associative_recall 5 arms (2 + 2 + 2 + 2 + 4 models), mqar and nearest_neighbour 2
# arms (2 + 2), char_lm 3 arms (2 + 2 + 4) -> 28 models x 2 lrs x 2 seeds.
if(NOT run_count EQUAL 112)
  message(FATAL_ERROR "summary.json lists ${run_count} runs, expected 112")
endif()
# char_lm: its results with bits per character, the ICL score and the probe's induction;
# its baselines (unigram and bigram); activation patching on the recall tasks.
foreach(phrase "## Results: char_lm" "bits per character" "ICL score" "probe induction"
               "Activation patching" "Olsson et al.'s probe, 128 rows"
               "Mechanism scores after training on two samples" "Count or size? (head_grid)"
               "| count | mean over d of m(H=2, d) - m(H=1, d) |" "(confirmatory) |"
               "- **Multiplicity.** Holm's correction"
               "## Verdicts: head count or head size? (confirmatory)")
  string(FIND "${report}" "${phrase}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md lacks '${phrase}'")
  endif()
endforeach()
string(JSON bigram ERROR_VARIABLE missing GET "${summary}" baselines char_lm 2 name)
if(missing OR NOT bigram STREQUAL "bigram")
  message(FATAL_ERROR "summary.json lacks char_lm's bigram baseline")
endif()
foreach(key task arm heads head_dim d_model layers lr seed params solved_step final_val_loss
            final_val_acc final_test_loss final_test_acc)
  string(JSON type ERROR_VARIABLE missing TYPE "${summary}" runs 0 ${key})
  if(missing)
    message(FATAL_ERROR "summary.json's runs lack '${key}': ${missing}")
  endif()
endforeach()
foreach(key cells selected baselines)
  string(JSON n ERROR_VARIABLE missing LENGTH "${summary}" ${key})
  if(missing OR n EQUAL 0)
    message(FATAL_ERROR "summary.json has no ${key}")
  endif()
endforeach()
string(JSON key_agnostic ERROR_VARIABLE missing GET "${summary}" baselines associative_recall 1 name)
if(missing OR NOT key_agnostic STREQUAL "key_agnostic")
  message(FATAL_ERROR "summary.json lacks the key-agnostic baseline of associative_recall")
endif()
string(JSON trained GET "${summary}" runs_trained)
if(trained EQUAL 0)
  message(FATAL_ERROR "the first invocation trained nothing")
endif()

# Again: every run is read back from the cache, and the report is written anew.
file(REMOVE ${WORK_DIR}/report.md)
execute_process(COMMAND ${BIN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK_DIR}/report.md)
  message(FATAL_ERROR "heads_compare failed on the second invocation (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK_DIR}/summary.json summary)
string(JSON trained GET "${summary}" runs_trained)
string(JSON cached GET "${summary}" runs_cached)
if(NOT trained EQUAL 0 OR cached EQUAL 0)
  message(FATAL_ERROR "the second invocation trained ${trained} runs and read ${cached} from the cache; expected 0 trained")
endif()
file(SHA256 ${WORK_DIR}/view.html view_hash_again)
if(NOT view_hash STREQUAL view_hash_again)
  message(FATAL_ERROR "view.html from the cache differs from the one of the trained runs")
endif()

# --view-seeds 1: under --cached-only the seed-1 runs, cached without the view's patterns,
# are used as they are (nothing trained, nothing left out); without it they are trained
# again to record them, and view.html shows seed 1's group too.
execute_process(COMMAND ${BIN} ${args} --view-seeds 1 --cached-only RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${WORK_DIR}/summary.json summary)
string(JSON trained GET "${summary}" runs_trained)
string(JSON missing GET "${summary}" runs_missing)
if(NOT rc EQUAL 0 OR NOT trained EQUAL 0 OR NOT missing EQUAL 0)
  message(FATAL_ERROR "--view-seeds 1 --cached-only: exit ${rc}, trained ${trained}, left out "
                      "${missing} (expected 0 and 0):\n${out}\n${err}")
endif()
execute_process(COMMAND ${BIN} ${args} --view-seeds 0,1 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${WORK_DIR}/summary.json summary)
string(JSON trained GET "${summary}" runs_trained)
file(READ ${WORK_DIR}/view.html view)
if(NOT rc EQUAL 0 OR trained EQUAL 0 OR NOT view MATCHES "seed 1\""
   OR NOT err MATCHES "lacks the patterns view.html shows")
  message(FATAL_ERROR "--view-seeds 0,1: exit ${rc}, trained ${trained} (expected the seed-1 "
                      "runs again), and view.html should show seed 1:\n${out}\n${err}")
endif()

# --cached-only with a third seed: nothing is trained, the seed-2 runs are left out, and
# the report says the study is partial.
execute_process(COMMAND ${BIN} ${args} --seeds 3 --cached-only RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "heads_compare --cached-only failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK_DIR}/summary.json summary)
string(JSON trained GET "${summary}" runs_trained)
string(JSON missing GET "${summary}" runs_missing)
string(JSON run_count LENGTH "${summary}" runs)
# The 112 runs above are 96 unique ones (on associative_recall head_size d = 8 is
# fixed_width H = 2 and head_size d = 4 is head_grid H = 2, d = 4; head_grid H = 1, d = 16
# is fixed_width H = 1 there and on char_lm); a third seed adds 48 unique runs, none cached.
if(NOT trained EQUAL 0 OR NOT missing EQUAL 48 OR NOT run_count EQUAL 112)
  message(FATAL_ERROR "--cached-only trained ${trained}, left out ${missing} (expected 48) and "
                      "reported ${run_count} runs (expected 112)")
endif()
file(READ ${WORK_DIR}/report.md report)
if(NOT report MATCHES "Partial study:\\*\\* 48 planned runs")
  message(FATAL_ERROR "the --cached-only report does not say it is partial")
endif()

# --steps overrides every task's budget, and the report says the steps it used, nowhere the
# preset's own 40.
execute_process(COMMAND ${BIN} --preset smoke --jobs 2 --quiet --tasks associative_recall
                        --seeds 1 --steps 20 --out ${WORK_DIR}/steps20
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "heads_compare --steps 20 failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK_DIR}/steps20/report.md report)
if(NOT report MATCHES "\\| associative_recall \\|[^\n]*\\| 20 \\|")
  message(FATAL_ERROR "the --steps 20 report's task table does not give 20 steps")
endif()
if(report MATCHES "40 steps")
  message(FATAL_ERROR "the --steps 20 report still speaks of 40 steps")
endif()

# The follow-up stages: the rates past the grid's edge (smoke's grid 0.003, 0.01: every best
# rate is at an edge, so 0.001 or 0.03 is trained too) and the 3x budget of the fixed_width
# and (synthetic tasks only) head_grid models at their best rates, reported as "both
# budgets"; a rerun reads all from the cache.
set(followup --preset smoke --jobs 2 --quiet --tasks associative_recall,char_lm
             --arms fixed_width,head_grid --seeds 1 --extend-lrs --long-budget 3
             --out ${WORK_DIR}/followup)
foreach(pass first again)
  execute_process(COMMAND ${BIN} ${followup} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "heads_compare with follow-up stages failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
file(READ ${WORK_DIR}/followup/summary.json summary)
string(JSON trained GET "${summary}" runs_trained)
string(JSON run_count LENGTH "${summary}" runs)
string(JSON budget_count LENGTH "${summary}" budgets)
# fixed_width, 2 tasks x 2 models: 2 grid rates + 1 past the edge + the 3x run each = 16
# runs; head_grid (H = 1, 2 x d = 4, 16) 4 models on each task, 3 runs each and the 3x run on
# recall alone = 28 more. Budget pairs: 2 fixed_width models per task, and recall's 4 grid
# models less H = 1, d = 16, which is fixed_width H = 1 (listed once): 7.
if(NOT trained EQUAL 0 OR NOT run_count EQUAL 44 OR NOT budget_count EQUAL 7)
  message(FATAL_ERROR "follow-up stages: the rerun trained ${trained} (expected 0), listed "
                      "${run_count} runs (expected 44) and ${budget_count} budget pairs (expected 7)")
endif()
string(JSON long_steps GET "${summary}" budgets 0 long steps)
string(JSON short_steps GET "${summary}" budgets 0 short steps)
if(NOT long_steps EQUAL 120 OR NOT short_steps EQUAL 40)
  message(FATAL_ERROR "the budget pair has ${short_steps} and ${long_steps} steps, expected 40 and 120")
endif()
file(READ ${WORK_DIR}/followup/report.md report)
foreach(phrase "### associative_recall, both budgets" "### char_lm, both budgets"
               "(edge)" "### associative_recall, fixed_width_3x"
               "### associative_recall, head_grid_3x" "plots/mechanism_char_lm_fixed_width_3x.png")
  string(FIND "${report}" "${phrase}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the follow-up report lacks '${phrase}'")
  endif()
endforeach()
# The report regenerated from that cache (--cached-only): every run is there, so none is
# counted missing (the follow-up runs are not first-stage runs) and the study is not partial.
execute_process(COMMAND ${BIN} ${followup} --cached-only RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
file(READ ${WORK_DIR}/followup/summary.json summary)
string(JSON missing GET "${summary}" runs_missing)
string(JSON run_count LENGTH "${summary}" runs)
file(READ ${WORK_DIR}/followup/report.md report)
if(NOT rc EQUAL 0 OR NOT missing EQUAL 0 OR NOT run_count EQUAL 44 OR report MATCHES "Partial study")
  message(FATAL_ERROR "--cached-only after the follow-up stages: exit ${rc}, ${missing} runs "
                      "missing (expected 0), ${run_count} runs (expected 44):\n${out}\n${err}")
endif()
