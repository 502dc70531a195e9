#!/usr/bin/env bash
# Reruns the default study (scripts/run.sh, heads_compare --preset default) and copies the
# figures docs/research/heads.md shows next to it. About 5 minutes on 2 cores once built;
# a rerun reads every finished run from runs/heads_compare/cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/run.sh --quiet
fig=docs/research/figures
mkdir -p "$fig"
for p in learning grid_success survival pruning mechanism patterns; do
  cp "runs/heads_compare/plots/${p}_associative_recall_fixed_width.png" "$fig/"
done
cp runs/heads_compare/plots/grid_success_associative_recall_fixed_head_dim.png "$fig/"
echo "figures in $fig; the numbers are in runs/heads_compare/report.md"
