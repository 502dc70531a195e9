#!/usr/bin/env bash
# Fuzzes the readers for longer than the CTests do: builds the fuzz preset (clang,
# libFuzzer, ASan + UBSan), then runs every target (or those named) for SECONDS each,
# JOBS at a time, keeping each target's corpus in runs/fuzz/<target>/corpus so that a
# later run continues from it. Findings (crash-*, leak-*, oom-*, timeout-*) land in
# runs/fuzz/<target>/ and make the script exit 1.
#   bash scripts/fuzz.sh [--seconds 600] [--jobs 2] [target ...]
#   targets: npy_reader npz_reader checkpoint_loader mha_case_loader
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600
jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(npy_reader npz_reader checkpoint_loader mha_case_loader)
bash scripts/setup.sh --with-fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

run_one() {
  local target=$1 dir=runs/fuzz/$1
  mkdir -p "$dir/corpus"
  [ -d "fuzz/corpus/$target" ] && cp -n fuzz/corpus/"$target"/* "$dir/corpus/" 2>/dev/null || true
  HEADGRAD_FUZZ_SEED_DIR="$dir/corpus" ASAN_OPTIONS=detect_leaks=1 \
    "build/fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -max_len=16384 -print_final_stats=1 -artifact_prefix="$dir/" \
    "$dir/corpus" >"$dir/log.txt" 2>&1
  local status=$?
  local runs
  runs=$(grep -o 'number_of_executed_units: *[0-9]*' "$dir/log.txt" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz $target: ${seconds}s, $runs runs, exit $status (log: $dir/log.txt)"
  return $status
}

failed=0
pids=()
for target in "${targets[@]}"; do
  run_one "$target" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed
