#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release and runs the default example.
# Extra arguments are passed to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target tiny_regression -j "$(nproc)"
./build/release/examples/tiny_regression "$@"
