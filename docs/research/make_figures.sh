#!/usr/bin/env bash
# Copies the figures docs/research/heads.md shows from a finished full study
# (bash scripts/full_study.sh [--out DIR]) and regenerates that study's report from its
# cache first (seconds: nothing is trained; with --cached-only a study still running is
# reported as partial).
#   bash docs/research/make_figures.sh [RUN_DIR]      (default runs/heads_compare-full)
set -euo pipefail
cd "$(dirname "$0")/../.."
run=${1:-runs/heads_compare-full}
if [ ! -d "$run/cache" ]; then
  echo "make_figures.sh: no study cache in $run/cache; run bash scripts/full_study.sh first" >&2
  exit 1
fi
./build/release/examples/heads_compare --preset full --out "$run" --cached-only --quiet
fig=docs/research/figures
rm -rf "$fig"
mkdir -p "$fig"
copy() { cp "$run/plots/$1.png" "$fig/"; }
for kind in grid_success learning survival mechanism pruning patterns; do
  copy "${kind}_associative_recall_fixed_width"
done
copy grid_success_associative_recall_fixed_head_dim
copy grid_success_associative_recall_head_size
copy learning_associative_recall_one_layer
copy mechanism_associative_recall_one_layer
copy grid_success_mqar_fixed_width
copy mechanism_mqar_fixed_width
copy grid_loss_nearest_neighbour_fixed_width
copy learning_nearest_neighbour_fixed_width
copy grid_loss_d_retrieval_fixed_width
copy learning_d_retrieval_fixed_width
copy grid_success_sort_fixed_width
copy learning_char_lm_fixed_width
copy grid_loss_char_lm_fixed_width
echo "figures in $fig; the numbers are in $run/report.md"
