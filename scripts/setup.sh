#!/usr/bin/env bash
# Installs the Debian packages headgrad needs, if any are missing (idempotent, quiet when
# everything is present). Uses sudo when not root. Debian's python3 is in the base set: the
# Release build configures the test suite, whose checks are Python scripts (the main job
# itself never runs Python).
#   --with-python   what the Python module builds with: pybind11, the Python headers and
#                   NumPy for Debian's python3 (pybind11-dev, python3-dev, python3-numpy),
#                   and what `pip install .` and a virtual environment need (python3-pip,
#                   python3-venv, python3-setuptools, python3-wheel).
#   --with-oracle   also Debian's PyTorch and NumPy (python3-torch, python3-numpy), the
#                   test oracle for attention, and what the Python suite runs with (pytest,
#                   nbconvert and ipykernel for the notebook); never needed to run headgrad.
#   --with-browser  what the attention viewer's browser tests run on: Debian's chromium,
#                   node and npm (unless a node and an npm are already there), then
#                   puppeteer-core from npm's registry into tests/browser/node_modules
#                   (`npm ci`, the versions of tests/browser/package-lock.json).
#   --with-cross-framework  what scripts/cross_framework.py runs with: the oracle's PyTorch
#                   and NumPy, and SciPy (Fisher's exact test).
set -euo pipefail
cd "$(dirname "$0")/.."

browser=0
packages=(
  cmake g++ make
  libxtensor-dev libxsimd-dev libxtensor-blas-dev libopenblas-dev libxsmm-dev
  doctest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libzip-dev zipcmp zipmerge ziptool
  gnuplot-nox
  libopenmpi-dev openmpi-bin
  python3
  fortunes
)
for arg in "$@"; do
  case "$arg" in
    --with-python) packages+=(pybind11-dev python3-dev python3-numpy python3-pip python3-venv
                              python3-setuptools python3-wheel) ;;
    --with-oracle) packages+=(python3-torch python3-numpy python3-pytest python3-nbconvert
                              python3-ipykernel) ;;
    --with-fuzz) packages+=(clang libclang-rt-dev) ;;
    --with-cross-framework) packages+=(python3-torch python3-numpy python3-scipy) ;;
    --with-browser)
      browser=1
      packages+=(chromium)
      command -v node >/dev/null 2>&1 || packages+=(nodejs)
      command -v npm >/dev/null 2>&1 || packages+=(npm) ;;
    *) echo "headgrad setup: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# puppeteer-core for the browser tests, once the packages are there (the end of this file).
install_puppeteer() {
  [ "$browser" = 1 ] || return 0
  [ -d tests/browser/node_modules/puppeteer-core ] && return 0
  echo "headgrad setup: installing puppeteer-core into tests/browser/node_modules (npm ci)" >&2
  npm ci --prefix tests/browser --no-audit --no-fund --ignore-scripts --loglevel=error >&2 || {
    echo "headgrad setup: npm ci in tests/browser failed (is npm's registry reachable?)" >&2
    exit 1
  }
}
if [ ${#missing[@]} -eq 0 ]; then
  install_puppeteer
  exit 0
fi

echo "headgrad setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1; then
  sudo_cmd=(sudo)
else
  echo "headgrad setup: missing packages (${missing[*]}) and neither root nor sudo" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_puppeteer
