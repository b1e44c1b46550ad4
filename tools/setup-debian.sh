#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what a fresh Debian 12 machine lacks to build, test and benchmark
# Hashgrid and to build its API reference (doxygen), as root. Does nothing when
# everything is already there.
set -eu
packages="cmake ninja-build g++ libtbb-dev doctest-dev libnanoflann-dev libbenchmark-dev pkg-config doxygen"
sh "$(dirname "$0")/install-missing.sh" setup-debian $packages
