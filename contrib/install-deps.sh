#!/bin/sh
# Installs the Debian/Ubuntu packages Axon needs to build and test.
#   contrib/install-deps.sh           build and test dependencies
#   contrib/install-deps.sh --peers   also Open MPI and MPICH (for contrib/bench)
set -e
packages="build-essential autoconf automake libtool pkg-config libpmix-dev libhwloc-dev procps"
case "${1:-}" in
  --peers) packages="$packages openmpi-bin libopenmpi-dev mpich libmpich-dev" ;;
  "") ;;
  *) echo "usage: $0 [--peers]" >&2; exit 2 ;;
esac

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
