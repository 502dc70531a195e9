#!/usr/bin/env bash
# Cross-framework check of heads_compare: retrains cells of the study with PyTorch (Debian's
# python3-torch) and compares the solve rates with headgrad's summary.json (Fisher's exact
# test). Installs python3-scipy when it is missing (sudo when not root), then runs
# scripts/cross_framework.py with the arguments given (--help lists them).
set -euo pipefail
if ! /usr/bin/python3 -c "import scipy.stats" 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo_cmd=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "cross_framework: python3-scipy is missing and neither root nor sudo" >&2
    exit 1
  fi
  echo "cross_framework: installing python3-scipy" >&2
  "${sudo_cmd[@]}" apt-get install -y python3-scipy ||
    { "${sudo_cmd[@]}" apt-get update && "${sudo_cmd[@]}" apt-get install -y python3-scipy; }
fi
exec /usr/bin/python3 "$(dirname "$0")/cross_framework.py" "$@"
