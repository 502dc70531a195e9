#!/usr/bin/env bash
# Unpacks the .debs that scripts/gather_debs.sh gathered into a prefix, on a machine that
# has no Debian package registry (a GPU machine), and prints how to build against it.
# Needs no root and touches nothing outside the prefix: each package is unpacked as
# `dpkg -x` does (dpkg-deb, or ar + tar where dpkg is absent), no maintainer script runs.
#
#   bash scripts/unpack_debs.sh [--debs DIR] [--prefix DIR] [--quiet]
#       --debs DIR     the .debs and their MANIFEST.tsv (default: debs/ in the repository)
#       --prefix DIR   where to unpack (default: .deps/ in the repository, git-ignored)
#       --quiet        print only the flags (for scripts), not the explanation
#
# What it does beyond unpacking, because the packages expect an installed system:
#   - the alternatives their postinst scripts would register (update-alternatives
#     --install, e.g. libopenblas.so, libblas.so.3 and cblas.h pointing into
#     openblas-pthread/, /usr/bin/gnuplot -> gnuplot-nox) become symlinks in the prefix;
#   - absolute symlinks inside the packages are pointed into the prefix;
#   - PREFIX/lib-gap/ gets a link, under its SONAME, to every shared library of the
#     packages that this system's dynamic loader does not already know (ldconfig -p).
#     Only that folder goes on LD_LIBRARY_PATH, so the system's own, newer libraries keep
#     serving every other program (python3, torch, cmake) and only the missing ones
#     (libopenblas.so.0, libgfortran.so.5, libzip.so.4, gnuplot's ...) come from the prefix;
#   - PREFIX/bin/ gets the programs the system lacks (gnuplot, make), gnuplot as a wrapper
#     that finds its fonts in the prefix;
#   - PREFIX/env.sh (PATH and LD_LIBRARY_PATH, to source) and PREFIX/cmake-flags.txt (one
#     CMake argument per line) record the result; both are printed at the end.
#
# The CMake flags and why each is needed:
#   -DCMAKE_PREFIX_PATH=PREFIX/usr
#       finds xtensor, xtl, xsimd, xtensor-blas, CLI11, nlohmann_json, benchmark and doctest
#       through their package configs, and OpenBLAS (FindBLAS) and libzip (find_path /
#       find_library) by file. The configs of xtensor, xtl, xsimd, xtensor-blas, CLI11,
#       nlohmann_json and benchmark compute their prefix from their own location, so they
#       point into PREFIX/usr.
#   -DCMAKE_CXX_FLAGS=-isystem PREFIX/usr/include -isystem PREFIX/usr/include/x86_64-linux-gnu
#       Debian's doctestTargets.cmake hard-codes `set(_IMPORT_PREFIX "/usr")`, so
#       doctest::doctest's include folder is /usr/include, where doctest.h is not; and
#       cblas.h (included directly by a few translation units) lives in the multiarch folder
#       PREFIX/usr/include/x86_64-linux-gnu, which the compiler only knows under /usr.
# and the environment (PREFIX/env.sh): LD_LIBRARY_PATH=PREFIX/lib-gap (the linker resolves
# libopenblas's own dependencies through it, and the built programs load them through
# it), PATH=PREFIX/bin:$PATH, and CMAKE_PREFIX_PATH and CXXFLAGS with the values above, so
# that CMake runs started by the build or the tests (the installed-package consumer test)
# find the prefix as well.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

debs="$root/debs"
prefix="$root/.deps"
quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --debs) debs=$(realpath -m "$2"); shift 2 ;;
    --debs=*) debs=$(realpath -m "${1#--debs=}"); shift ;;
    --prefix) prefix=$(realpath -m "$2"); shift 2 ;;
    --prefix=*) prefix=$(realpath -m "${1#--prefix=}"); shift ;;
    --quiet) quiet=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unpack_debs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
say() { echo "unpack_debs: $*" >&2; }

manifest="$debs/MANIFEST.tsv"
[ -f "$manifest" ] || { say "no $manifest: run scripts/gather_debs.sh on a machine with the Debian registry and bring its folder here"; exit 1; }

