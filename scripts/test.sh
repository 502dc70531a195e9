#!/usr/bin/env bash
# The whole test suite: installs what is missing (including Debian's PyTorch, the oracle
# for the attention tests, what the Python module builds and is tested with, and chromium
# with puppeteer-core for the attention viewer's browser tests), builds
# everything in Release (the Python module included) and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-oracle --with-python --with-browser
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
ctest --preset release -j "$(nproc)"
