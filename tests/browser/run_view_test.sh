#!/bin/sh
# CTest's browser tests of the attention viewer (view_test.mjs in Debian's chromium):
#   run_view_test.sh ATTENTION_VIEW_BINARY WORK_DIR
#       writes a view with the attention_view program (two GPTs, H = 1 and H = 8, briefly
#       trained) and their captured patterns, then checks the page against them, and
#       leaves a screenshot, WORK_DIR/attention_view.png;
#   run_view_test.sh --page VIEW.html
#       checks a page written elsewhere (heads_compare's view.html), every check but the
#       values.
# Exit 77 (CTest's skip) without node, puppeteer-core (bash scripts/setup.sh
# --with-browser installs it into tests/browser/node_modules) or chromium.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
node=$(command -v node || command -v nodejs || true)
if [ -z "$node" ]; then
  echo "SKIPPED: no node (bash scripts/setup.sh --with-browser installs nodejs)"
  exit 77
fi
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
  echo "SKIPPED: puppeteer-core is not installed in $here/node_modules (bash scripts/setup.sh --with-browser)"
  exit 77
fi
if [ "$1" = "--page" ]; then
  exec "$node" "$here/view_test.mjs" "$2" -
fi
binary=$1 work=$2
mkdir -p "$work"
"$binary" --steps 150 --heads 1,8 --d-model 32 --out "$work/view.html" --expected "$work/expected.json"
exec "$node" "$here/view_test.mjs" "$work/view.html" "$work/expected.json" "$work/attention_view.png"
