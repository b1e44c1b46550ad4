#!/bin/sh
# Installs Open MPI from Debian's archive for the MPI example and its tests
# (examples/mpi/, CTest label `mpi`; run as root). Does nothing when it is
# already there. Run tools/setup-debian.sh first for the compiler and CMake.
set -eu
packages="libopenmpi-dev openmpi-bin"
# With foreign architectures added, a package installed for several of them
# needs the native qualifier for dpkg -s.
native=$(dpkg --print-architecture)
missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup-mpi: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true # may exit 100 once foreign architectures are added; the install below decides
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
