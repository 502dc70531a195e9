#!/usr/bin/env bash
# Gathers, on a Debian machine that reaches the Debian package registry, every .deb that a
# headgrad build needs and that a base system with a C++ compiler lacks, into one folder
# with a manifest, so that a machine WITHOUT a registry (a GPU machine) can build headgrad
# from them: there, scripts/unpack_debs.sh unpacks them into a prefix (no root, no dpkg
# database) and prints the CMake flags; scripts/gpu_run.sh does both by itself.
#
#   bash scripts/gather_debs.sh [--out DIR] [--no-gnuplot] [--no-mpi] [--update]
#
#   --out DIR      where the .debs go (default: debs/ in the repository; it is git-ignored,
#                  so a remote run must carry it)
#   --no-gnuplot   leave out gnuplot-nox and its libraries (63 of 85 packages, 21 of 36 MiB):
#                  heads_compare then writes no PNG plots and its end-to-end test fails
#   --no-mpi       leave out OpenMPI (libopenmpi-dev, openmpi-bin and their closure, about
#                  half of the megabytes): the MPI programs and tests are then not built
#   --update       run apt-get update first (done anyway when apt has no package lists)
#
# Which packages: the list in scripts/setup.sh (its `packages=(...)` array, so the two stay
# in step) without what a GPU machine has (cmake, g++, python3: its python3 holds PyTorch,
# and an unpacked Debian python3 on PATH would hide it), plus `make` as a
# fallback generator. Their dependency closure is what apt would install on a system that
# has nothing installed (apt-get -s against an empty dpkg status, so alternatives resolve
# as apt resolves them), less the "base system": every package the closure of g++ holds
# (libc6, libstdc++6, libgcc-s1, binutils, the kernel headers, ...) and every package Debian
# marks Priority: required. Each .deb is fetched at the exact version apt chose, with
# `apt-get download` (no root needed, nothing installed here).
#
# The manifest (DIR/MANIFEST.tsv) lists package, version, architecture, file, size and
# sha256 of every .deb, after a header naming the source system and the request;
# unpack_debs.sh checks the files against it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

out="$root/debs"
with_gnuplot=1
with_mpi=1
update=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --out=*) out=$(realpath -m "${1#--out=}"); shift ;;
    --no-gnuplot) with_gnuplot=0; shift ;;
    --no-mpi) with_mpi=0; shift ;;
    --update) update=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gather_debs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "gather_debs: $*" >&2; }
for tool in apt-get apt-cache dpkg sha256sum; do
  command -v "$tool" >/dev/null || { say "needs $tool (a Debian or Ubuntu machine)"; exit 1; }
done
arch=$(dpkg --print-architecture)
if [ "$arch" != amd64 ]; then
  say "this machine is $arch; the GPU machines are amd64 (x86-64): run this on an amd64 machine"
  exit 1
fi

# The request: setup.sh's list, less what the GPU machine brings.
mapfile -t requested < <(
  sed -n '/^packages=(/,/^)/p' scripts/setup.sh | sed '1s/^packages=(//; $d' |
    tr ' ' '\n' | sed '/^$/d')
[ ${#requested[@]} -gt 0 ] || { say "found no packages=( ... ) list in scripts/setup.sh"; exit 1; }
keep=()
for p in "${requested[@]}"; do
  case "$p" in
    cmake|g++|gcc|python3) ;;                           # the GPU machine's own
    *openmpi*) [ $with_mpi = 1 ] && keep+=("$p") ;;
    gnuplot*) [ $with_gnuplot = 1 ] && keep+=("$p") ;;
    *) keep+=("$p") ;;
  esac
done
keep+=(make)
mapfile -t keep < <(printf '%s\n' "${keep[@]}" | sort -u)
say "requested: ${keep[*]}"

if [ $update = 1 ] || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ]; then
  say "apt-get update"
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$work/empty-status"
# "pkg version" for everything apt would install for "$@" on an empty system.
closure() {
  apt-get -s -o Dir::State::status="$work/empty-status" -o APT::Install-Recommends=false \
    -o APT::Install-Suggests=false install "$@" >"$work/sim.log" 2>&1 ||
    { cat "$work/sim.log" >&2; say "apt could not resolve: $*"; exit 1; }
  awk '/^Inst /{v=$3; gsub(/[()]/, "", v); print $2, v}' "$work/sim.log" | sort -u
}
closure "${keep[@]}" >"$work/wanted"
closure g++ | awk '{print $1}' >"$work/base"
# Priority: required (dpkg, tar, debconf, ...) and Essential packages count as base too.
awk '{print $1}' "$work/wanted" | xargs apt-cache show --no-all-versions 2>/dev/null |
  awk -F': ' '/^Package:/{p=$2} /^Priority: required/ || /^Essential: yes/{print p}' \
  >>"$work/base"
sort -u -o "$work/base" "$work/base"
awk 'NR==FNR{base[$1]=1; next} !($1 in base)' "$work/base" "$work/wanted" >"$work/fetch"
count=$(wc -l <"$work/fetch")
say "$count packages to fetch ($(wc -l <"$work/wanted") in the closure, the rest are base)"

mkdir -p "$out"
rm -f "$out"/*.deb "$out/MANIFEST.tsv"
(
  cd "$out"
  # apt-get download as root warns that it cannot drop privileges to _apt; harmless.
  xargs -a <(awk '{print $1 "=" $2}' "$work/fetch") apt-get download -qq 2>&1 |
    grep -v -e 'unsandboxed as root' -e '^W: ' >&2 || true
)
missing=0
{
  echo "# headgrad build dependencies as .debs, gathered by scripts/gather_debs.sh"
  echo "# source: $(. /etc/os-release && echo "$PRETTY_NAME"), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# requested: ${keep[*]}"
  echo "# base (not fetched): $(tr '\n' ' ' <"$work/base")"
  printf 'package\tversion\tarch\tfile\tbytes\tsha256\n'
  while read -r p v; do
    f=$(cd "$out" && ls -1 "${p}_"*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$f" ]; then
      say "MISSING: $p $v was not downloaded"
      missing=1
      continue
    fi
    a=$(dpkg-deb -f "$out/$f" Architecture)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$v" "$a" "$f" "$(stat -c %s "$out/$f")" \
      "$(sha256sum "$out/$f" | cut -d' ' -f1)"
  done <"$work/fetch"
} >"$out/MANIFEST.tsv"
[ $missing = 0 ] || { say "some packages are missing; see above"; exit 1; }
say "wrote $count .debs ($(du -sh "$out" | cut -f1)) and $out/MANIFEST.tsv"
say "next, on the machine without a registry: bash scripts/unpack_debs.sh --debs $out"
