#!/usr/bin/env bash
# A new user's machine: a bare Debian bookworm (debootstrap --variant=minbase) chroot, a
# fresh clone of this checkout's committed HEAD inside it, and one command run there as
# root, timed. This is how the README's two commands are checked before a change to setup,
# the build, the dependencies or the README lands:
#
#   bash scripts/fresh_machine_check.sh 'bash scripts/run.sh'
#   bash scripts/fresh_machine_check.sh 'bash scripts/test.sh'
#
# Options (before the command):
#   --keep        keep the chroot afterwards (its path is printed)
#   --log FILE    also write everything the command prints to FILE
#   --rebuild     build the cached base system anew
# Environment: HEADGRAD_FRESH_CACHE (default /var/cache/headgrad/bookworm-minbase.tar), the
# cached base system; HEADGRAD_FRESH_MIRROR, the Debian mirror (default: this machine's).
#
# Only committed work is cloned, as a new user would get it: uncommitted changes are listed
# and left out. Needs root (debootstrap, chroot, mounts). Exits with the command's status.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "fresh_machine_check: $*" >&2; exit 2; }

keep=0 log="" rebuild=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift ;;
    --log) [ $# -ge 2 ] || die "--log needs a file name"; log=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || die "expected one command in quotes, e.g. 'bash scripts/test.sh' (got $# arguments; see --help)"
command_line=$1
[ "$(id -u)" -eq 0 ] || die "needs root for debootstrap, chroot and mounts; run it with sudo"

checkout=$(cd "$(dirname "$0")/.." && pwd)
git -C "$checkout" rev-parse --verify -q HEAD >/dev/null || die "$checkout has no commit to clone"
if [ -n "$(git -C "$checkout" status --porcelain --untracked-files=no)" ]; then
  echo "fresh_machine_check: uncommitted changes are NOT in the clone (commit them to test them):" >&2
  git -C "$checkout" status --short --untracked-files=no >&2
fi

cache=${HEADGRAD_FRESH_CACHE:-/var/cache/headgrad/bookworm-minbase.tar}
build_base() {
  command -v debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  local mirror=${HEADGRAD_FRESH_MIRROR:-}
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -1)
  fi
  mirror=${mirror:-http://deb.debian.org/debian}
  local base
  base=$(mktemp -d /tmp/headgrad-base.XXXX)
  echo "fresh_machine_check: building the base system from $mirror (cached in $cache)" >&2
  debootstrap --variant=minbase bookworm "$base" "$mirror" >/dev/null
  mkdir -p "$(dirname "$cache")"
  tar -C "$base" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
  rm -rf --one-file-system "$base"
}
{ [ "$rebuild" -eq 1 ] || [ ! -s "$cache" ]; } && build_base

root=$(mktemp -d /tmp/headgrad-fresh.XXXX)
cleanup() {
  umount -l "$root/dev" "$root/proc" 2>/dev/null || true
  if [ "$keep" -eq 0 ] && ! grep -q " $root/" /proc/mounts; then
    rm -rf --one-file-system "$root"
  else
    echo "fresh_machine_check: chroot kept at $root" >&2
  fi
}
trap cleanup EXIT
tar -C "$root" -xf "$cache"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's certificate authorities too, like its resolv.conf: the network is this
# machine's, and where it reaches a registry through a proxy with its own CA, npm in the
# chroot must trust that CA as npm here does (node reads NODE_EXTRA_CA_CERTS).
host_ca=()
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/host-ca-certificates.crt"
  host_ca=(NODE_EXTRA_CA_CERTS=/etc/host-ca-certificates.crt)
fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
git clone -q "$checkout" "$root/project"
commit=$(git -C "$root/project" rev-parse --short HEAD)

echo "fresh_machine_check: bare bookworm minbase, clone of $commit, running: $command_line" >&2
start=$(date +%s)
set +e
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${host_ca[@]}" \
  /bin/bash -c "cd /project && $command_line" 2>&1 | tee "${log:-/dev/null}"
status=${PIPESTATUS[0]}
set -e
elapsed=$(( $(date +%s) - start ))
printf 'fresh_machine_check: "%s" exited %d after %dm%02ds (commit %s)\n' \
  "$command_line" "$status" $((elapsed / 60)) $((elapsed % 60)) "$commit" >&2
exit "$status"
