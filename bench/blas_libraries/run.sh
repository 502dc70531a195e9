#!/usr/bin/env bash
# Single-threaded comparison of OpenBLAS, oneDNN, BLIS and libxsmm on the GEMM shapes of one
# toy-GPT training step (see compare.cpp for what is measured and how).
#
#   bash bench/blas_libraries/run.sh [compare options, e.g. --rounds 11]
#
# Installs the Debian packages it needs if any is missing (apt-get, as root or through sudo),
# keeps OpenBLAS the system BLAS/LAPACK (libblis registers itself as an alternative; any
# alternative that pointed at OpenBLAS before the install is set back to it), compiles
# compare.cpp with g++ directly into $BUILD_DIR (default /tmp/blas_libraries_compare), prints
# oneDNN's DNNL_VERBOSE ISA line once, then runs the comparison $RUNS times (default 2) pinned
# to CPU $BENCH_CPU (default 1, the last CPU if there are fewer) with one thread everywhere.
# Markdown goes to stdout. The environment reaches the libraries unchanged: an inherited
# OPENBLAS_CORETYPE overrides OpenBLAS's CPU detection (the report prints the core OpenBLAS
# really uses), and BLIS 0.9 falls back to its slow `generic` kernels on CPUs it does not know.
# To let OpenBLAS detect the CPU itself and force BLIS's AVX-512 kernels:
#   env -u OPENBLAS_CORETYPE BLIS_ARCH_TYPE=0 bash bench/blas_libraries/run.sh
# (BLIS_ARCH_TYPE is BLIS's numeric arch_t: 0 skx, 3 haswell, 6 zen3.)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="${BUILD_DIR:-/tmp/blas_libraries_compare}"
runs="${RUNS:-2}"

# --- packages -------------------------------------------------------------------------------
packages=(g++ libopenblas-dev libdnnl-dev libxsmm-dev libblis-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "blas_libraries: installing ${missing[*]}" >&2
  if [ "$(id -u)" -eq 0 ]; then
    sudo_cmd=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "blas_libraries: missing packages (${missing[*]}) and neither root nor sudo" >&2
    exit 1
  fi
  # Remember which alternatives point at OpenBLAS now, to restore them after the install.
  openblas_before="$(update-alternatives --get-selections 2>/dev/null | awk '$3 ~ /openblas/' || true)"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  while read -r name _mode path; do
    [ -n "${name:-}" ] || continue
    now="$(update-alternatives --query "$name" 2>/dev/null | awk '/^Value:/ {print $2}')"
    if [ "$now" != "$path" ]; then
      echo "blas_libraries: restoring alternative $name -> $path (was $now)" >&2
      "${sudo_cmd[@]}" update-alternatives --set "$name" "$path"
    fi
  done <<<"$openblas_before"
fi

# --- build ----------------------------------------------------------------------------------
mkdir -p "$build_dir"
g++ -O2 -std=c++20 -Wall -Wextra "$here/compare.cpp" -o "$build_dir/compare" \
  -lopenblas -ldnnl -lxsmm -lpthread -lrt -ldl -lm

# --- run ------------------------------------------------------------------------------------
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1
ncpu="$(nproc --all)"
cpu="${BENCH_CPU:-1}"
[ "$cpu" -lt "$ncpu" ] || cpu=$((ncpu - 1))
pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c "$cpu")

echo "# GEMM libraries, single thread, pinned to CPU $cpu of $ncpu ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
echo "Packages: $(dpkg-query -W -f='${Package} ${Version}, ' "${packages[@]:1}" libdnnl2 libblis4 2>/dev/null | sed 's/, $//')"
echo "Environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)} BLIS_ARCH_TYPE=${BLIS_ARCH_TYPE:-(unset)}"
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo 'oneDNN verbose (one matmul):'
echo '```'
DNNL_VERBOSE=1 "${pin[@]}" "$build_dir/compare" --probe | grep -E '^onednn_verbose,(info,cpu|exec)' || true
echo '```'
for r in $(seq 1 "$runs"); do
  echo
  echo "# Run $r of $runs"
  echo
  "${pin[@]}" "$build_dir/compare" "$@"
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
