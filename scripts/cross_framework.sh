#!/usr/bin/env bash
# Cross-framework check of heads_compare: retrains cells of the study with PyTorch (Debian's
# python3-torch) and compares the solve rates with headgrad's summary.json (Fisher's exact
# test). Installs what it needs when missing (scripts/setup.sh --with-cross-framework),
# then runs scripts/cross_framework.py with the arguments given (--help lists them).
set -euo pipefail
bash "$(dirname "$0")/setup.sh" --with-cross-framework
exec /usr/bin/python3 "$(dirname "$0")/cross_framework.py" "$@"
