#!/usr/bin/env bash
# The full study (heads_compare --preset full), the one docs/research/heads.md cites: about
# 2,000 unique runs with char_lm, fixed_head_dim H = 8 and the follow-up stages (rates past
# the grid's edge, 3x budgets), several hours on 2 cores, usually over more than one
# sitting. It runs in the background (nohup) and writes its
# log beside its output; every finished run is cached, so running this script again after
# an interruption (or with more seeds: extra arguments go to heads_compare, e.g.
# --seeds 20) continues where it stopped. Follow it with: tail -f <out>/study.log
# A report of the runs finished so far, without training: heads_compare --preset full
# --out <out> --cached-only
# It runs niced (10) from a frozen copy of the program ($out/frozen-<commit>/).
# Between machines: the runs finished so far are kept in results/heads_compare-full (parts
# written by scripts/study_archive.py, committed with the code); this script first restores
# them into the cache. Before leaving a machine, stop the study (kill its pid) and pack:
#   /usr/bin/python3 scripts/study_archive.py pack <out>/cache results/heads_compare-full
#   bash scripts/full_study.sh [--preset full|text_long] [--out DIR] [heads_compare arguments...]
# --preset text_long runs char_lm at T = 256 for 10,000 steps (its own folder and archive,
# runs/heads_compare-text_long and results/heads_compare-text_long).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=full
if [ "${1:-}" = "--preset" ]; then preset=$2; shift 2; fi
out=runs/heads_compare-$preset
if [ "${1:-}" = "--out" ]; then out=$2; shift 2; fi
archive=results/heads_compare-$preset
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target heads_compare -j "$(nproc)"
mkdir -p "$out"
if [ -d "$archive" ]; then
  /usr/bin/python3 scripts/study_archive.py unpack "$archive" "$out/cache"
fi
# A frozen copy of the program and its libraries: rebuilding the checkout while the study
# runs changes nothing under it (the loader searches LD_LIBRARY_PATH before the RUNPATH).
frozen="$out/frozen-$(git rev-parse --short HEAD 2>/dev/null || echo build)"
rm -rf "$frozen.tmp"
mkdir -p "$frozen.tmp/lib"
cp ./build/release/examples/heads_compare "$frozen.tmp/"
cp -P ./build/release/lib/libheadgrad*.so* "$frozen.tmp/lib/"
rm -rf "$frozen"
mv "$frozen.tmp" "$frozen"
LD_LIBRARY_PATH="$(cd "$frozen" && pwd)/lib" nohup nice -n 10 "$frozen/heads_compare" --preset "$preset" \
  --out "$out" "$@" >>"$out/study.log" 2>&1 &
echo "heads_compare --preset $preset: pid $!, program $frozen, log $out/study.log, report" \
  "$out/report.md when done"
