#!/usr/bin/env bash
# Builds bench/taps.cpp against an older commit (one without per-head taps) in a scratch
# worktree, builds it against this tree, and runs the taps-off case of both, interleaved,
# ROUNDS times (default 5), printing each median. Usage: bench/taps_vs_baseline.sh COMMIT
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/taps_vs_baseline.sh COMMIT}
rounds=${ROUNDS:-5}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/tree" "$base"
cp bench/taps.cpp "$work/tree/bench/taps.cpp"
printf '\nadd_executable(bench_taps taps.cpp)\ntarget_link_libraries(bench_taps PRIVATE headgrad::headgrad headgrad_flags benchmark::benchmark)\n' \
  >> "$work/tree/bench/CMakeLists.txt"
cmake -S "$work/tree" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DHEADGRAD_BUILD_TESTS=OFF \
  -DHEADGRAD_BUILD_EXAMPLES=OFF -DHEADGRAD_BUILD_TOOLS=OFF >/dev/null
cmake --build "$work/build" --target bench_taps -j "$(nproc)" >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release --target bench_taps -j "$(nproc)" >/dev/null
median() {
  "$1" --benchmark_filter=taps_off --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null | awk '/_median/ {print $2, $3}'
}
for i in $(seq "$rounds"); do
  echo "round $i: $base $(median "$work/build/bench/bench_taps")   this tree $(median build/release/bench/bench_taps)"
done
