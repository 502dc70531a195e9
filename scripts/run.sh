#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release and runs heads_compare, the
# single-head vs multi-head study, on its defaults (a few minutes on 2 cores). It writes
# runs/heads_compare/ (report.md, summary.json, metrics.csv, plots/*.png) and prints
# where the report is. Extra arguments are passed to heads_compare (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target heads_compare -j "$(nproc)"
./build/release/examples/heads_compare "$@"
