#!/usr/bin/env bash
# Regenerates the reports of the two studies docs/research/heads.md cites from their caches
# (nothing is trained: seconds; a study still running is reported as partial), fills
# heads.md's generated tables from them (docs/research/heads_tables.py) and copies every
# figure heads.md shows into docs/research/figures. The list is read from heads.md
# itself: figures/<plot>.png comes from the full study's plots, figures/text_long_<plot>.png
# from the text_long study's.
#   bash docs/research/make_figures.sh [FULL_RUN_DIR [TEXT_LONG_RUN_DIR]]
#   (defaults runs/heads_compare-full and runs/heads_compare-text_long; a fresh checkout
#   fills their caches with: /usr/bin/python3 scripts/study_archive.py unpack
#   results/heads_compare-full runs/heads_compare-full/cache, and the same for text_long)
set -euo pipefail
cd "$(dirname "$0")/../.."
full=${1:-runs/heads_compare-full}
text_long=${2:-runs/heads_compare-text_long}
program=./build/release/examples/heads_compare
if [ ! -x "$program" ]; then
  echo "make_figures.sh: $program is not built; run cmake --preset release && cmake --build --preset release" >&2
  exit 1
fi
# Each report goes to <run>/cached_report, beside the study's own output: a study still
# training holds the lock on its run folder, not on this one, and reads of its cache are safe.
report() {  # report PRESET RUN_DIR
  if [ ! -d "$2/cache" ]; then
    echo "make_figures.sh: no study cache in $2/cache; unpack results/heads_compare-$1 there" \
      "(see this script's header) or run bash scripts/full_study.sh --preset $1" >&2
    exit 1
  fi
  "$program" --preset "$1" --out "$2/cached_report" --cache "$2/cache" --cached-only --quiet
}
report full "$full"
report text_long "$text_long"
full=$full/cached_report
text_long=$text_long/cached_report
# heads.md's tables, from the two reports' summary.json.
/usr/bin/python3 docs/research/heads_tables.py "$full/summary.json" "$text_long/summary.json" \
  docs/research/heads.md

doc=docs/research/heads.md
fig=docs/research/figures
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
missing=0
for name in $(grep -o 'figures/[A-Za-z0-9_]*\.png' "$doc" | sed 's|figures/||' | sort -u); do
  case $name in
    text_long_*) source="$text_long/plots/${name#text_long_}" ;;
    *) source="$full/plots/$name" ;;
  esac
  if [ -f "$source" ]; then
    cp "$source" "$staged/$name"
  else
    echo "make_figures.sh: $doc shows figures/$name, but $source was not drawn" >&2
    missing=1
  fi
done
if [ "$missing" -ne 0 ]; then
  echo "make_figures.sh: $fig left as it was" >&2
  exit 1
fi
# Replaced only when every figure is there.
rm -rf "$fig"
mv "$staged" "$fig"
chmod 755 "$fig"
trap - EXIT
echo "figures in $fig; the numbers are in $full/report.md and $text_long/report.md"
