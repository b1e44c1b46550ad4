#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs, from Debian's archive, those of the given packages that are not
# installed yet (as root); does nothing when all of them are. The setup-*.sh
# scripts call it with their own name and list:
#   sh tools/install-missing.sh NAME PACKAGE...
set -eu
name=$1
shift
# With foreign architectures added, a package installed for several of them
# needs the native qualifier for dpkg -s.
native=$(dpkg --print-architecture)
missing=""
for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 || missing="$missing $p"
done
[ -n "$missing" ] || exit 0
echo "$name: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# With foreign architectures, an index may be mid-sync and make update exit
# 100 for hours; the install below is what must succeed.
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends $missing >/dev/null
