#!/usr/bin/env bash
# Reruns the three studies of docs/research/heads.md and copies their figures next to it:
# the default run (scripts/run.sh), associative recall for 3000 steps, and the depth
# control. About 2 + 3 + 6 minutes on 2 cores once built.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/run.sh
bin=./build/release/examples/heads_compare
"$bin" --tasks associative_recall --heads 1,2,8 --steps 3000 --eval-every 100 --out runs/ar_long
"$bin" --depth-control --heads 1,8 --out runs/depth
fig=docs/research/figures
mkdir -p "$fig"
for p in learning_associative_recall learning_sort grad_norms_associative_recall pruning_sort \
         importance_sort patterns_associative_recall_L2H1; do
  cp "runs/heads_compare/plots/$p.png" "$fig/$p.png"
done
cp runs/ar_long/plots/learning_associative_recall.png "$fig/learning_associative_recall_3000.png"
for p in learning_associative_recall learning_sort; do
  cp "runs/depth/plots/$p.png" "$fig/depth_$p.png"
done
echo "figures in $fig; the numbers are in runs/{heads_compare,ar_long,depth}/report.md"