# --- check the files against the manifest ------------------------------------------------
count=0
while IFS=$'\t' read -r pkg version arch file bytes sha; do
  case "$pkg" in '#'*|package|'') continue ;; esac
  [ -f "$debs/$file" ] || { say "missing $debs/$file ($pkg $version)"; exit 1; }
  if command -v sha256sum >/dev/null; then
    got=$(sha256sum "$debs/$file" | cut -d' ' -f1)
    [ "$got" = "$sha" ] || { say "$file: sha256 $got, the manifest says $sha (corrupted copy?)"; exit 1; }
  fi
  count=$((count + 1))
done <"$manifest"
[ $count -gt 0 ] || { say "$manifest lists no packages"; exit 1; }

# One member of a .deb (control or data) as an uncompressed tar on stdout.
deb_tar() {  # deb_tar FILE control|data
  local deb=$1 part=$2 member
  if command -v dpkg-deb >/dev/null; then
    if [ "$part" = data ]; then dpkg-deb --fsys-tarfile "$deb"; else dpkg-deb --ctrl-tarfile "$deb"; fi
    return
  fi
  member=$(ar t "$deb" | grep "^$part\.tar" | head -n1)
  case "$member" in
    *.xz) ar p "$deb" "$member" | xz -dc ;;
    *.zst) ar p "$deb" "$member" | zstd -dc ;;
    *.gz) ar p "$deb" "$member" | gzip -dc ;;
    *.tar) ar p "$deb" "$member" ;;
    *) say "$deb: no $part.tar member"; return 1 ;;
  esac
}

stamp="$prefix/.unpacked"
want_stamp=$( (sha256sum "$manifest" 2>/dev/null || cksum "$manifest") | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  [ $quiet = 1 ] || say "$prefix already holds these $count packages"
else
  [ $quiet = 1 ] || say "unpacking $count packages from $debs into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix/bin" "$prefix/lib-gap"
  alternatives="$prefix/.alternatives"
  : >"$alternatives"
  while IFS=$'\t' read -r pkg version arch file bytes sha; do
    case "$pkg" in '#'*|package|'') continue ;; esac
    deb_tar "$debs/$file" data | tar -x -C "$prefix" --no-same-owner
    # The alternatives the package's postinst would register: "link path" pairs.
    deb_tar "$debs/$file" control | tar -xO ./postinst 2>/dev/null |
      sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' | grep 'update-alternatives.*--install' |
      awk '{
        for (i = 1; i <= NF; i++) {
          if ($i == "--install" && i + 3 <= NF) { print $(i+1), $(i+3); i += 4 }
          else if ($i == "--slave" && i + 3 <= NF) { print $(i+1), $(i+3); i += 3 }
        }
      }' >>"$alternatives" || true
  done <"$manifest"

  # Absolute symlinks point into the prefix where their target is there (else they keep
  # pointing at the system's file, e.g. libz.so -> /lib/x86_64-linux-gnu/libz.so.1).
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    case "$target" in
      /*) if [ -e "$prefix$target" ]; then
            ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$prefix$target")" "$link"
          fi ;;
    esac
  done < <(find "$prefix" -type l -print0)

  # Alternatives, as symlinks (the first registration of a link wins; Debian would pick
  # the highest priority, and these packages register each link once).
  while read -r link path; do
    case "$link$path" in *'$'*) say "skipped an alternative with a variable: $link"; continue ;; esac
    [ -e "$prefix$path" ] || continue
    [ -e "$prefix$link" ] || [ -L "$prefix$link" ] && continue
    mkdir -p "$(dirname "$prefix$link")"
    ln -s "$(realpath -m --relative-to="$(dirname "$prefix$link")" "$prefix$path")" "$prefix$link"
  done <"$alternatives"

  # Shared libraries this system lacks, under their SONAME, in lib-gap/.
  ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
  known=$("$ldconfig" -p 2>/dev/null | awk '/x86-64/{print $1}' | sort -u || true)
  while IFS= read -r -d '' lib; do
    if command -v readelf >/dev/null; then
      soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
    else
      soname=$(objdump -p "$lib" 2>/dev/null | sed -n 's/^ *SONAME *\([^ ]*\).*/\1/p')
    fi
    soname=${soname%%$'\n'*}
    [ -n "$soname" ] || continue
    if grep -qxF "$soname" <<<"$known"; then continue; fi
    [ -e "$prefix/lib-gap/$soname" ] || ln -s "$lib" "$prefix/lib-gap/$soname"
  done < <(find "$prefix/usr/lib/x86_64-linux-gnu" "$prefix/lib/x86_64-linux-gnu" \
             -maxdepth 2 -type f -name 'lib*.so*' -print0 2>/dev/null)

  # Programs the system lacks.
  # (Run, not just looked up: bash's `command -v` also names a file it cannot execute.)
  if ! gnuplot --version >/dev/null 2>&1 && [ -x "$prefix/usr/bin/gnuplot-nox" ]; then
    mkdir -p "$prefix/var/cache/fontconfig"
    cat >"$prefix/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>$prefix/usr/share/fonts</dir>
  <dir>/usr/share/fonts</dir>
  <include ignore_missing="yes">$prefix/etc/fonts/conf.d</include>
  <cachedir>$prefix/var/cache/fontconfig</cachedir>
