#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the peer libraries profiling/bench_boxes compares against, and
# what profiling/plots/ draws the plots with, after what tools/setup-debian.sh
# installs (Debian 12, run as root). Does nothing when everything is already
# there.
#   libbullet-dev 3.24  btDbvtBroadphase        (pkg-config: bullet)
#   libfcl-dev    0.7.0 FCL collision managers  (CMake: fcl, pkg-config: fcl)
#   libbox2d-dev  2.4.1 b2DynamicTree           (CMake: box2d)
#   python3-matplotlib  profiling/plots/plot.py (PNG plots under docs/plots/)
set -eu
here=$(dirname "$0")
sh "$here/setup-debian.sh"
packages="libbullet-dev libfcl-dev libbox2d-dev pkg-config python3-matplotlib"
sh "$here/install-missing.sh" setup-bench $packages
