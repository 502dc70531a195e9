#!/usr/bin/env bash
# Installs headgrad: the library, its headers and CMake package, and the Python module for
# Debian's /usr/bin/python3. Installs the Debian packages it builds with if missing, builds
# in Release (build/release) and runs `cmake --install` into PREFIX (default /usr/local,
# whose lib/python3.X/dist-packages is on Debian's python3 path; through sudo when not
# root). Then `/usr/bin/python3 -c "import headgrad"` works from any folder.
#   bash scripts/install.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
bash scripts/setup.sh --with-python
cmake --preset release >/dev/null
# What `cmake --install` installs: the library, the backends this configuration has (MPI,
# CUDA: loaded at run time, installed beside it), the mha_parity tool and the Python module.
targets=(headgrad headgrad_python)
available=$(cmake --build --preset release --target help)
for t in headgrad_mpi headgrad_cuda mha_parity; do
  grep -qE "(^|[. ])$t(:|$)" <<<"$available" && targets+=("$t")
done
cmake --build --preset release --target "${targets[@]}" -j "$(nproc)"
if [ -w "$prefix" ] || [ "$(id -u)" -eq 0 ]; then
  cmake --install build/release --prefix "$prefix" >/dev/null
else
  sudo cmake --install build/release --prefix "$prefix" >/dev/null
fi
site="$prefix/lib/python3.$(/usr/bin/python3 -c 'import sys; print(sys.version_info.minor)')/dist-packages"
echo "headgrad: installed into $prefix; the Python package is in $site/headgrad"
(cd / && PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 -c \
  "import headgrad; print('headgrad: import headgrad works (' + headgrad.__file__ + ')')")
