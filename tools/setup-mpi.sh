#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs Open MPI from Debian's archive for the MPI example and its tests
# (examples/mpi/, CTest label `mpi`; run as root). Does nothing when it is
# already there. Run tools/setup-debian.sh first for the compiler and CMake.
set -eu
packages="libopenmpi-dev openmpi-bin"
sh "$(dirname "$0")/install-missing.sh" setup-mpi $packages