</fontconfig>
EOF
    cat >"$prefix/bin/gnuplot" <<EOF
#!/bin/sh
# gnuplot from the unpacked prefix (scripts/unpack_debs.sh), with its libraries and fonts.
LD_LIBRARY_PATH="$prefix/lib-gap\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
FONTCONFIG_FILE="$prefix/fonts.conf"
GNUPLOT_LIB="$prefix/usr/share/gnuplot/gnuplot/5.4"
export LD_LIBRARY_PATH FONTCONFIG_FILE GNUPLOT_LIB
exec "$prefix/usr/bin/gnuplot-nox" "\$@"
EOF
    chmod +x "$prefix/bin/gnuplot"
  fi
  if ! make --version >/dev/null 2>&1 && [ -x "$prefix/usr/bin/make" ]; then
    ln -s ../usr/bin/make "$prefix/bin/make"
  fi

  # CMAKE_PREFIX_PATH and CXXFLAGS in the environment too: CMake runs started by the
  # build or the tests (the installed-package consumer test) then find the prefix as well.
  cat >"$prefix/env.sh" <<EOF
# Source this to build and run against $prefix (written by scripts/unpack_debs.sh).
export PATH="$prefix/bin:\$PATH"
export LD_LIBRARY_PATH="$prefix/lib-gap\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export CXXFLAGS="-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu\${CXXFLAGS:+ \$CXXFLAGS}"
export HEADGRAD_CORPUS="$prefix/usr/share/games/fortunes"
EOF
  printf '%s\n' "-DCMAKE_PREFIX_PATH=$prefix/usr" \
    "-DCMAKE_CXX_FLAGS=-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu" \
    >"$prefix/cmake-flags.txt"
  echo "$want_stamp" >"$stamp"
fi

if [ $quiet = 1 ]; then
  cat "$prefix/cmake-flags.txt"
  exit 0
fi
gap=$(ls "$prefix/lib-gap" | tr '\n' ' ')
tools=$(ls "$prefix/bin" | tr '\n' ' ')
cat <<EOF

Unpacked into $prefix.
Libraries this system lacked, served from $prefix/lib-gap: ${gap:-none}
Programs this system lacked, in $prefix/bin: ${tools:-none}

1. The environment (for the build and for running what it builds):

   source $prefix/env.sh
   # = export PATH="$prefix/bin:\$PATH"
   #   export LD_LIBRARY_PATH="$prefix/lib-gap\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
   #   export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
   #   export CXXFLAGS="-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu ..."
   # (the last two for CMake runs the build and the tests start themselves)

2. The CMake flags (also in $prefix/cmake-flags.txt, one per line):

   -DCMAKE_PREFIX_PATH=$prefix/usr
   "-DCMAKE_CXX_FLAGS=-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu"

   e.g.  cmake --preset gpu -DCMAKE_PREFIX_PATH=$prefix/usr \\
           "-DCMAKE_CXX_FLAGS=-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu"
EOF
