#!/bin/sh
# Installs what a fresh Debian 12 machine lacks to build, test and benchmark
# Hashgrid and to build its API reference (doxygen), as root. Does nothing when
# everything is already there.
set -eu
packages="cmake ninja-build g++ libtbb-dev doctest-dev libnanoflann-dev libbenchmark-dev pkg-config doxygen"
# With foreign architectures added, a package installed for several of them
# needs the native qualifier for dpkg -s.
native=$(dpkg --print-architecture)
missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup-debian: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true # may exit 100 once foreign architectures are added; the install below decides
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
