#!/bin/sh
# Installs what the `fuzz` preset needs on a fresh Debian 12 machine (as root):
# clang 14 with its libFuzzer and sanitizer runtimes, on top of setup-debian.sh.
set -eu
sh "$(dirname "$0")/setup-debian.sh"
packages="clang-14 libclang-rt-14-dev"
# With foreign architectures added, a package installed for several of them
# needs the native qualifier for dpkg -s.
native=$(dpkg --print-architecture)
missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup-fuzz: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
